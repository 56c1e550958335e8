package report

import (
	"strings"
	"testing"
)

// Issue 49 U20: a run whose broken path made a crash streak judges the
// cases after it without running them (outcome not-run); its verdict line
// counted all of them as regressions ("FAIL — 123 regressions"), reading
// as 123 cases that ran and broke. The line now counts those never run,
// with the reason they share.
func TestVerdictLineCountsCasesNeverRun(t *testing.T) {
	const streak = "host.memfd.counter.a"
	judged := &JudgedFrom{Case: streak, Outcome: Crash}
	res := []Result{
		{Case: ParseCase(streak, nil), Outcome: Crash, Expected: Pass, Verdict: Regression},
		{Case: ParseCase("host.memfd.counter.b", nil), Outcome: NotRunOutcome, Expected: Pass, Verdict: Regression, JudgedFrom: judged},
		{Case: ParseCase("host.memfd.counter.c", nil), Outcome: NotRunOutcome, Expected: Pass, Verdict: Regression, JudgedFrom: judged},
		{Case: ParseCase("host.memfd.counter.d", nil), Outcome: Pass, Expected: Pass, Verdict: Expected},
	}
	s := Summarize(res, "expectations/x", "out")
	want := "FAIL — 3 regressions (2 never run: judged from " + streak + " (crash)): "
	if !strings.Contains(s.Line, want) {
		t.Errorf("line %q, want it to say %q", s.Line, want)
	}
	// Mixed verdicts keep the count after the kinds.
	res[2].Verdict = Missing
	s = Summarize(res, "expectations/x", "out")
	if !strings.Contains(s.Line, "3 unexpected (2 regression, 1 missing) (2 never run: ") {
		t.Errorf("mixed line %q", s.Line)
	}
	// Several streaks: how many cases they were judged from, the first.
	res[2].Verdict = Regression
	res[2].JudgedFrom = &JudgedFrom{Case: "host.memfd.counter.z", Outcome: Timeout}
	s = Summarize(res, "expectations/x", "out")
	if !strings.Contains(s.Line, "3 regressions (2 never run: judged from 2 earlier cases, first "+streak+" (crash)): ") {
		t.Errorf("two streaks: %q", s.Line)
	}
	// Without a not-run case the line is as before.
	s = Summarize(res[:1], "expectations/x", "out")
	if strings.Contains(s.Line, "never run") {
		t.Errorf("no not-run case, yet %q", s.Line)
	}
}
