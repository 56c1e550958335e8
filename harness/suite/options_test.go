package suite

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	"p2patomics/harness/backends"
)

func parseWith(t *testing.T, env map[string]string, args ...string) (*Options, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	fs.String("test.timeout", "", "")
	fs.String("test.count", "", "")
	fs.String("test.shuffle", "", "")
	fs.Bool("test.failfast", false, "")
	fs.Bool("test.v", false, "")
	if err := Parse(fs, args); err != nil {
		return &o, err
	}
	return &o, o.Validate()
}

// Issue 18 items 9 and 13: P2PAT_TRACE has --trace's one meaning (and
// takes on/off); testing's timeout and count are refused in one line; odd
// values are quoted, never echoed raw.
func TestOptionsIssue18(t *testing.T) {
	o, err := parseWith(t, map[string]string{"P2PAT_TRACE": "off"})
	if err != nil || o.Trace {
		t.Fatalf("P2PAT_TRACE=off: trace=%v err=%v", o.Trace, err)
	}
	o, err = parseWith(t, map[string]string{"P2PAT_TRACE": "on"})
	if err != nil || !o.Trace {
		t.Fatalf("P2PAT_TRACE=on: trace=%v err=%v", o.Trace, err)
	}
	for _, a := range []string{"--test.count=2", "-test.shuffle=on", "-test.failfast"} {
		if _, err := parseWith(t, nil, a); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", a, err)
		}
	}
	// Issue 29: what go test (-test.timeout=10m0s, -test.count=1) and the
	// Ginkgo CLI (--test.timeout=0, --test.v) always pass is accepted.
	for _, a := range []string{"-test.timeout=10m0s", "--test.timeout=0", "-test.count=1", "--test.v"} {
		if _, err := parseWith(t, nil, a); err != nil {
			t.Errorf("%s: %v, want accepted", a, err)
		}
	}
	for _, a := range []string{"--backend=a\nb\x1b[31m", "--case=x\ny", "--alloc=\x1b[2J"} {
		_, err := parseWith(t, nil, a)
		if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%q: %q, want one quoted line", a, err)
		}
	}
}

// TestFlagTable: every row of the flag table is registered with its
// default and usage, sets a field, and every field has a row; a row whose
// default does not parse, or that names no field, is refused at Register.
func TestFlagTable(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	for _, d := range FlagTable {
		f := fs.Lookup(d.Name)
		if f == nil || f.DefValue != d.Default || f.Usage != d.Usage {
			t.Errorf("--%s registered as %+v, the table says default %q", d.Name, f, d.Default)
		}
	}
	if len(o.fields()) != len(FlagTable) {
		t.Errorf("%d Options fields bound to flags, %d table rows", len(o.fields()), len(FlagTable))
	}
	if o.Backend != "auto" || o.Ranks != 2 || o.Seed != 1 || o.Out != "./out" || o.Repeat != 1 || o.Clocks != "1ms" || o.Duration != 0 || o.Trace {
		t.Errorf("defaults not applied: %+v", o)
	}
	if err := fs.Parse([]string{"--ranks=3", "--trace", "--duration=2s"}); err != nil || o.Ranks != 3 || !o.Trace || o.Duration != 2*time.Second {
		t.Errorf("parse: %v, %+v", err, o)
	}
	for _, bad := range []flagDef{{"ranks", "two", "x"}, {"no-such-field", "", "x"}} {
		saved := FlagTable
		FlagTable = append(slices.Clone(saved), bad)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("row %+v accepted", bad)
				}
			}()
			var o Options
			o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
		}()
		FlagTable = saved
	}
}

// TestBackendNames: the derived lists hold every backend of the one list.
func TestBackendNames(t *testing.T) {
	names := harness.BackendNames()
	if len(names) != len(harness.Backends) || len(harness.Matrix) != len(names) {
		t.Fatalf("names %v, matrix %v", names, harness.Matrix)
	}
	for _, b := range harness.Backends {
		if !slices.Contains(names, b.Name) || !strings.Contains(FlagTable[0].Usage, b.Name) {
			t.Errorf("backend %s missing from the names or the --backend usage", b.Name)
		}
		var o Options
		o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
		o.Backend = b.Name
		if err := o.Validate(); err != nil {
			t.Errorf("--backend=%s refused: %v", b.Name, err)
		}
	}
	if slices.Contains(harness.GPUBackends(), backends.HostName) {
		t.Error("auto would probe host as a GPU backend")
	}
}

// Issue 24 item 2: the injector's switch is validated with the flags (a
// usage error before --out is touched), refused on a baseline-writing run,
// taken from P2PAT_INTERNAL_INJECT, handed to the ranks and the repro.
func TestInjectOption(t *testing.T) {
	o, err := parseWith(t, nil, "--internal-inject=drop:fill_u64_plain_dev,fail:memfd_create=12")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.Settings().Inject, ","); got != "drop:fill_u64_plain_dev,fail:memfd_create=12" {
		t.Errorf("settings carry %q", got)
	}
	if rp := Repro(o, backends.HostName, "memfd", "x", 2); !strings.Contains(rp, "--internal-inject=drop:fill_u64_plain_dev,fail:memfd_create=12") {
		t.Errorf("repro %q does not carry the rules", rp)
	}
	t.Run("env", func(t *testing.T) {
		o, err := parseWith(t, map[string]string{"P2PAT_INTERNAL_INJECT": "noop:mprotect"})
		if err != nil || strings.Join(o.InjectRules(), ",") != "noop:mprotect" {
			t.Errorf("env: %v %v", o.InjectRules(), err)
		}
	})
	for _, bad := range [][]string{
		{"--internal-inject=drop:no_such_kernel"},
		{"--internal-inject=fail:x"},
		{"--internal-inject=drop-every:0"},
		{"--internal-inject=drop-every:2", "--update-expectations", "--expectations=/tmp/x"},
		{"--internal-inject=stretch:no_such_kernel=2"},
		{"--internal-inject=copy-times:2", "--backend=hsa"},
		{"--internal-inject=copy-times:2", "--backend=hip"},
	} {
		_, err := parseWith(t, nil, bad...)
		var ue *UsageError
		if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line usage error", bad, err)
		}
	}
	for _, good := range [][]string{
		{"--internal-inject=copy-times:1.2,stretch:spread_u64_relaxed_sys=2", "--backend=cuda"},
		{"--internal-inject=copy-times:2", "--backend=host"},
		{"--internal-inject=copy-times:2"}, // auto: the rank checks its own backend
	} {
		if _, err := parseWith(t, nil, good...); err != nil {
			t.Errorf("%v: %v", good, err)
		}
	}
	if o, _ := parseWith(t, nil); o.Settings().Inject != nil || o.InjectRules() != nil {
		t.Errorf("no switch, yet rules %v", o.Settings().Inject)
	}
}

// Issue 26 items 1 and 8: Ginkgo's retry flags and testing's -test.fuzz are
// refused in one line before anything runs (at a44624c flake-attempts
// turned a crash into pass, and -test.fuzz printed Go's flag dump).
func TestRetryAndFuzzFlagsRefused(t *testing.T) {
	for _, a := range []string{"--ginkgo.flake-attempts=2", "-ginkgo.flakeAttempts=3", "--ginkgo.must-pass-repeatedly=2", "-test.fuzz=X"} {
		_, err := parseWith(t, nil, a)
		if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying it is refused", a, err)
		}
	}
}

// Issue 26 item 8: Ginkgo settings and testing's output files that would
// fail late, or in many coloured lines, are one line before --out.
func TestPreflight(t *testing.T) {
	good := types.NewDefaultSuiteConfig()
	if err := CheckGinkgo(good); err != nil {
		t.Fatalf("default config refused: %v", err)
	}
	bad := map[string]func(*types.SuiteConfig){
		"parallel.process": func(s *types.SuiteConfig) { s.ParallelProcess = 2 },
		"parallel.total":   func(s *types.SuiteConfig) { s.ParallelTotal = 0 },
		"flake-attempts":   func(s *types.SuiteConfig) { s.FlakeAttempts = 2 },
		"must-pass":        func(s *types.SuiteConfig) { s.MustPassRepeatedly = 2 },
		"focus-file":       func(s *types.SuiteConfig) { s.FocusFiles = []string{"x\x1b[31m:("} },
	}
	for name, f := range bad {
		s := types.NewDefaultSuiteConfig()
		f(&s)
		if err := CheckGinkgo(s); err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%s: %q, want one plain line", name, err)
		}
	}
	dir := t.TempDir()
	for _, k := range []struct {
		name, value string
		ok          bool
	}{
		{"test.memprofile", "/nonexistent/x", false},
		{"test.blockprofile", "/dev/full", false},
		{"test.mutexprofile", dir, false},
		{"test.testlogfile", filepath.Join(dir, "log"), true},
		{"test.cpuprofile", "/dev/null", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		for _, n := range profileFlags {
			fs.String(n, "", "")
		}
		fs.String("test.outputdir", "", "")
		fs.Set(k.name, k.value)
		err := CheckTestFlags(fs)
		if (err == nil) != k.ok || (err != nil && strings.Contains(err.Error(), "\n")) {
			t.Errorf("-%s=%s: %v (want ok=%v)", k.name, k.value, err, k.ok)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "log")); err == nil {
		t.Errorf("the probe left its file behind")
	}
}

// testingFlags is a flag set with testing's selection flags and a suite
// flag, parsed from args as testing's flag.Parse would.
func testingFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, n := range []string{"test.run", "test.skip", "test.list", "test.timeout"} {
		fs.String(n, "", "")
	}
	fs.Bool("test.paniconexit0", false, "")
	fs.String("backend", "auto", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// Issue 49 B1, S1 and -test.list: with a suite flag, a -test.run/-test.skip
// that leaves out TestSpecs (one stray character: TestSpecs. selects
// TestSpecsDirFromAnywhere), -test.list, or a -test.timeout too short to
// run is one line, exit 2, before --out is touched (at 6615a8b each was
// go's PASS, exit 0, the previous results.json in --out, or a panic after
// --out was rotated). Without one they are go test's: go test -run=X and
// go test -list run as in every package. Planted: SelectsTestSpecs
// returning true (the old "selects anything" rule) fails the B1 rows.
func TestTestSelectionIssue49(t *testing.T) {
	for _, c := range []struct {
		args    []string
		env     bool
		want    Selection
		refused string // a word of the refusal, "" when accepted
	}{
		{[]string{"--backend=host"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.run=TestSpecs"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.run=^TestSpecs$/x"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.skip=TestPlantedFailure"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.timeout=10m0s"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.timeout=0"}, false, SelectSuite, ""},
		{[]string{"--backend=host", "-test.run=TestSpecs."}, false, 0, "leaves out TestSpecs"},
		{[]string{"--backend=host", "-test.run=TestLabelsAreDeclared"}, false, 0, "leaves out TestSpecs"},
		{[]string{"--backend=host", "-test.skip=TestSpecs"}, false, 0, "leaves out TestSpecs"},
		{[]string{"--backend=host", "-test.skip=."}, false, 0, "leaves out TestSpecs"},
		{[]string{"-test.skip=."}, true, 0, "a P2PAT_ variable"},
		{[]string{"--backend=host", "-test.run=(("}, false, 0, "not a pattern"},
		{[]string{"--backend=host", "-test.list=.*"}, false, 0, "--list prints the case ids"},
		{[]string{"--backend=host", "-test.timeout=1ms"}, false, 0, "at least 10s"},
		{[]string{"--backend=host", "-test.timeout=9s"}, false, 0, "at least 10s"},
		{[]string{"-test.run=TestLabels"}, false, SelectGoTests, ""},
		{[]string{"-test.run=TestLabels", "-test.paniconexit0"}, true, SelectGoTests, ""},
		{[]string{"-test.list=."}, false, SelectList, ""},
	} {
		sel, err := CheckTestSelection(testingFlags(t, c.args...), c.env)
		switch {
		case c.refused == "" && (err != nil || sel != c.want):
			t.Errorf("%v (env %v): %v %v, want selection %v", c.args, c.env, sel, err, c.want)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%v (env %v): %v, want one line saying %q", c.args, c.env, err, c.refused)
		}
	}
}

// Issue 49 B9: --ginkgo.focus-file/--ginkgo.skip-file that select no spec
// are one line before --out is touched (at 6615a8b: 134 "pass →
// incomplete" regressions, exit 1, the last good run rotated out); one
// that selects the suite's file runs it. Planted: CheckFileFilters
// returning nil fails the first two rows.
func TestCheckFileFilters(t *testing.T) {
	loc := types.CodeLocation{FileName: "/src/p2patomics/specs/suite_test.go", LineNumber: 40}
	for _, c := range []struct {
		focus, skip []string
		ok          bool
	}{
		{[]string{"nonexist.go"}, nil, false},
		{nil, []string{"specs"}, false},
		{[]string{"suite_test.go:1-30"}, nil, false},
		{[]string{"suite_test.go"}, nil, true},
		{[]string{"specs/suite_test.go:40"}, nil, true},
		{nil, []string{"other_test.go"}, true},
		{nil, nil, true},
	} {
		s := types.NewDefaultSuiteConfig()
		s.FocusFiles, s.SkipFiles = append(c.focus, c.focus...), c.skip // Ginkgo's flags hold each value twice
		err := CheckFileFilters(s, loc)
		if (err == nil) != c.ok || (err != nil && (strings.Contains(err.Error(), "\n") || strings.Count(err.Error(), "nonexist.go") > 1)) {
			t.Errorf("focus %v skip %v: %v, want ok=%v in one line", c.focus, c.skip, err, c.ok)
		}
	}
}
