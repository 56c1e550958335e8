package report

import (
	"strings"
	"testing"
)

// A run whose cases all met their expectations but whose health found a
// fault no case carries (a foreign process's GPU fault) is a FAIL, and the
// line names the fault; an interrupted run stays INTERRUPTED.
func TestRunFaultsFailTheVerdict(t *testing.T) {
	results := []Result{{Case: Case{Backend: "cuda", Kind: "vmm", Spec: "a"}, Outcome: Pass, Expected: Pass}}
	s := Summarize(results, "", "out")
	if s.Verdict != VerdictPass {
		t.Fatalf("control: %s", s.Line)
	}
	fault := "foreign GPU fault: pid 4242, none of the run's ranks, logged while host.memfd.a ran: nvidia gpu fault Xid 31 (31)"
	s.FailRun([]string{fault, "another"})
	if s.Verdict != VerdictFail || s.ExitStatus != ExitFail || !strings.HasPrefix(s.Line, "p2patomics: FAIL — ") ||
		!strings.Contains(s.Line, "run health: "+fault) || !strings.Contains(s.Line, "+1 more") {
		t.Errorf("with a run fault: %s %d %q", s.Verdict, s.ExitStatus, s.Line)
	}
	in := SummarizeRun(results, "", "out", "SIGINT")
	in.FailRun([]string{fault})
	if in.Verdict != VerdictInterrupted || len(in.RunFaults) != 1 {
		t.Errorf("interrupted with a run fault: %s %v", in.Verdict, in.RunFaults)
	}
}
