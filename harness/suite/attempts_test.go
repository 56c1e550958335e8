package suite

import (
	"io"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// seq is a standalone case whose runs end in outs, one after another.
func seq(id string, outs ...report.Outcome) *harness.Case {
	i := 0
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName}, Expected: report.Pass, Standalone: func() (report.Outcome, string) {
		o := outs[min(i, len(outs)-1)]
		i++
		return o, "run " + string(o)
	}}
}

func handRun(repeat int, cs ...*harness.Case) *Run {
	return handMade(&Plan{Opts: &Options{Backend: backends.HostName, Ranks: 2, Repeat: repeat}, planned: cs}, nil)
}

// handMade is a run of plan p made by hand, without NewRun's probe and
// catalogue: its stdout goes to w (nil: os.Stdout).
func handMade(p *Plan, w io.Writer) *Run {
	r := &Run{Stdout: w, t0: time.Now()}
	r.build(p)
	return r
}

// results are r's results in plan order, unfinished cases incomplete.
func resultsOf(r *Run) []report.Result { return r.exec.ledger.list(r.Plan.planned) }

// Issue 26 item 1: a second Execute of one case (Ginkgo's flake-attempts
// re-running the It body) never overwrites the first attempt: at a44624c
// a crash then a pass recorded pass.
func TestRetryKeepsTheFirstAttempt(t *testing.T) {
	c := seq("host.suite.t.flaky", report.Crash, report.Pass)
	r := handRun(1, c)
	first := r.Execute(c)
	again := r.Execute(c)
	if first.Outcome != report.Crash || again.Outcome != report.Crash || resultsOf(r)[0].Outcome != report.Crash {
		t.Fatalf("crash then a retry: first %s, retry %s, recorded %s", first.Outcome, again.Outcome, resultsOf(r)[0].Outcome)
	}
}

// Issue 26 item 11: a soak's outcome is its worst run, and a not-supported
// that comes and goes is an error. At a44624c one skip among passes made
// the case skip (PASS), and a crash after a fail read fail.
func TestSoakOutcomeIsItsWorstRun(t *testing.T) {
	for _, k := range []struct {
		outs []report.Outcome
		want report.Outcome
		says string
	}{
		{[]report.Outcome{report.Pass, report.Skip, report.Pass, report.Pass}, report.Error, "not supported in 1 of 4 runs"},
		{[]report.Outcome{report.Pass, report.Fail, report.Crash, report.Pass}, report.Crash, "run crash"},
		{[]report.Outcome{report.Skip, report.Crash, report.Skip, report.Skip}, report.Error, "not supported in 3 of 4 runs (a backend that does not support the case says so every time): run crash"},
		{[]report.Outcome{report.Skip, report.Skip, report.Skip, report.Skip}, report.Skip, "run skip"},
		{[]report.Outcome{report.Pass}, report.Pass, "soak: 4 runs, 0 did not meet"},
	} {
		c := seq("host.suite.t.soak", k.outs...)
		res := handRun(4, c).Execute(c)
		if res.Outcome != k.want || !strings.Contains(res.Detail, k.says) {
			t.Errorf("runs %v: got %s %q, want %s with %q", k.outs, res.Outcome, res.Detail, k.want, k.says)
		}
	}
}
