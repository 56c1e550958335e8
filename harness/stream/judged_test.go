package stream_test

import (
	"strings"
	"testing"
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// The judge before the replay: a recorded run is judged in place by the
// suite's rules before the sinks see it; a baseline of another stack is
// refused before any sink sees the run.
func TestJudgeRecord(t *testing.T) {
	read := func() *report.Report {
		rep, err := report.Read("../report/testdata/host-results.json")
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := read()
	// A result recorded without a verdict is judged as the suite would.
	rep.Results[0].Verdict = ""
	rec := &recorder{}
	if err := stream.JudgeRecord(rep, time.Unix(0, 0), expect.Rejudge{}, rec); err != nil {
		t.Fatal(err)
	}
	if rep.Results[0].Verdict == "" || rep.Summary == nil {
		t.Fatalf("not judged: verdict %q", rep.Results[0].Verdict)
	}
	last := rec.got[len(rec.got)-1].(stream.RunDone)
	if last.Report.Results[0].Verdict == "" {
		t.Error("the sink fed after the judge saw the unjudged run")
	}

	// Another stack's baseline: refused, and no sink fed.
	rep = read()
	rec = &recorder{}
	set := &expect.Set{Stack: map[string]string{"vendor": "nvidia", "arch": "sm_90"}, Fails: map[string]report.Outcome{}}
	if err := stream.JudgeRecord(rep, time.Unix(0, 0), expect.Rejudge{Set: set}, rec); err == nil || !strings.Contains(err.Error(), "stack mismatch") {
		t.Errorf("another stack's baseline: %v", err)
	}
	if len(rec.got) != 0 {
		t.Errorf("a refused judgement fed %d events to the sinks", len(rec.got))
	}
}

// Issue 49 S3: a replayed record whose verdict its outcome contradicts (a
// pass case recorded as a crash, its verdict still "expected") reaches the
// sinks judged again: a regression, the run FAIL, exit 1.
func TestJudgeRecordRechecksARecordedLie(t *testing.T) {
	rep, err := report.Read("../report/testdata/host-results.json")
	if err != nil {
		t.Fatal(err)
	}
	i := -1
	for k, r := range rep.Results {
		if r.Expected == report.Pass && r.Outcome == report.Pass && i < 0 {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("the fixture has no passing case")
	}
	rep.Results[i].Outcome, rep.Results[i].Verdict = report.Crash, report.Expected
	rec := &recorder{}
	if err := stream.JudgeRecord(rep, time.Unix(0, 0), expect.Rejudge{}, rec); err != nil {
		t.Fatal(err)
	}
	last := rec.got[len(rec.got)-1].(stream.RunDone)
	if v := last.Report.Results[i].Verdict; v != report.Regression || last.Report.Summary.ExitStatus != report.ExitFail {
		t.Errorf("the sink saw verdict %s, exit %d; want regression, exit 1", v, last.Report.Summary.ExitStatus)
	}
}
