package stream_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// sinkTypes are the types of this package with a Handle method: its sinks.
func sinkTypes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "Handle" {
				continue
			}
			rt := fd.Recv.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			out = append(out, rt.(*ast.Ident).Name)
		}
	}
	sort.Strings(out)
	return out
}

// fullDisk fails every indented write with ENOSPC, as a disk with no room
// for the whole record does: the checkpoint's trimmed, compact path runs.
func fullDisk(path string, data []byte) error {
	if strings.Contains(string(data), "\n  ") {
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	return report.WriteAtomic(path, data)
}

// bulky is a result with everything a sink could cut or fill in: a long
// stderr tail, samples, kernel log lines, no baseline.
func bulky(id string, o report.Outcome) report.Result {
	r := result(id, o)
	r.Ranks = []report.Rank{{StderrTail: strings.Repeat("e", 2000)}}
	r.Metrics = map[string]report.Metric{"alloc_us": {Unit: "us", Median: 3, N: 3, Samples: []float64{1, 2, 3}}}
	for i := range 10 {
		r.KernelLog = append(r.KernelLog, fmt.Sprintf("line %d", i))
	}
	return r
}

// Issue 51 item 2: an event is a fact, and no sink writes into one. Before,
// the evidence sink answered through the event (*CaseEvidence.Note), the
// judge rewrote RunDone's report for the sinks after it (Judged), and the
// checkpoint cut a full disk's record in the RunDone report itself (Trim).
// Every sink of this package (every type with a Handle method: a new sink
// without a case here fails) is fed a run's events, the record and the
// reports on a full disk included, and each event must read the same
// after each sink as before.
func TestNoSinkWritesIntoAnEvent(t *testing.T) {
	dir := t.TempDir()
	a, b := bulky("host.memfd.counter.a", report.Crash), bulky("host.memfd.counter.b", report.Pass)
	record := func() *report.Report {
		return &report.Report{Schema: report.Schema, State: report.StateRunning, Results: []report.Result{bulky(a.ID(), a.Outcome), bulky(b.ID(), b.Outcome)}}
	}
	sinks := everySink(dir, record)
	types := sinkTypes(t)
	for _, name := range types {
		if sinks[name] == nil {
			t.Errorf("sink %s is not fed here: add it to TestNoSinkWritesIntoAnEvent", name)
		}
	}
	if len(types) < len(sinks) {
		t.Errorf("sinks found %v, fewer than the %d fed", types, len(sinks))
	}
	events := aRunsEvents(a, b, record)
	for _, name := range types {
		mk := sinks[name]
		if mk == nil {
			continue
		}
		s := mk()
		for _, e := range events {
			before, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			s.Handle(e)
			if after, _ := json.Marshal(e); string(after) != string(before) {
				t.Errorf("%s wrote into %T:\nbefore %.300s\nafter  %.300s", name, e, before, after)
			}
		}
	}
	if rep, err := report.Read(filepath.Join(dir, "results.json")); err != nil || rep.Environment.Trimmed == "" {
		t.Errorf("the full disk's record was not the trimmed one (%v): the test did not reach the trim", err)
	}
}

// everySink makes each sink of this package by its type's name, writing
// under dir on a full disk where it writes at all, so that every path that
// could cut or fill in an event (the checkpoint's trim included) runs.
func everySink(dir string, record func() *report.Report) map[string]func() stream.Sink {
	return map[string]func() stream.Sink{
		"Checkpoint": func() stream.Sink {
			return &stream.Checkpoint{Path: filepath.Join(dir, "results.json"), Stderr: io.Discard, Snapshot: record, WriteAtomic: fullDisk}
		},
		"Live": func() stream.Sink {
			return &stream.Live{W: io.Discard, Total: 2, Baseline: func(report.Result) report.Outcome { return report.Fail }}
		},
		"Heatmaps": func() stream.Sink { return &stream.Heatmaps{Dir: dir} },
		"Reports":  func() stream.Sink { return &stream.Reports{Dir: dir, WriteAtomic: fullDisk} },
		"Reserve":  func() stream.Sink { return &stream.Reserve{Dir: dir, Need: 4096, Stderr: io.Discard} },
		"WorldLog": func() stream.Sink { return &stream.WorldLog{} },
	}
}

// aRunsEvents is a run's events of every kind, in order, with a rerun, a
// perf pass, an unjudged RunDone report and an amended one: each an event
// some sink once wrote into.
func aRunsEvents(a, b report.Result, record func() *report.Report) []stream.Event {
	rerun := a
	rerun.Rerun, rerun.Verdict = &report.Attempt{Outcome: report.Pass}, report.NewFlake
	final := record()
	final.Results[1].Verdict = "" // unjudged: a judge would fill it in
	sum := report.SummarizeRun(final.Results, "", "", "")
	final.Summary = &sum
	amended := record()
	amended.Summary = &sum
	return []stream.Event{
		stream.EnvironmentKnown{Environment: report.Environment{Vendor: backends.HostName, Hostname: "h"}},
		stream.RunStarted{Total: 2},
		stream.CaseStarted{ID: a.ID()},
		stream.CaseDone{Result: a},
		stream.WorldEvent{Event: report.WorldEvent{Time: "2026-12-06T12:00:00Z", Backend: backends.HostName, Kind: "idle-death"}},
		stream.RunFault{Fault: report.RunFault{Who: "pid 4242, none of the run's ranks,", When: "between cases",
			Fault: &report.Fault{Vendor: "nvidia", Name: "Xid 31", Code: 31}, Foreign: true}},
		stream.CaseDone{Result: b},
		stream.CaseDone{Result: rerun, Pass: stream.Rerun},
		stream.CaseDone{Result: bulky(b.ID(), b.Outcome), Pass: stream.PerfPass},
		stream.Interrupted{Signal: "SIGTERM"},
		stream.RunDone{Report: final, Events: []string{"host: world ready in 0.1 s"}, Start: time.Unix(0, 0)},
		stream.ReportsNotWritten{Report: amended, Events: []string{"x"}, Start: time.Unix(0, 0)},
	}
}
