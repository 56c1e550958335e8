package suite

import (
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// tap keeps the CaseDone events a run's stream carried.
type tap struct {
	mu   sync.Mutex
	done []stream.CaseDone
}

func (t *tap) Handle(e stream.Event) {
	if d, ok := e.(stream.CaseDone); ok {
		t.mu.Lock()
		t.done = append(t.done, d)
		t.mu.Unlock()
	}
}

// passes lists the CaseDone events of id, each as its pass and outcome.
func (t *tap) passes(id string) []stream.Pass {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []stream.Pass
	for _, d := range t.done {
		if d.Result.ID() == id {
			out = append(out, d.Pass)
		}
	}
	return out
}

// listen adds a tap last to r's stream.
func listen(r *Run) *tap {
	t := &tap{}
	r.sinks.get().fan.Add(t)
	return t
}

// Issue 51 item 2: every result the record keeps comes down the stream as
// a CaseDone. The gate's rerun of a regression used to be written into
// the ledger behind the stream (its line printed by the executor, the
// checkpoint called by hand), so a sink never heard it: here the rerun is
// a CaseDone (Pass Rerun) that the ledger records as the case's result,
// with both attempts and the flake verdict.
func TestRerunIsACaseDone(t *testing.T) {
	c := seq("host.suite.t.rerun", report.Crash, report.Pass)
	r := handMade(&Plan{Opts: &Options{Backend: backends.HostName, Ranks: 2, Repeat: 1}, planned: []*harness.Case{c},
		gate: &expect.Set{Fails: map[string]report.Outcome{}, Cases: map[string]bool{c.ID: true}}}, io.Discard)
	heard := listen(r)
	r.Execute(c)
	r.RerunPending()
	if got := heard.passes(c.ID); !slices.Equal(got, []stream.Pass{stream.Main, stream.Rerun}) {
		t.Fatalf("CaseDone passes of a rerun case: %v, want [main rerun]", got)
	}
	res := resultsOf(r)[0]
	if res.Rerun == nil || res.Rerun.Outcome != report.Pass || res.Verdict != report.NewFlake {
		t.Errorf("recorded: %s, rerun %+v, verdict %s; want crash, rerun pass, new-flake", res.Outcome, res.Rerun, res.Verdict)
	}
}

// Issue 51 item 2: --perf-runs' extra passes (and the perf gate's
// re-measurements, through the same again) are CaseDone events (Pass
// PerfPass) carrying the result with the new medians; they used to change
// the ledger's map in place and call the checkpoint by hand. A real host
// world runs the case (this binary is a rank: TestMain in perfruns_test.go).
func TestPerfPassIsACaseDone(t *testing.T) {
	old := recording
	recording = perf.Recording{Gated: func(r report.Result, m report.Metric) bool { return m.Unit == "us" }, Scope: "sku none"}
	defer func() { recording = old }()
	var runs atomic.Int32
	c := &harness.Case{ID: perfCaseID, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 20 * time.Second,
		Labels: []string{"perf"},
		Run: func(cx *harness.Ctx) error {
			k := float64(10 * runs.Add(1))
			if _, err := cx.Shared(0, 4096, true); err != nil {
				return err
			}
			if k > 30 {
				return errors.New("ran more than 3 times")
			}
			cx.Metric(report.MetricKind{Name: "alloc_us", Unit: "us", Better: report.Lower}, "planted", k, k, k)
			return nil
		}}
	r := handMade(&Plan{Opts: &Options{Backend: backends.HostName, Ranks: 2, Repeat: 1, PerfRuns: 3, UpdateExpectations: true},
		planned: []*harness.Case{c}}, io.Discard)
	defer r.exec.worlds.closeAll()
	heard := listen(r)
	r.Execute(c)
	r.RerunPending()
	if got := heard.passes(c.ID); !slices.Equal(got, []stream.Pass{stream.Main, stream.PerfPass, stream.PerfPass}) {
		t.Fatalf("CaseDone passes of a --perf-runs=3 case: %v, want [main perf perf]", got)
	}
	res := resultsOf(r)[0]
	if !slices.Equal(res.PerfReruns["alloc_us"], []float64{20, 30}) {
		t.Errorf("recorded perf_reruns %v, want the extra passes' medians [20 30]", res.PerfReruns)
	}
}

const perfCaseID = "host.memfd.perf.planted_us"

// Issue 51 item 2: a case not run because the machine stopped being
// trustworthy is a CaseDone (abort) too; it used to be put in the ledger
// and printed by reaching into the live sink (liveOnly), past the stream.
func TestAbortIsACaseDone(t *testing.T) {
	a, b := seq("host.suite.t.a", report.Pass), seq("host.suite.t.b", report.Pass)
	r := handMade(&Plan{Opts: &Options{Backend: backends.HostName, Ranks: 2, Repeat: 1}, planned: []*harness.Case{a, b}}, io.Discard)
	heard := listen(r)
	r.Execute(a)
	r.exec.worlds.get(backends.HostName).Abort = "planted: the GPU was reset"
	if res := r.Execute(b); res.Outcome != report.Abort {
		t.Fatalf("after the machine stopped being trustworthy: %s, want abort", res.Outcome)
	}
	if got := heard.passes(b.ID); !slices.Equal(got, []stream.Pass{stream.Main}) {
		t.Fatalf("CaseDone passes of an aborted case: %v, want [main]", got)
	}
	if res := resultsOf(r)[1]; res.Outcome != report.Abort {
		t.Errorf("recorded %s, want abort", res.Outcome)
	}
}
