package stream_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// clock is a hand-turned clock: every reading advances it by step, so a
// rewrite (two readings) costs step.
type clock struct {
	t    time.Time
	step time.Duration
}

func (c *clock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// The cost model (without a journal): cheap rewrites happen on every case; once one costs more
// than CheapCheckpoint the next waits until ten times that cost has
// passed; after Interrupted none happens at all.
func TestCheckpointCostModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	var results []report.Result
	writes := 0
	clk := &clock{t: time.Unix(1000, 0), step: time.Millisecond}
	// The cost model is the whole rewrites' (a journal line costs one
	// result): NoJournal rewrites whole, as before the journal.
	c := &stream.Checkpoint{Path: path, Stderr: os.Stderr, Now: clk.now, NoJournal: true, Snapshot: func() *report.Report {
		writes++
		return &report.Report{Schema: report.Schema, State: report.StateRunning, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName}), Results: results}
	}}
	f := stream.NewFanout(c)
	done := func(id string) {
		results = append(results, result(id, report.Pass))
		f.Emit(stream.CaseDone{Result: results[len(results)-1]})
	}
	done("host.memfd.counter.a")
	done("host.memfd.counter.b")
	if writes != 2 {
		t.Fatalf("cheap rewrites: %d of 2 cases written", writes)
	}
	if rep, err := report.Read(path); err != nil || len(rep.Results) != 2 {
		t.Fatalf("after two cases results.json reads %v, %+v", err, rep)
	}
	clk.step = 100 * time.Millisecond // a rewrite now costs 100 ms
	done("host.memfd.counter.c")      // written, costing 100 ms
	done("host.memfd.counter.d")      // 100 ms since: < 1 s, skipped
	if writes != 3 {
		t.Fatalf("an expensive rewrite was not skipped: %d writes", writes)
	}
	clk.t = clk.t.Add(time.Second)
	done("host.memfd.counter.e") // ten times the cost has passed
	if writes != 4 {
		t.Fatalf("after ten times the cost no rewrite: %d writes", writes)
	}
	clk.step = time.Millisecond
	clk.t = clk.t.Add(time.Hour)
	f.Emit(stream.Interrupted{Signal: "SIGTERM"})
	done("host.memfd.counter.f")
	c.Write()
	if writes != 4 {
		t.Errorf("a rewrite after Interrupted: %d writes", writes)
	}
}

// A failed rewrite says one line once; a full disk goes to NoSpace and is
// not said here; a nil snapshot (the run finished) writes nothing.
func TestCheckpointFailures(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "results.json")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var full []error
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName}), Results: []report.Result{}}
	c := &stream.Checkpoint{Path: blocked, Stderr: &stderr, Snapshot: func() *report.Report { return rep }}
	c.Write()
	c.Write()
	if n := strings.Count(stderr.String(), "\n"); n != 1 || !strings.Contains(stderr.String(), "rewritten at the end") {
		t.Errorf("a failing rewrite said %d lines: %q", n, stderr.String())
	}
	stderr.Reset()
	c2 := &stream.Checkpoint{Path: blocked, Stderr: &stderr, Snapshot: func() *report.Report { return rep },
		NoSpace: func(err error) bool { full = append(full, err); return true }}
	c2.Write()
	if len(full) != 1 || stderr.Len() != 0 {
		t.Errorf("NoSpace handled %d errors, stderr %q", len(full), stderr.String())
	}
	none := filepath.Join(dir, "none.json")
	c3 := &stream.Checkpoint{Path: none, Stderr: &stderr, Snapshot: func() *report.Report { return nil }}
	c3.Handle(stream.CaseDone{})
	if _, err := os.Stat(none); err == nil {
		t.Error("a nil snapshot was written")
	}
}
