package suite

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
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
