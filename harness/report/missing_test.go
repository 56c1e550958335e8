package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Issue 49 U15: a baseline case the run did not plan is recorded as a skip
// with verdict missing; the verdict line, summary.txt and junit.xml read
// "pass → skip", and the summary counted such cases as "2 skip".
func TestMissingReadsAsMissing(t *testing.T) {
	res := []Result{
		{Case: ParseCase("host.memfd.counter.a", nil), Outcome: Skip, Expected: Pass, Verdict: Missing, Ranks: []Rank{}},
		{Case: ParseCase("host.memfd.counter.b", nil), Outcome: Skip, Expected: Pass, Verdict: Missing, Ranks: []Rank{}},
		{Case: ParseCase("host.memfd.counter.c", nil), Outcome: Pass, Expected: Pass, Verdict: Expected, Ranks: []Rank{}},
	}
	s := Summarize(res, "expectations/x", "out")
	rep := &Report{Schema: Schema, Results: res, Summary: &s}
	if !strings.Contains(s.Line, "host.memfd.counter.a pass → missing") || strings.Contains(s.Line, "→ skip") {
		t.Errorf("verdict line %q", s.Line)
	}
	var b bytes.Buffer
	WriteTable(&b, rep, nil)
	WriteConclusion(&b, Style{}, rep)
	text := b.String()
	if strings.Contains(text, "skip") || !strings.Contains(text, "3 cases: 1 pass, 2 missing") {
		t.Errorf("summary says skip for missing cases:\n%s", text)
	}
	j, err := JUnit(rep, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(j), "→ skip") || !strings.Contains(string(j), "missing: pass → missing") {
		t.Errorf("junit.xml:\n%s", j)
	}
}
