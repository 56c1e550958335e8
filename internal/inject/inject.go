// Package inject is the driver-fault injector: rules that make the rank's
// launch path drop kernels and the vendor choke points (internal/binding
// for CUDA, HSA and HIP, the host backend's own syscalls) fail or skip
// calls, so the suite can be shown to notice a driver that lies.
//
// The parent parses and validates the rules (Parse) before it touches
// --out and hands them to every rank in wire.Settings; the rank installs
// them (Set) before it opens its backend, so the first vendor call is
// already behind them. With no rules installed every seam is one atomic
// load and a nil check.
//
// The rules (docs/FAULTS.md, "The driver-fault injector"):
//
//	drop:<kernel>                  the launch reports success and runs nothing
//	drop-every:<N>                 every N-th launch of the rank is dropped
//	fail:<symbol>=<code>           the call returns status <code> without being made
//	noop:<symbol>                  the call returns success without being made
//	fail-every:<symbol>=<code>/<N> every N-th call of <symbol> fails with <code>
//	copy-times:<F>                 every device-to-device copy is issued F times
//	stretch:<kernel>=<F>           the kernel's timed launches take F times as long
//	hang:<symbol>                  the call never returns (hang.go)
//	hang-at:<symbol>=<N>           the N-th call of each rank process never returns
//	corrupt-read:<bit>             every device-to-host read comes back with <bit> flipped (read.go)
//
// Each kind is one row of ruleKinds (kinds.go: name, syntax, parser, text,
// seam), which Parse and Rule.String read; TestEveryRuleKindFiresAtItsSeam
// fails for a row its seam does not act on.
//
// copy-times and stretch are the speed rules: they slow the real driver
// path inside its timed window and change no result, so a run under them
// passes every correctness check and only its metrics move (the perf gate
// and the physics floor must see it). Only backends in SpeedBackends apply
// them; the others refuse them (CheckBackend) before a case runs.
package inject

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the internal switch (also the hidden flag --internal-inject=).
const Env = "P2PAT_INTERNAL_INJECT"

// The rule kinds.
const (
	Drop      = "drop"
	DropEvery = "drop-every"
	Fail      = "fail"
	Noop      = "noop"
	FailEvery = "fail-every"
	CopyTimes = "copy-times"
	Stretch   = "stretch"
)

// MaxFactor bounds a speed rule's F: a slowdown of more than 100 times is
// a hang by another name (every perf case would run into its timeout), and
// the rules exist to plant the 1.2x-2x changes a driver upgrade brings.
const MaxFactor = 100

// ErrNotSupported is wrapped by CheckBackend's refusal.
var ErrNotSupported = errors.New("inject: rule not supported by this backend")

// CheckBackend refuses speed rules on a backend that cannot apply them
// (applies: the backend's row says it does, harness/backends SpeedRules;
// in a rank, the backend implements backend.SpeedApplier): a rule silently
// ignored would make a planted slowdown read as a healthy run. rank/cuda
// repeats cuMemcpyDtoDAsync and runs a spin kernel between the events,
// rank/host repeats memmove and spins inside the wall-clock window; HSA and
// HIP would need a device spin of their own, untested without AMD
// hardware, so they refuse the rules instead of ignoring them.
func CheckBackend(backend string, applies bool, rules []Rule) error {
	for _, r := range rules {
		if r.Speed() && !applies {
			return fmt.Errorf("%w: %s on backend %s, which does not apply speed rules", ErrNotSupported, r, backend)
		}
	}
	return nil
}

// Rule is one parsed rule.
type Rule struct {
	Kind string
	// Target is the kernel (drop) or the symbol (fail, noop, fail-every);
	// empty for drop-every.
	Target string
	// Code is the status a fail or fail-every returns.
	Code int64
	// Every is N of drop-every and fail-every.
	Every uint64
	// Factor is F of copy-times and stretch (1 < F <= MaxFactor).
	Factor float64
	// Bit is corrupt-read's bit of the reply's first word (read.go).
	Bit uint8
}

// String is the rule as Parse reads it back (its row's format).
func (r Rule) String() string {
	if rk, ok := kindOf(r.Kind); ok {
		return rk.format(r)
	}
	return r.Kind + ":" + r.Target
}

func factorText(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Launch reports whether the rule acts on the launch path (drops).
func (r Rule) Launch() bool { return r.Kind == Drop || r.Kind == DropEvery }

// Speed reports whether the rule is a speed rule (copy-times, stretch).
func (r Rule) Speed() bool { return r.Kind == CopyTimes || r.Kind == Stretch }

// key is what two rules must not share: a second copy-times, or a second
// stretch of one kernel, would leave which F applies to the order given.
func (r Rule) key() string {
	switch r.Kind {
	case CopyTimes:
		return CopyTimes
	case Stretch:
		return Stretch + ":" + r.Target
	}
	return r.String()
}

// ErrRule is wrapped by every Parse error.
var ErrRule = errors.New("inject: bad rule")

// Parse reads a comma-separated list of rules; "" is none. Every error
// names the rule it could not read and wraps ErrRule.
func Parse(s string) ([]Rule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Rule
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		r, err := parseOne(f)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrRule, f, err)
		}
		if seen[r.key()] {
			return nil, fmt.Errorf("%w %q: given twice", ErrRule, f)
		}
		seen[r.key()] = true
		out = append(out, r)
	}
	return out, nil
}

// parseOne reads one rule by its kind's row (kinds.go).
func parseOne(f string) (Rule, error) {
	kind, arg, ok := strings.Cut(f, ":")
	if !ok {
		return Rule{}, errors.New("want kind:argument (" + kindNames() + ")")
	}
	rk, ok := kindOf(kind)
	if !ok {
		return Rule{}, fmt.Errorf("unknown kind %q (want %s)", kind, kindNames())
	}
	return rk.parse(kind, arg)
}

// factor reads a speed rule's F: a finite number above 1 (1 would plant
// nothing) and at most MaxFactor.
func factor(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f <= 1 || f > MaxFactor {
		return 0, fmt.Errorf("F %q: want a number above 1 and at most %d", s, MaxFactor)
	}
	return f, nil
}

func every(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("N %q: want a whole number of at least 1", s)
	}
	return n, nil
}

// name reports whether s is a C identifier (a symbol or a kernel name).
func name(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Strings is the rules as text, in order (results.json's environment).
func Strings(rules []Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out
}

// installed is one process's rules with their counters: the run's shared
// ones (counters.go, SetShared) in a rank, process-local ones (Set) in a
// test.
type installed struct {
	rules    []Rule
	counts   []*atomic.Uint64 // per rule: calls (or launches) it has seen
	fires    []*atomic.Uint64 // per rule: times it acted
	launches *atomic.Uint64
}

// fired counts one act of rule i.
func (in *installed) fired(i int) { in.fires[i].Add(1) }

var active atomic.Pointer[installed]

// Set installs rules in this process with counters of its own, replacing
// any before; nil removes them. A rank installs the run's shared counters
// instead (SetShared), so that fail-every and drop-every count across
// every rank of the run.
func Set(rules []Rule) {
	if len(rules) == 0 {
		active.Store(nil)
		return
	}
	in := &installed{rules: rules, launches: new(atomic.Uint64)}
	for range rules {
		in.counts = append(in.counts, new(atomic.Uint64))
		in.fires = append(in.fires, new(atomic.Uint64))
	}
	active.Store(in)
}

// Fired is how many times each installed rule acted in this process (its
// counters: with SetShared, the whole run's so far); nil with none.
func Fired() []uint64 {
	in := active.Load()
	if in == nil {
		return nil
	}
	out := make([]uint64, len(in.rules))
	for i := range in.rules {
		out[i] = in.fires[i].Load()
	}
	return out
}

// Active is the installed rules (nil when none).
func Active() []Rule {
	if in := active.Load(); in != nil {
		return in.rules
	}
	return nil
}

// DropLaunch is the launch seam: it reports whether this launch of kernel
// is to be dropped (reported as done, nothing run) and the rule that says so.
func DropLaunch(kernel string) (Rule, bool) {
	in := active.Load()
	if in == nil {
		return Rule{}, false
	}
	n := in.launches.Add(1)
	for i, r := range in.rules {
		switch {
		case r.Kind == Drop && r.Target == kernel, r.Kind == DropEvery && n%r.Every == 0:
			in.fired(i)
			return r, true
		}
	}
	return Rule{}, false
}

// Call is the choke-point seam, asked before a call is made under any of
// names (the name actually bound and the table's names for the entry
// point). A rule's symbol matches a name exactly or without its version
// suffix (cuMemGetInfo matches cuMemGetInfo_v2). skip says the call is not to be made:
// it returns code instead (0 for a noop). Every rule naming the symbol
// counts the call, so fail-every's N-th is the N-th call made or skipped.
func Call(bound string, names ...string) (code int64, skip bool, rule Rule) {
	in := active.Load()
	if in == nil {
		return 0, false, Rule{}
	}
	for i, r := range in.rules {
		if r.Launch() || r.Speed() || r.Hangs() || (!matchName(r.Target, bound) && !matches(r.Target, names)) {
			continue
		}
		n := in.counts[i].Add(1)
		switch r.Kind {
		case Fail:
			in.fired(i)
			return r.Code, true, r
		case Noop:
			in.fired(i)
			return 0, true, r
		case FailEvery:
			if n%r.Every == 0 {
				in.fired(i)
				return r.Code, true, r
			}
		}
	}
	return 0, false, Rule{}
}

func matches(target string, names []string) bool {
	for _, n := range names {
		if matchName(target, n) {
			return true
		}
	}
	return false
}

func matchName(target, n string) bool {
	if n == target {
		return true
	}
	rest, ok := strings.CutPrefix(n, target+"_v")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// CopyPlan is the copy seam: how a device-to-device copy of n bytes is to
// be issued under copy-times:F, inside the copy's timed window: whole
// copies of all n bytes (F's whole part) and one more of the first extra
// bytes (F's fraction of n, down to a multiple of 16, the copy kernels'
// granule). Every copy writes the same bytes to the same place, so the
// destination ends as one copy leaves it. ok is false (1 copy, 0 extra)
// without the rule.
func CopyPlan(n uint64) (whole int, extra uint64, rule Rule, ok bool) {
	in := active.Load()
	if in == nil {
		return 1, 0, Rule{}, false
	}
	for i, r := range in.rules {
		if r.Kind == CopyTimes {
			in.fired(i)
			w := math.Floor(r.Factor)
			return int(w), uint64((r.Factor-w)*float64(n)) &^ 15, r, true
		}
	}
	return 1, 0, Rule{}, false
}

// StretchOf is the stretch seam: the factor F by which the timed launches
// of kernel are to be stretched (the backend adds (F-1) times the
// launch's own measured duration of real waiting inside its timed
// window), and the rule; ok is false without one.
func StretchOf(kernel string) (f float64, rule Rule, ok bool) {
	in := active.Load()
	if in == nil {
		return 1, Rule{}, false
	}
	for i, r := range in.rules {
		if r.Kind == Stretch && r.Target == kernel {
			in.fired(i)
			return r.Factor, r, true
		}
	}
	return 1, Rule{}, false
}
