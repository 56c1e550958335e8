package suite_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/rank"
)

// TestMain makes this test binary a rank when the harness starts it as
// one: the recording tests below start real host worlds.
func TestMain(m *testing.M) {
	if rank.IsRank() {
		os.Exit(rank.Main())
	}
	os.Exit(m.Run())
}

const perfCase = "host.memfd.perf.planted_us"

// Issue 36 item 1: --perf-runs is a usage error (one line, exit 2)
// without --update-expectations, and below 3 passes.
func TestPerfRunsUsage(t *testing.T) {
	for _, k := range []struct {
		args []string
		says string
	}{
		{[]string{"--update-expectations", "--expectations=x", "--perf-runs=2"}, "perf.txt needs at least 3 passes in fresh worlds"},
		{[]string{"--update-expectations", "--expectations=x", "--perf-runs=-1"}, "perf.txt needs at least 3 passes in fresh worlds"},
		{[]string{"--perf-runs=3"}, "needs --update-expectations"},
		{[]string{"--expectations=x", "--perf-runs=3"}, "needs --update-expectations"},
	} {
		var o suite.Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.Register(fs)
		err := suite.Parse(fs, k.args)
		if err == nil {
			err = o.Validate()
		}
		var ue *suite.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), k.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v; want a one-line usage error (exit %d) saying %q", k.args, err, suite.ExitUsage, k.says)
		}
	}
	var o suite.Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := suite.Parse(fs, []string{"--update-expectations", "--expectations=x", "--perf-runs=3"}); err != nil || o.Validate() != nil || o.PerfRuns != 3 {
		t.Fatalf("--perf-runs=3 with --update-expectations: %v, PerfRuns %d", err, o.PerfRuns)
	}
}

// recordRun records a new expectation folder from one host run of
// perfCase with --update-expectations --perf-runs=n. The case's nth
// execution (1-based) reports alloc_us samples all 10·n, except that
// failOn's execution fails without the metric. It returns the folder,
// the exit status, stdout, the report and how many times the case ran.
func recordRun(t *testing.T, n, failOn int) (string, int, string, *report.Report, int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "exp")
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(out, 0o755)
	var runs atomic.Int32
	cat := func(_ *suite.Options, be, kind string) []*harness.Case {
		return []*harness.Case{{ID: perfCase, Case: report.Case{Backend: be, Kind: kind, Ranks: 2}, Expected: report.Pass, Timeout: 20 * time.Second,
			Labels: []string{"perf"},
			Run: func(c *harness.Ctx) error {
				k := int(runs.Add(1))
				if _, err := c.Shared(0, 4096, true); err != nil {
					return err
				}
				if k == failOn {
					return errors.New("planted failure of this execution")
				}
				v := float64(10 * k)
				c.Metric(report.MetricKind{Name: "alloc_us", Unit: "us", Better: report.Lower}, "planted: 10 × the execution's number", v, v, v)
				return nil
			}}}
	}
	run, err := suite.NewRun(&suite.Options{Backend: backends.HostName, Alloc: "memfd", Case: perfCase, Ranks: 2, Repeat: 1,
		Expectations: dir, UpdateExpectations: true, PerfRuns: n, Out: out}, "", cat)
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
	return dir, code, stdout.String(), rep, int(runs.Load())
}

// On the host no metric is gated (perf.Gated: GPU backends only), so
// --perf-runs=3 measures nothing more and says in one line why no
// perf.txt was written; the correctness baseline is written, exit 0.
func TestPerfRunsHostIsNotGated(t *testing.T) {
	dir, code, stdout, rep, runs := recordRun(t, 3, 0)
	if code != 0 || runs != 1 || len(rep.Timing.Worlds) != 1 {
		t.Fatalf("exit %d after %d executions in %d worlds, want 0 after 1 in 1\n%s", code, runs, len(rep.Timing.Worlds), stdout)
	}
	if !strings.Contains(stdout, "--perf-runs: perf.txt not written: no case of this run has a gated perf metric (perf.Gated: the perf cases of GPU backends; the host backend's are not gated)\n") {
		t.Errorf("stdout does not say why no perf.txt was written:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "perf.txt")); !os.IsNotExist(err) {
		t.Errorf("perf.txt written from ungated host metrics (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cases.txt")); err != nil {
		t.Errorf("the correctness baseline was not written: %v", err)
	}
}

// With the host's metric gated (the test's recording hook), --perf-runs=4
// runs the case 3 more times, each pass in a fresh world (4 executions,
// 4 worlds), and writes perf.txt with the band of the passes that passed
// (10, 20, 30 µs: the 4th is planted to fail): band 10..30 runs=3. The
// extra passes are evidence only: the run PASSes and the correctness
// baseline is the main pass's (the failed extra pass is not in fails.txt).
func TestPerfRunsRecordsFromFreshPasses(t *testing.T) {
	defer suite.SetRecording(perf.Recording{Gated: func(r report.Result, m report.Metric) bool {
		return slices.Contains(r.Labels, "perf") && m.Direction().Sign() != 0 && m.N >= perf.MinSamples
	}, Scope: "sku none"})()
	dir, code, stdout, rep, runs := recordRun(t, 4, 4)
	if code != 0 || runs != 4 || len(rep.Timing.Worlds) != 4 {
		t.Fatalf("exit %d after %d executions in %d worlds, want 0 after 4 in 4\n%s", code, runs, len(rep.Timing.Worlds), stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "perf.txt"))
	if err != nil {
		t.Fatalf("perf.txt: %v\n%s", err, stdout)
	}
	f, err := perf.Parse("perf.txt", b)
	if err != nil || len(f.Lines) != 1 {
		t.Fatalf("perf.txt (%v):\n%s", err, b)
	}
	l := f.Lines[0]
	if l.ID != perfCase || l.Metric != "alloc_us" || l.Lo != 10 || l.Hi != 30 || l.Runs != 3 || l.Op != "<=" {
		t.Errorf("perf.txt line %+v, want %s alloc_us <= band 10..30 runs=3\n%s", l, perfCase, b)
	}
	if !strings.Contains(f.Recorded, "4 runs in fresh worlds: pass 1") || f.Scope != "sku none" {
		t.Errorf("perf.txt header: recorded %q scope %q", f.Recorded, f.Scope)
	}
	res := rep.Results[0]
	if res.Outcome != report.Pass || !slices.Equal(res.PerfReruns["alloc_us"], []float64{20, 30}) {
		t.Errorf("results.json: %s, perf_reruns %v; want pass with the extra passes' medians [20 30]", res.Outcome, res.PerfReruns)
	}
	if !strings.Contains(stdout, "--perf-runs pass 4: "+perfCase+" error (left out of perf.txt for this pass)") || !strings.Contains(rep.Summary.Line, "PASS") {
		t.Errorf("the failed extra pass changed the verdict or went unsaid: %s\n%s", rep.Summary.Line, stdout)
	}
	if fails, err := os.ReadFile(filepath.Join(dir, "fails.txt")); err != nil || strings.Contains(string(fails), perfCase) {
		t.Errorf("an extra pass's failure reached the correctness baseline (%v):\n%s", err, fails)
	}
}
