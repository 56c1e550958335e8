package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A pass with weak evidence reads "pass (weak evidence)" in the table, the
// live line and junit's system-out; a strong-evidence pass and an ordinary
// pass do not.
func TestWeakEvidenceShown(t *testing.T) {
	rep := &Report{Results: []Result{
		{Case: ParseCase("host.memfd.litmus.a", nil), Outcome: Pass, Expected: Pass, Evidence: EvidenceWeak},
		{Case: ParseCase("host.memfd.litmus.b", nil), Outcome: Pass, Expected: Pass, Evidence: EvidenceStrong},
		{Case: ParseCase("host.memfd.counter.c", nil), Outcome: Pass, Expected: Pass},
	}}
	var b bytes.Buffer
	WriteTable(&b, rep, nil)
	j, err := JUnit(rep, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for i, r := range rep.Results {
		live = append(live, LiveLine(Style{}, i+1, 3, r))
	}
	for _, out := range []string{b.String(), string(j), strings.Join(live, "\n")} {
		if n := strings.Count(out, "pass (weak evidence)"); n != 1 {
			t.Errorf("want exactly one \"pass (weak evidence)\" (case a), have %d in:\n%s", n, out)
		}
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "weak evidence") && !strings.HasPrefix(l, "host.memfd.litmus.a") {
			t.Errorf("weak evidence shown on the wrong case: %s", l)
		}
	}
}

// A pass whose outcome histogram was degenerate reads "pass (inconclusive)"
// wherever the outcome is shown, never as a plain pass.
func TestInconclusiveShown(t *testing.T) {
	rep := &Report{Results: []Result{
		{Case: ParseCase("host.memfd.litmus.a", nil), Outcome: Pass, Expected: Pass, Evidence: EvidenceInconclusive},
		{Case: ParseCase("host.memfd.litmus.b", nil), Outcome: Pass, Expected: Pass, Evidence: EvidenceStrong},
	}}
	var b bytes.Buffer
	WriteTable(&b, rep, nil)
	j, err := JUnit(rep, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	live := LiveLine(Style{}, 1, 2, rep.Results[0])
	for _, out := range []string{b.String(), string(j), live} {
		if n := strings.Count(out, "pass (inconclusive)"); n != 1 {
			t.Errorf("want exactly one \"pass (inconclusive)\" (case a), have %d in:\n%s", n, out)
		}
	}
}
