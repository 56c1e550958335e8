// Package suite plans, runs, judges and reports a selection of cases: the
// flag table, the run loop, the gate and the outputs. The catalogue of cases
// lives in package specs (the Ginkgo face), which hands it to NewRun.
package suite

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/ab"
	"p2patomics/harness/backends"
	"p2patomics/harness/perf"
	"p2patomics/harness/power"
	"p2patomics/harness/report"
	"p2patomics/internal/inject"
	"p2patomics/kernels"
	"p2patomics/wire"
)

// Options are the suite's flags.
type Options struct {
	Backend            string
	Alloc              string
	Atomics            bool
	Perf               bool
	Ranks              int
	Case               string
	Seed               int64
	Out                string
	Trace              bool
	Expectations       string
	UpdateExpectations bool
	// PerfRuns is --perf-runs: with --update-expectations, how many passes
	// of the gated perf cases (the main one and PerfRuns-1 more, each in
	// fresh worlds) perf.txt is recorded from; 0: none is recorded.
	PerfRuns           int
	AllowStackMismatch bool
	AllowNewFlakes     bool
	Repeat             int
	Duration           time.Duration
	Clocks             string
	Pairs              string
	Force              bool
	List               bool
	// FocusStrings and SkipStrings are Ginkgo's --ginkgo.focus/skip: the
	// plan applies them too (focusFilter).
	FocusStrings, SkipStrings []string
	kindFlags                 map[string]*bool
	// Inject is the driver-fault injector's rules (internal/inject): the
	// hidden flag --internal-inject, env P2PAT_INTERNAL_INJECT. Not a row
	// of FlagTable: it is for proving the suite, never for a user's run.
	Inject string
	inject []inject.Rule
	// AB is --ab: stack B of an A/B run (harness/ab; "" none), ABBlocks
	// --ab-blocks: how many times each case runs on each side. ab is the
	// SPEC as Validate read it, abLib B's library per backend (NewRun).
	AB       string
	ABBlocks int
	ab       *ab.Spec
	abLib    map[string]string
	// Power is --power: the run's power target (harness/power); power is
	// it as Validate read it.
	Power string
	power power.Target
}

// InjectFlag is the hidden flag of the driver-fault injector; its env is
// inject.Env (EnvName of it).
const InjectFlag = "internal-inject"

// flagDef is one row of the flag table. docs/FLAGS.md is written by hand;
// scripts/check-cli.sh fails when a flag the binary takes is missing there.
type flagDef struct {
	Name, Default, Usage string
}

// FlagTable is the one list of suite flags, with the one spelling of each
// default; each is also env P2PAT_<NAME>. The --<kind> shorthands are not
// rows: they follow from harness.Backends.
var FlagTable = []flagDef{
	{"backend", "auto", "auto|" + strings.Join(harness.BackendNames(), "|") + " (auto = every GPU backend that loads, else host)"},
	{"alloc", "", "allocation kind to run (a matrix row); --<kind> is shorthand"},
	{"atomics", "false", "only cases labelled atomics"},
	{"perf", "false", "only cases labelled perf"},
	{"ranks", "2", "ranks per world (minimum 2)"},
	{"case", "", "run exactly this case id"},
	{"seed", "1", "seed for generated data"},
	{"out", "./out", "directory for the reports and per-case evidence; unset: out/ at the root of the checkout the working directory is in, else ./out"},
	{"trace", "false", "record every rank's API trace, also for passing cases"},
	{"expectations", "", "gate mode: expectation folders or files, comma separated"},
	{"update-expectations", "false", "write this run as the baseline into the first --expectations folder"},
	{"perf-runs", "0", "with --update-expectations: also write perf.txt from N (at least 3) passes of the gated perf cases, each in fresh worlds (N-1 extra passes)"},
	{"allow-stack-mismatch", "false", "gate even if the baseline's stack differs from this machine's"},
	{"allow-new-flakes", "false", "gated: a case that met its baseline only on the rerun is flake (reported) instead of new-flake (fails the gate)"},
	{"repeat", "1", "run the selection N times (soak)"},
	{"duration", "0s", "repeat the selection until this much time has passed (soak)"},
	{"clocks", "1ms", "how often perf cases sample each device's clock and throttle reasons, or off"},
	{"pairs", "rounds", "rounds|alone: per-pair correctness cases run a round of disjoint pairs at once, or one pair at a time"},
	{"force", "false", "with --update-expectations: write the baseline even where it turns a regression into an expected outcome"},
	{"list", "false", "print the selected case ids, one a line, and exit"},
	{"ab", "", "A/B run: run every case on this stack (A) and on stack B, alternating, and judge B against A; B is a driver library file or folder, same, or inject:RULES (docs/GATING.md)"},
	{"ab-blocks", "3", "with --ab: how many times each case runs on each side (at least 2: a paired interval needs two blocks)"},
	{"power", "", "power target: perf=P% (every gated perf family flags a P % regression with 95 % power) and/or litmus=R (a weak outcome as rare as R per instance, or R/M per million, seen with 99.9 %), comma separated; unset: today's run sizes, the power stated on the verdict line"},
}

// EnvName is the environment variable for a flag.
func EnvName(flagName string) string {
	return "P2PAT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Register binds the options to fs. Each flag's default and usage come
// from its FlagTable row (the one place a default is spelt); TestFlagTable
// fails if a row has no field here or a default that does not parse.
func (o *Options) Register(fs *flag.FlagSet) {
	fields := o.fields()
	for _, d := range FlagTable {
		var v flag.Value
		switch p := fields[d.Name].(type) {
		case *string:
			v = (*stringValue)(p)
		case *bool:
			v = (*boolValue)(p)
		case *int:
			v = (*intValue)(p)
		case *int64:
			v = (*int64Value)(p)
		case *time.Duration:
			v = (*durationValue)(p)
		default:
			panic("suite: flag --" + d.Name + " has no Options field") // programming error: TestFlagTable
		}
		if err := v.Set(d.Default); err != nil {
			panic(fmt.Sprintf("suite: flag --%s: default %q: %v", d.Name, d.Default, err)) // programming error: TestFlagTable
		}
		fs.Var(v, d.Name, d.Usage)
	}
	fs.Var((*stringValue)(&o.Inject), InjectFlag, "internal: driver-fault injector rules (docs/FAULTS.md)")
	o.kindFlags = map[string]*bool{}
	for _, k := range allKinds() {
		o.kindFlags[k] = fs.Bool(k, false, "shorthand for --alloc="+k)
	}
}

// fields maps each flag to the Options field it sets.
func (o *Options) fields() map[string]any {
	return map[string]any{
		"backend": &o.Backend, "alloc": &o.Alloc, "atomics": &o.Atomics, "perf": &o.Perf, "ranks": &o.Ranks,
		"case": &o.Case, "seed": &o.Seed, "out": &o.Out, "trace": &o.Trace, "expectations": &o.Expectations,
		"update-expectations": &o.UpdateExpectations, "perf-runs": &o.PerfRuns, "allow-stack-mismatch": &o.AllowStackMismatch, "allow-new-flakes": &o.AllowNewFlakes,
		"repeat": &o.Repeat, "duration": &o.Duration, "clocks": &o.Clocks, "pairs": &o.Pairs,
		"force": &o.Force, "list": &o.List, "ab": &o.AB, "ab-blocks": &o.ABBlocks, "power": &o.Power,
	}
}

// flag.Value for each field type (the standard library's are unexported).
type (
	stringValue   string
	boolValue     bool
	intValue      int
	int64Value    int64
	durationValue time.Duration
)

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not true or false")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }
func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("not an integer")
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	*v = int64Value(n)
	return nil
}
func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	*v = durationValue(d)
	return err
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

func allKinds() []string {
	var ks []string
	for _, kinds := range harness.Matrix {
		ks = append(ks, kinds...)
	}
	sort.Strings(ks)
	return slices.Compact(ks)
}

// UsageError is a bad command line: one line on stderr, exit 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// Parse parses args against a copy of fs that returns errors instead of
// printing Go's usage dump, applying P2PAT_* environment defaults first.
// The same args are then safe to give to fs itself (testing's flag.Parse).
func Parse(fs *flag.FlagSet, args []string) error {
	shadow := flag.NewFlagSet("p2patomics", flag.ContinueOnError)
	shadow.SetOutput(io.Discard)
	shadow.Usage = func() {}
	fs.VisitAll(func(f *flag.Flag) { shadow.Var(f.Value, f.Name, f.Usage) })
	if err := refuseRetries(args); err != nil {
		return err
	}
	if err := envDefaults(shadow); err != nil {
		return err
	}
	if err := shadow.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp // the caller prints Help and exits 0
		}
		return usagef("%v", err)
	}
	if shadow.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", shadow.Arg(0))
	}
	if msg := emptyFlag(shadow, allKinds()); msg != "" {
		return usagef("%s", msg) // emptyvalues.go
	}
	return nil
}

// refuseRetries refuses the go test and Ginkgo flags that would run a case
// more than once or out of the suite's order.
func refuseRetries(args []string) error {
	for _, a := range args {
		// go test always passes -test.timeout (10m by default) and the
		// Ginkgo CLI --test.timeout=0 and --test.v: those are accepted
		// (TestMain stops the run, results written, before testing's
		// alarm would panic). A repeat count would run the whole
		// selection twice into one --out; the others mean nothing here.
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "test.count":
			if hasVal && strings.TrimSpace(val) == "1" {
				break
			}
			return usagef("-%s is refused: the suite runs each case once (-test.count=1 is accepted; use --repeat/--duration for soaks)", name)
		case "test.parallel", "test.cpu", "test.shuffle", "test.failfast":
			return usagef("-%s is refused: the suite keeps its own order and runs each case once (use --repeat/--duration for soaks)", name)
		case "ginkgo.flake-attempts", "ginkgo.flakeAttempts", "ginkgo.must-pass-repeatedly", "ginkgo.repeat", "ginkgo.until-it-fails", "ginkgo.untilItFails":
			// Ginkgo re-runs a failed spec's body and keeps the last
			// attempt: a crash, then a pass, read as pass. The suite's
			// own rerun (the gate's flake rule) and soak (--repeat) record
			// every attempt; Ginkgo's do not.
			return usagef("--%s is refused: Ginkgo's retries would hide the first attempt's outcome (use --repeat=N for a soak, --expectations for the gate's rerun)", name)
		case "test.fuzz":
			return usagef("-%s is refused: the suite has no fuzz targets (run go test -fuzz on the package that has them)", name)
		}
		if a == "--" {
			break
		}
	}
	return nil
}

// envDefaults sets every flag whose P2PAT_<NAME> variable is set (the
// flags of the table, the injector's hidden flag, the --<kind>
// shorthands), before the command line, which wins over them.
func envDefaults(shadow *flag.FlagSet) error {
	for _, d := range FlagTable {
		if v, ok := os.LookupEnv(EnvName(d.Name)); ok {
			if d.Default == "false" || d.Default == "true" {
				// P2PAT_TRACE=off and the like: on/off read as booleans,
				// so each variable has the one meaning of its flag.
				switch strings.ToLower(v) {
				case "on", "yes":
					v = "true"
				case "off", "no":
					v = "false"
				}
			}
			if err := shadow.Set(d.Name, v); err != nil {
				return usagef("%s=%q: %v", EnvName(d.Name), v, err)
			}
		}
	}
	if v, ok := os.LookupEnv(inject.Env); ok {
		if err := shadow.Set(InjectFlag, v); err != nil {
			return usagef("%s=%q: %v", inject.Env, v, err)
		}
	}
	for _, k := range allKinds() {
		if v, ok := os.LookupEnv(EnvName(k)); ok {
			if err := shadow.Set(k, v); err != nil {
				return usagef("%s=%q: %v", EnvName(k), v, err)
			}
		}
	}
	return nil
}

// Help describes every flag from the flag table (what --help prints).
func Help(w io.Writer) {
	fmt.Fprintln(w, "usage: specs.test [flags]   (through go tool ginkgo: ginkgo ./specs -- [flags])")
	fmt.Fprintln(w, "Runs the p2patomics suite; the last line of stdout is the verdict. Exit 0 PASS, 1 FAIL, 2 usage error, 3 reports not written, 4 INTERRUPTED (SIGINT, SIGTERM, SIGHUP, -test.timeout, --ginkgo.timeout), 5 environment (the machine could not run the binary's own Go tests: no threads or memory, a signal; --out untouched).")
	fmt.Fprintln(w, "\nflags (each also as env P2PAT_<NAME>):")
	for _, d := range FlagTable {
		name := "--" + d.Name
		if d.Default != "false" {
			name += "=" + map[bool]string{true: `""`, false: d.Default}[d.Default == ""]
		}
		fmt.Fprintf(w, "  %-26s %s\n", name, d.Usage)
	}
	fmt.Fprintf(w, "  --<kind>                   shorthand for --alloc=<kind>: %s\n", strings.Join(allKinds(), ", "))
	fmt.Fprintln(w, "\nGinkgo's own flags (--ginkgo.focus, --ginkgo.skip, --ginkgo.label-filter, --ginkgo.v, --ginkgo.json-report, ...) narrow or report the same plan; see docs/FLAGS.md.")
}

// Validate checks values that parse but make no sense.
func (o *Options) Validate() error {
	if _, ok := harness.Matrix[o.Backend]; !ok && o.Backend != "auto" {
		return usagef("--backend=%s: unknown backend (want auto or one of %s)", quote(o.Backend), strings.Join(harness.BackendNames(), ", "))
	}
	if err := o.validateAlloc(); err != nil {
		return err
	}
	if o.Ranks < 2 {
		return usagef("--ranks=%d: at least 2 ranks are needed", o.Ranks)
	}
	if o.Ranks > 64 {
		return usagef("--ranks=%d: at most 64 ranks", o.Ranks)
	}
	if o.Repeat < 1 {
		return usagef("--repeat=%d: must be at least 1", o.Repeat)
	}
	if o.Duration < 0 {
		return usagef("--duration=%s: must not be negative", o.Duration)
	}
	if o.Case != "" && !report.ValidID(o.Case) {
		return usagef("--case=%s: case ids are lowercase [a-z0-9._-]", quote(o.Case))
	}
	if err := o.checkExpectations(); err != nil {
		return err
	}
	if err := o.validatePerfRuns(); err != nil {
		return err
	}
	if o.Out == "" {
		return usagef("--out: empty directory name")
	}
	if o.Pairs != "rounds" && o.Pairs != "alone" {
		return usagef("--pairs=%s: want rounds or alone", quote(o.Pairs))
	}
	if _, err := wire.ParseClockPeriod(o.Clocks); err != nil {
		return usagef("--clocks=%s: %v", quote(o.Clocks), err)
	}
	t, err := power.Parse(o.Power)
	if err != nil {
		return usagef("%v", err)
	}
	o.power = t
	if err := o.validateAB(); err != nil {
		return err
	}
	return o.validateInject()
}

// validateAlloc checks --alloc and its shorthands (--<kind>: one at most,
// agreeing with --alloc, which it sets) against the backend's kinds.
func (o *Options) validateAlloc() error {
	var shorthand []string
	for k, set := range o.kindFlags {
		if *set {
			shorthand = append(shorthand, k)
		}
	}
	sort.Strings(shorthand)
	if len(shorthand) > 1 {
		return usagef("--%s and --%s: choose one allocation kind", shorthand[0], shorthand[1])
	}
	if len(shorthand) == 1 {
		if o.Alloc != "" && o.Alloc != shorthand[0] {
			return usagef("--alloc=%s and --%s disagree", quote(o.Alloc), shorthand[0])
		}
		o.Alloc = shorthand[0]
	}
	if o.Alloc != "" {
		if !slices.Contains(allKinds(), o.Alloc) {
			return usagef("--alloc=%s: unknown allocation kind (known: %s)", quote(o.Alloc), strings.Join(allKinds(), ", "))
		}
		if o.Backend != "auto" && !slices.Contains(harness.Matrix[o.Backend], o.Alloc) {
			return usagef("--alloc=%s: backend %s has no such kind (it has %s)", o.Alloc, o.Backend, strings.Join(harness.Matrix[o.Backend], ", "))
		}
	}
	return nil
}

// PowerTarget is --power as Validate read it (the zero Target: none).
func (o *Options) PowerTarget() power.Target { return o.power }

// validatePerfRuns: --perf-runs records perf.txt, so it needs
// --update-expectations, and at least perf.MinRuns passes (one pass's
// medians cannot tell run-to-run noise from a change).
func (o *Options) validatePerfRuns() error {
	if o.PerfRuns == 0 {
		return nil
	}
	if !o.UpdateExpectations {
		return usagef("--perf-runs=%d needs --update-expectations: it records perf.txt beside cases.txt", o.PerfRuns)
	}
	if o.PerfRuns < perf.MinRuns {
		return usagef("--perf-runs=%d: perf.txt needs at least %d passes in fresh worlds", o.PerfRuns, perf.MinRuns)
	}
	return nil
}

// validateAB reads --ab and --ab-blocks, and refuses what an A/B run
// cannot judge: a SPEC that does not parse, too few blocks, and the flags
// whose meaning would blur which stack a result came from.
func (o *Options) validateAB() error {
	if o.AB == "" {
		if o.ABBlocks != ab.DefaultBlocks {
			return usagef("--ab-blocks=%d needs --ab=SPEC", o.ABBlocks)
		}
		return nil
	}
	sp, err := ab.Parse(o.AB)
	if err != nil {
		return usagef("--ab=%s: %v", quote(o.AB), specWhy(err))
	}
	switch {
	case o.ABBlocks < 2:
		return usagef("--ab-blocks=%d: at least 2 (a paired interval needs two blocks)", o.ABBlocks)
	case o.ABBlocks > 100:
		return usagef("--ab-blocks=%d: at most 100", o.ABBlocks)
	case o.Repeat != 1 || o.Duration != 0:
		return usagef("--ab with --repeat or --duration is refused: the blocks are the A/B run's repeats (--ab-blocks)")
	case o.UpdateExpectations:
		return usagef("--ab with --update-expectations is refused: an A/B run judges B against A, never records a baseline")
	case o.Inject != "":
		return usagef("--ab with --%s is refused: injected faults on A would be judged as B's differences (use --ab=inject:RULES)", InjectFlag)
	}
	if sp.Kind == ab.Inject {
		if err := inject.CheckSymbols(o.Backend, backends.InjectSymbols(o.Backend), sp.Rules); err != nil {
			return usagef("--ab=%s: %v", quote(o.AB), err)
		}
		if o.Backend != "auto" {
			if err := inject.CheckBackend(o.Backend, backends.Lookup(o.Backend) != nil && backends.Lookup(o.Backend).SpeedRules, sp.Rules); err != nil {
				return usagef("--ab=%s: %v", quote(o.AB), err)
			}
		}
	}
	// A round's members share one body's run (harness.Round), and its
	// shares are the round's, not a world's: alternating A and B worlds
	// would hand one side's share to the other. Per-pair cases run alone.
	o.Pairs = "alone"
	o.ab = &sp
	return nil
}

// specWhy is a SPEC refusal's reason, without the sentinel's words (the
// usage line already starts with --ab=SPEC).
func specWhy(err error) string {
	return strings.TrimPrefix(err.Error(), ab.ErrBadSpec.Error()+": ")
}

// validateInject parses the injector's rules: a bad rule, a kernel the
// manifest does not have, or rules on a run that would write a baseline
// is a usage error, before --out is touched.
func (o *Options) validateInject() error {
	rules, err := inject.Parse(o.Inject)
	if err != nil {
		return usagef("--%s=%s: %v", InjectFlag, quote(o.Inject), err)
	}
	for _, r := range rules {
		if r.Kind == inject.Drop || r.Kind == inject.Stretch {
			if _, ok := kernels.Lookup(r.Target); !ok {
				return usagef("--%s: %s: no kernel of that name in the manifest", InjectFlag, r)
			}
		}
	}
	// A symbol the backend binds no call of (any backend's, with auto)
	// would never fire: a typo must not read as faults injected.
	if err := inject.CheckSymbols(o.Backend, backends.InjectSymbols(o.Backend), rules); err != nil {
		return usagef("--%s: %v", InjectFlag, err)
	}
	// A named backend that cannot apply a speed rule is refused here; with
	// auto, the rank refuses it at its hello (rank.hello).
	if o.Backend != "auto" {
		if err := inject.CheckBackend(o.Backend, backends.Lookup(o.Backend) != nil && backends.Lookup(o.Backend).SpeedRules, rules); err != nil {
			return usagef("--%s: %v", InjectFlag, err)
		}
	}
	if len(rules) > 0 && o.UpdateExpectations {
		return usagef("--%s with --update-expectations is refused: an injected run is never a baseline", InjectFlag)
	}
	o.inject = rules
	return nil
}

// InjectRules is the injector's rules as Validate read them (nil: none).
func (o *Options) InjectRules() []string {
	if len(o.inject) == 0 {
		return nil
	}
	return inject.Strings(o.inject)
}

// Settings are what every rank is told in its hello (Validate has checked
// the clock period).
func (o *Options) Settings() wire.Settings {
	set := wire.DefaultSettings
	if d, err := wire.ParseClockPeriod(o.Clocks); err == nil {
		set.ClockPeriod = d
	}
	set.Inject = o.InjectRules()
	return set
}

// Repro renders the command that re-runs one case. It starts with the
// running suite binary's absolute path (ReproBinary), so the line runs as
// printed from any directory (results.json, junit.xml, summary.txt,
// report.html, stdout).
func Repro(o *Options, backend, kind, id string, ranks int) string {
	s := fmt.Sprintf("%s --backend=%s --alloc=%s --case=%s --seed=%d", ReproBinary(), backend, kind, id, o.Seed)
	if ranks != 2 {
		s += " --ranks=" + strconv.Itoa(ranks)
	}
	if o.Pairs == "alone" {
		s += " --pairs=alone"
	}
	if o.AB != "" {
		// The case on both stacks, as the A/B run ran it.
		s += " --ab=" + shellWord(o.AB)
		if o.ABBlocks != ab.DefaultBlocks {
			s += " --ab-blocks=" + strconv.Itoa(o.ABBlocks)
		}
	}
	if rules := o.InjectRules(); len(rules) > 0 {
		// The rules are identifiers, digits and :=/,- : nothing to quote.
		s += " --" + InjectFlag + "=" + strings.Join(rules, ",")
	}
	if g := gateFlags(o.Expectations, o.UpdateExpectations, o.AllowStackMismatch, o.AllowNewFlakes); g != "" {
		s += " " + g // the gate the case was judged by (repro.go)
	}
	return s
}

// ReproBinary is how a printed repro names the suite binary: its absolute
// path, shell-quoted where it needs to be ("./specs.test" only where the
// running binary cannot be found).
func ReproBinary() string {
	p := suiteBinary()
	if p == "" {
		return "./specs.test"
	}
	return shellWord(p)
}

// shellWord quotes s for sh where it holds anything but a plain path.
func shellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:,@%", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// suiteBinary is the running suite binary's absolute path, for repro.sh.
func suiteBinary() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// checkExpectations resolves --expectations as the user typed it
// (resolvePaths: go tool ginkgo runs in specs/) and refuses an update
// with no folder to write into.
func (o *Options) checkExpectations() error {
	o.Expectations = resolvePaths(o.Expectations)
	if o.UpdateExpectations && o.Expectations == "" {
		return usagef("--update-expectations needs --expectations=DIR to write into")
	}
	return nil
}
