package suite

import (
	"os"
	"path/filepath"
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
		return &harness.Case{ID: id, Backend: backends.HostName, Expected: report.Pass,
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
