package stream_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// recorder keeps every event it is handed, to check the order.
type recorder struct{ got []stream.Event }

func (r *recorder) Handle(e stream.Event) { r.got = append(r.got, e) }

func result(id string, o report.Outcome) report.Result {
	return report.Result{Case: report.ParseCase(id, nil), Labels: []string{}, Outcome: o, Expected: report.Pass, Ranks: []report.Rank{}}
}

// Every sink of one Fanout sees one total order, the same for all, however
// many goroutines emit (Ginkgo's parallel specs); a sink here appends
// without a lock of its own, so a Handle run concurrently is a race the
// race detector reports.
func TestFanoutOneOrderForEverySink(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	f := stream.NewFanout(a, b)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				f.Emit(stream.WorldEvent{Event: report.WorldEvent{Kind: report.EventOther, Detail: strings.Repeat("x", i*50+j)}})
			}
		}(i)
	}
	wg.Wait()
	if len(a.got) != 400 || len(b.got) != 400 {
		t.Fatalf("sinks saw %d and %d events, want 400 each", len(a.got), len(b.got))
	}
	for i := range a.got {
		if a.got[i] != b.got[i] {
			t.Fatalf("event %d: one sink saw %v, the other %v", i, a.got[i], b.got[i])
		}
	}
}

// The live line numbers cases in the order they finish, shows the gate's
// baseline as "expected", and ignores everything but CaseDone.
func TestLiveLine(t *testing.T) {
	var buf bytes.Buffer
	l := &stream.Live{W: &buf, Total: 12, Baseline: func(r report.Result) report.Outcome {
		if r.ID() == "host.memfd.counter.sub" {
			return report.Fail
		}
		return r.Expected
	}}
	f := stream.NewFanout(l)
	f.Emit(stream.CaseStarted{ID: "host.memfd.counter.add"})
	f.Emit(stream.CaseDone{Result: result("host.memfd.counter.add", report.Pass)})
	f.Emit(stream.WorldEvent{Event: report.WorldEvent{Kind: report.EventRetired, Detail: "world 1 retired"}})
	f.Emit(stream.CaseDone{Result: result("host.memfd.counter.sub", report.Fail)})
	f.Emit(stream.Interrupted{Signal: "SIGINT"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || l.Done() != 2 {
		t.Fatalf("want 2 lines (done %d):\n%s", l.Done(), buf.String())
	}
	if !strings.HasPrefix(lines[0], "[ 1/12] ok ") || !strings.HasPrefix(lines[1], "[ 2/12] ") {
		t.Errorf("numbering: %q", lines)
	}
	if !strings.Contains(lines[1], "expected fail") {
		t.Errorf("gated line shows the spec's expectation, not the baseline's: %q", lines[1])
	}
	if want := report.LiveLine(report.Style{}, 1, 12, result("host.memfd.counter.add", report.Pass)); lines[0] != want {
		t.Errorf("line %q, want report.LiveLine's %q", lines[0], want)
	}
}

// A replayed record writes the same reports a direct WriteReports would
// have; no RunDone, no reports, and Err says so; an unwritable folder is
// an error, not silence.
func TestReportsSinkReplay(t *testing.T) {
	rs := []report.Result{result("host.memfd.counter.add", report.Pass), result("host.memfd.counter.sub", report.Incomplete)}
	sum := report.SummarizeRun(rs, "", "", "SIGTERM")
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName}), Results: rs, Summary: &sum,
		WorldEvents: []report.WorldEvent{{Time: "2026-12-04T00:00:00Z", Kind: report.EventIdleDeath, Detail: "rank 1 died idle"}}}
	dir := t.TempDir()
	rec := &recorder{}
	r := &stream.Reports{Dir: dir}
	if err := r.Err(); err == nil {
		t.Error("Err before RunDone: nil, want 'never ended'")
	}
	stream.Replay(rep, time.Unix(0, 0), rec, r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range rec.got {
		kinds = append(kinds, strings.TrimPrefix(strings.TrimPrefix(fmtType(e), "stream."), "*"))
	}
	if got := strings.Join(kinds, " "); got != "RunStarted CaseStarted CaseDone CaseStarted CaseDone WorldEvent Interrupted RunDone" {
		t.Errorf("replay order: %s", got)
	}
	for _, f := range []string{"junit.xml", "results.csv", "failures.csv", "summary.txt", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("replay wrote no %s: %v", f, err)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(page), "INTERRUPTED") {
		t.Error("report.html of an interrupted record does not say INTERRUPTED")
	}
	bad := &stream.Reports{Dir: filepath.Join(dir, "junit.xml", "no")}
	bad.Handle(stream.RunDone{Report: rep, Start: time.Unix(0, 0)})
	if bad.Err() == nil {
		t.Error("reports into a folder under a file: no error")
	}
}

func fmtType(e stream.Event) string { return fmt.Sprintf("%T", e) }

// A case's later results are CaseDone events too (issue 51 item 2): the
// live line numbers only the main pass's, says a gate's rerun in its own
// line, and leaves a perf pass to the perf work's lines.
func TestLiveNumbersTheMainPassOnly(t *testing.T) {
	var buf bytes.Buffer
	l := &stream.Live{W: &buf, Total: 2}
	f := stream.NewFanout(l)
	a := result("host.memfd.counter.a", report.Crash)
	f.Emit(stream.CaseDone{Result: a})
	again := a
	again.Rerun, again.Verdict = &report.Attempt{Outcome: report.Pass}, report.Flake
	f.Emit(stream.CaseDone{Result: again, Pass: stream.Rerun})
	f.Emit(stream.CaseDone{Result: result("host.memfd.counter.a", report.Pass), Pass: stream.PerfPass})
	f.Emit(stream.CaseDone{Result: result("host.memfd.counter.b", report.Pass)})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if l.Done() != 2 || len(lines) != 3 || lines[1] != "rerun host.memfd.counter.a: crash → pass (flake)" || !strings.Contains(lines[2], "2/2") {
		t.Errorf("done %d, lines:\n%s", l.Done(), buf.String())
	}
}

// The heatmaps sink writes the run's pictures on RunDone (the suite wrote
// them past the stream, in runDone), and says so when no RunDone came.
func TestHeatmapsSink(t *testing.T) {
	rep, err := report.Read("../report/testdata/host-results.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &stream.Heatmaps{Dir: t.TempDir()}
	if _, err := h.Written(); err == nil {
		t.Error("Written before RunDone: no error")
	}
	stream.Replay(rep, time.Unix(0, 0), h)
	files, err := h.Written()
	if err != nil || len(files) == 0 || filepath.Base(files[len(files)-1]) != "index.html" {
		t.Fatalf("written %v, %v; want the pictures and index.html last", files, err)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "heatmaps", "index.html")); err != nil {
		t.Error(err)
	}
}
