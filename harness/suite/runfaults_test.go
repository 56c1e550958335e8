package suite

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// A run whose one case passed but whose runner found a fault no case
// carries (Runner.Failures: a foreign process's GPU fault) ends FAIL, with
// the fault printed, named on the verdict line and kept in results.json;
// without it the same run passes.
func TestRunFaultFailsTheVerdict(t *testing.T) {
	for _, fault := range []string{"", "foreign GPU fault: pid 4242, none of the run's ranks, logged while host.suite.t.a ran: nvidia gpu fault Xid 31 (31)"} {
		o := &Options{Backend: backends.HostName, Out: filepath.Join(t.TempDir(), "out"), Ranks: 2, Repeat: 1}
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			t.Fatal(err)
		}
		a := &harness.Case{ID: "host.suite.t.a", Case: report.Case{Backend: backends.HostName}, Expected: report.Pass,
			Standalone: func() (report.Outcome, string) { return report.Pass, "ok" }}
		var out bytes.Buffer
		r := handMade(&Plan{Opts: o, planned: []*harness.Case{a}}, &out)
		r.Execute(a)
		if fault != "" {
			r.exec.worlds.get(backends.HostName).NoteRunFault(harness.RunFault{Who: "pid 4242, none of the run's ranks,", When: "while host.suite.t.a ran",
				Fault: &report.Fault{Vendor: "nvidia", Name: "Xid 31", Code: 31}, Foreign: true})
		}
		code := r.Finish()
		rep, err := report.Read(filepath.Join(o.Out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if fault == "" {
			if code != 0 || rep.Summary.Verdict != report.VerdictPass {
				t.Errorf("control: exit %d, %s", code, rep.Summary.Line)
			}
			continue
		}
		if code != report.ExitFail || rep.Summary.Verdict != report.VerdictFail || len(rep.Summary.RunFaults) != 1 ||
			!strings.Contains(rep.Summary.Line, fault) || !strings.Contains(out.String(), "run health: "+fault+"\n") {
			t.Errorf("with a run fault: exit %d, summary %+v, stdout:\n%s", code, rep.Summary, out.String())
		}
	}
}

// order keeps the kinds of event a run's stream carried, in its order, and
// the run faults as they came.
type order struct {
	mu     sync.Mutex
	kinds  []string
	faults []report.RunFault
}

func (o *order) Handle(e stream.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch d := e.(type) {
	case stream.RunFault:
		o.kinds = append(o.kinds, "fault")
		o.faults = append(o.faults, d.Fault)
	case stream.CaseDone:
		o.kinds = append(o.kinds, "done "+d.Result.ID())
	}
}

func (o *order) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.kinds...)
}

// Issue 51: a run fault is a typed stream event when the runner finds it,
// not a line the suite picks up when the runner closes. A fault found
// while case a runs goes onto the stream with a's facts, before a's
// CaseDone, typed as the fault book made it; results.json's
// summary.run_faults keeps its line exactly as before. Planted: the suite
// taking the runner's faults only at Close (worlds.closeAll's tally, as
// before) leaves the stream without it after a and b, and this fails.
func TestRunFaultIsAStreamEventWhenFound(t *testing.T) {
	const line = "foreign GPU fault: pid 4242, none of the run's ranks, logged while host.suite.t.a ran: nvidia gpu fault Xid 31 (31)"
	o := &Options{Backend: backends.HostName, Out: filepath.Join(t.TempDir(), "out"), Ranks: 2, Repeat: 1}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	var r *Run
	a := &harness.Case{ID: "host.suite.t.a", Case: report.Case{Backend: backends.HostName}, Expected: report.Pass,
		Standalone: func() (report.Outcome, string) {
			// The fault book finds a foreign process's fault while a runs.
			r.exec.worlds.get(backends.HostName).NoteRunFault(harness.RunFault{Who: "pid 4242, none of the run's ranks,", When: "while host.suite.t.a ran",
				Fault: &report.Fault{Vendor: "nvidia", Name: "Xid 31", Code: 31}, Foreign: true})
			return report.Pass, "ok"
		}}
	b := &harness.Case{ID: "host.suite.t.b", Case: report.Case{Backend: backends.HostName}, Expected: report.Pass,
		Standalone: func() (report.Outcome, string) { return report.Pass, "ok" }}
	r = handMade(&Plan{Opts: o, planned: []*harness.Case{a, b}}, io.Discard)
	heard := &order{}
	r.sinks.get().fan.Add(heard)
	r.Execute(a)
	r.Execute(b)
	if got, want := heard.seen(), []string{"fault", "done host.suite.t.a", "done host.suite.t.b"}; !slices.Equal(got, want) {
		t.Fatalf("the stream before the run's end: %q, want %q (the fault with a's facts)", got, want)
	}
	if f := heard.faults[0]; !f.Foreign || f.Fault == nil || f.Fault.Code != 31 || f.String() != line {
		t.Errorf("the stream's run fault %+v (%s), want the foreign Xid 31 as found", f, f)
	}
	code := r.Finish()
	if got := heard.seen(); slices.Index(got, "fault") != 0 || len(slices.DeleteFunc(got, func(k string) bool { return k != "fault" })) != 1 {
		t.Errorf("the fault went onto the stream more than once: %q", heard.seen())
	}
	rep, err := report.Read(filepath.Join(o.Out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code != report.ExitFail || !slices.Equal(rep.Summary.RunFaults, []string{line}) {
		t.Errorf("exit %d, summary.run_faults %q, want exit %d and [%q]", code, rep.Summary.RunFaults, report.ExitFail, line)
	}
}
