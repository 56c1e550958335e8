package suite_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
)

const abCase = "host.memfd.ab.readback"

// abRun runs abCase on the host with --ab=spec and 2 blocks: the case
// writes a word into a shared buffer and reads it back through the rank's
// read path (where the injector's corrupt-read acts), and reports a
// planted time metric (the same fixed samples on both sides). It returns
// the exit status, stdout, the record and how many times the case ran.
func abRun(t *testing.T, spec string) (int, string, *report.Report, int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(out, 0o755)
	var runs atomic.Int32
	cat := func(_ *suite.Options, be, kind string) []*harness.Case {
		return []*harness.Case{{ID: abCase, Case: report.Case{Backend: be, Kind: kind, Ranks: 2}, Expected: report.Pass, Timeout: 20 * time.Second,
			Labels: []string{"perf"},
			Run: func(c *harness.Ctx) error {
				runs.Add(1)
				m, err := c.Shared(0, 4096, true)
				if err != nil {
					return err
				}
				want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
				if err := c.Write(1, m.Bufs[1], 0, want); err != nil {
					return err
				}
				got, err := c.Read(0, m.Bufs[0], 0, 8)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, want) {
					return harness.Failf("read back %x, wrote %x", got, want)
				}
				c.Metric(report.MetricKind{Name: "planted_us", Unit: "us", Better: report.Lower}, "planted: fixed", 10, 10, 10, 10)
				return nil
			}}}
	}
	var o suite.Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := suite.Parse(fs, []string{"--backend=host", "--alloc=memfd", "--case=" + abCase, "--out=" + out, "--ab=" + spec, "--ab-blocks=2"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	run, err := suite.NewRun(&o, "", cat)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	run.Stdout = &stdout
	for _, g := range run.Plan.Groups {
		for _, c := range g.Cases {
			run.Execute(c)
		}
	}
	run.RerunPending()
	code := run.Finish()
	rep, err := report.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), rep, int(runs.Load()), out
}

// Issue 53, host: --ab=same runs the case on both sides (2 blocks: 4
// runs), PASSes and says there is no difference; results.json carries
// both stacks and the pair.
func TestABSameHostPasses(t *testing.T) {
	code, stdout, rep, runs, _ := abRun(t, "same")
	if code != 0 || runs != 4 {
		t.Fatalf("exit %d after %d runs, want 0 after 4\n%s", code, runs, stdout)
	}
	a := rep.AB
	if a == nil || a.A.Side != "A" || a.B.Side != "B" || len(a.Pairs) != 1 || a.Differs() {
		t.Fatalf("ab section: %+v", a)
	}
	p := a.Pairs[0]
	if p.ID != abCase || p.Change != report.ABSame || len(p.A.Outcomes) != 2 || len(p.B.Outcomes) != 2 ||
		len(p.Metrics) != 1 || p.Metrics[0].Verdict != report.ABNotGated || !strings.Contains(p.Repro, "--ab=same") {
		t.Fatalf("pair: %+v", p)
	}
	if !strings.Contains(rep.Summary.Line, "PASS") || !strings.Contains(rep.Summary.Line, "B: no difference from A (1 case over 2 blocks)") ||
		strings.Count(rep.Summary.Line, "A/B") != 1 || !strings.Contains(stdout, rep.Summary.Line) {
		t.Fatalf("verdict line: %s", rep.Summary.Line)
	}
}

// Issue 53, host: --ab=inject:corrupt-read:0 gives B a driver that flips
// bit 0 of every read: A passes, B fails, the run FAILs naming side B and
// the case; results.json carries both sides (A's rules none, B's the
// injector's) and B's evidence folder is B's own.
func TestABInjectHostFailsNamingB(t *testing.T) {
	code, stdout, rep, runs, out := abRun(t, "inject:corrupt-read:0")
	if code != report.ExitFail || runs != 4 {
		t.Fatalf("exit %d after %d runs, want %d\n%s", code, runs, report.ExitFail, stdout)
	}
	a := rep.AB
	if a == nil || a.Regressions != 1 || len(a.A.Inject) != 0 || strings.Join(a.B.Inject, ",") != "corrupt-read:0" {
		t.Fatalf("ab section: %+v", a)
	}
	p := a.Pairs[0]
	if p.Change != report.ABRegression || p.A.Outcome != report.Pass || p.B.Outcome != report.Fail {
		t.Fatalf("pair: %+v", p)
	}
	if r := rep.Results[0]; r.Outcome != report.Pass || len(r.Inject) != 0 {
		t.Fatalf("A's result: %s (inject %v): A must not carry B's faults", r.Outcome, r.Inject)
	}
	want := fmt.Sprintf("B: 1 regression (%s pass→fail)", abCase)
	if !strings.HasPrefix(rep.Summary.Line, "p2patomics: FAIL") || !strings.Contains(rep.Summary.Line, want) {
		t.Fatalf("verdict line %q lacks FAIL and %q", rep.Summary.Line, want)
	}
	if fi, err := os.Stat(filepath.Join(out, "b", "cases", abCase)); err != nil || !fi.IsDir() {
		t.Errorf("B's evidence folder <out>/b/cases/%s: %v", abCase, err)
	}
}

// Issue 53: a SPEC the run cannot judge is one line, exit 2 (a usage
// error), before --out is touched: Validate's (the form, the flags an A/B
// run refuses) and NewRun's (a library on a backend that loads none).
func TestABBadSpecIsUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "never")
	lib := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			lib = p
		}
	}
	for _, k := range []struct {
		args []string
		says string
	}{
		{[]string{"--ab=/no/such/libcuda.so.1"}, "neither same, inject:RULES nor a library"},
		{[]string{"--ab=inject:"}, "names no rule"},
		{[]string{"--ab=same", "--ab-blocks=1"}, "at least 2"},
		{[]string{"--ab-blocks=4"}, "needs --ab=SPEC"},
		{[]string{"--ab=same", "--repeat=2"}, "--ab with --repeat or --duration is refused"},
		{[]string{"--ab=same", "--update-expectations", "--expectations=x"}, "never records a baseline"},
		{[]string{"--ab=same", "--internal-inject=corrupt-read:0"}, "--ab with --internal-inject is refused"},
		{[]string{"--ab=" + lib}, "backend host loads none"},
	} {
		if k.args[0] == "--ab=" {
			continue
		}
		var o suite.Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.Register(fs)
		err := suite.Parse(fs, append([]string{"--backend=host", "--out=" + out}, k.args...))
		if err == nil {
			err = o.Validate()
		}
		if err == nil {
			_, err = suite.NewRun(&o, "", func(*suite.Options, string, string) []*harness.Case { return nil })
		}
		var ue *suite.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), k.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v; want a one-line usage error saying %q", k.args, err, k.says)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("--out touched by a refused SPEC: %v", err)
	}
}
