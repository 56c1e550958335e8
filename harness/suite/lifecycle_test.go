package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// results.json exists before the first case, holds every finished case as
// it finished (a parent killed now loses at most the running case), and a
// final write that fails is exit 3.
func TestResultsWrittenFirstAndKeptCurrent(t *testing.T) {
	o := &Options{Backend: backends.HostName, Out: filepath.Join(t.TempDir(), "out"), Ranks: 2, Repeat: 1}
	if err := Prepare(o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.Out, "results.json")
	rep, err := report.Read(path)
	if err != nil || len(rep.Results) != 0 || rep.State != report.StateNoPlan || rep.NoPlan() == nil {
		t.Fatalf("no first results.json saying no-plan before any case: %v %+v", err, rep)
	}
	mk := func(id string) *harness.Case {
		return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName}, Expected: report.Pass,
			Standalone: func() (report.Outcome, string) { return report.Pass, "ok" }}
	}
	a, b := mk("host.suite.t.a"), mk("host.suite.t.b")
	r := handMade(&Plan{Opts: o, planned: []*harness.Case{a, b}}, nil)
	// A checkpoint that cost more than stream.CheapCheckpoint may be
	// skipped by design (a loaded machine made one cost that much): this
	// test is about what a checkpoint holds, so its clock stands still and
	// every rewrite costs nothing.
	r.sinks.get().ckpt.Now = func() time.Time { return time.Unix(0, 0) }
	r.WatchSignals()
	defer active.Store(nil)
	if rep, err = report.Read(path); err != nil || len(rep.Results) != 2 || rep.Results[0].Outcome != report.Incomplete || rep.State != report.StateRunning {
		t.Fatalf("the plan's first checkpoint: %v %+v", err, rep)
	}
	r.Execute(a)
	rep, err = report.Read(path)
	if err != nil || rep.Results[0].Outcome != report.Pass || rep.Results[1].Outcome != report.Incomplete {
		t.Fatalf("after the first case results.json says %+v (%v)", rep, err)
	}
	r.Execute(b)
	// A results.json that cannot be replaced (a non-empty folder in its
	// place) is the reports-not-written exit status, and no temporary file
	// is left behind.
	os.Remove(path)
	os.MkdirAll(filepath.Join(path, "x"), 0o755)
	if code := r.Finish(); code != ExitNoReport {
		t.Fatalf("exit %d with results.json unwritable, want %d", code, ExitNoReport)
	}
	ents, _ := os.ReadDir(o.Out)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// Issue 49 B11, S2: the own-tests child's end is read for what it is. A
// child killed by a signal, or whose runtime could not make a thread or
// reserve memory, is the environment (exit 5), never "own Go tests
// failed" (exit 1, the FAIL status) or a usage error; a --- FAIL line, a
// testing timeout or exit 1 is the tests failing. Real processes end each
// way. Planted: JudgeOwnTests calling every non-zero end a failure (the
// old rule) fails the environment rows.
func TestJudgeOwnTestsIssue49(t *testing.T) {
	for _, c := range []struct {
		script string
		env    string // a word of Environment, "" for none
		failed string // the first name in Failed, "" for none
	}{
		{"exit 0", "", ""},
		{"kill -KILL $$", "SIGKILL", ""},
		{"echo 'fakecgo: pthread_create failed: 11'; kill -ABRT $$", "pthread_create failed", ""},
		{"echo 'runtime: failed to create new OS thread (have 12 already; errno=11)'; echo 'fatal error: newosproc'; exit 2", "failed to create new OS thread", ""},
		{"echo 'fatal error: failed to reserve page summary memory'; exit 2", "page summary", ""},
		{"echo '--- FAIL: TestX (0.00s)'; echo FAIL; exit 1", "", "TestX"},
		{"echo '--- FAIL: TestP (0.00s)'; echo 'panic: boom [recovered]'; exit 2", "", "TestP"},
		{"printf 'panic: test timed out after 2m0s\\n\\trunning tests:\\n\\t\\tTestHang (2m0s)\\n'; exit 2", "", "TestHang (timed out)"},
		{"echo 'some log'; exit 1", "", "the test binary exited 1"},
		{"exit 3", "exited 3", ""},
	} {
		cmd := exec.Command("sh", "-c", c.script)
		out, _ := cmd.CombinedOutput()
		got := JudgeOwnTests(out, cmd.ProcessState)
		first := ""
		if len(got.Failed) > 0 {
			first = got.Failed[0]
		}
		if (c.env == "") != (got.Environment == "") || !strings.Contains(got.Environment, c.env) || first != c.failed {
			t.Errorf("%s: %+v, want environment %q, failed %q", c.script, got, c.env, c.failed)
		}
	}
	if got := JudgeOwnTests(nil, nil); got.Environment == "" {
		t.Errorf("a child that did not end: %+v", got)
	}
}
