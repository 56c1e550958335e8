package expect_test

import (
	"strings"
	"testing"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// TestJudgeReportKeepsAB: a recorded A/B run re-judged (p2preport,
// report.html from a record) still fails for B's regression and its line
// names side B; A's results alone would PASS.
func TestJudgeReportKeepsAB(t *testing.T) {
	rep := &report.Report{Schema: report.Schema, Results: []report.Result{
		{Case: report.ParseCase("host.memfd.ab.readback", nil), Outcome: report.Pass, Expected: report.Pass, Ranks: []report.Rank{}}},
		AB: &report.AB{Spec: "inject:corrupt-read:0", Blocks: 2, Regressions: 1, Pairs: []report.ABPair{{ID: "host.memfd.ab.readback",
			Change: report.ABRegression, A: report.ABSide{Outcome: report.Pass}, B: report.ABSide{Outcome: report.Fail}}}}}
	if err := expect.JudgeReport(rep, expect.Rejudge{}); err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s.ExitStatus != report.ExitFail || !strings.HasPrefix(s.Line, "p2patomics: FAIL") ||
		!strings.HasSuffix(s.Line, "A/B B: 1 regression (host.memfd.ab.readback pass→fail)") {
		t.Fatalf("re-judged: exit %d %q", s.ExitStatus, s.Line)
	}
}
