package harness_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 26 items 2 and 3: a rank that hangs after the body is the case's
// timeout whatever the body returned. At a44624c the first reads "fail as
// expected" (the liveness check's timeout was kept only when the body
// returned nil) and the second pass (no liveness check once a rank was
// sacrificed).
func TestHangAfterTheBodyIsTheOutcome(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	cases := []struct {
		id       string
		expected report.Outcome
		run      func(*harness.Ctx) error
	}{
		{"expected_fail_then_hang", report.Fail, func(c *harness.Ctx) error {
			c.W.Procs[1].Signal(syscall.SIGSTOP)
			return harness.Failf("flag never arrived")
		}},
		{"sacrificed_owner_stopped_peer", report.Pass, func(c *harness.Ctx) error {
			c.W.Procs[0].Sacrifice()
			c.W.Procs[0].WaitExit(5 * time.Second)
			c.W.Procs[1].Signal(syscall.SIGSTOP)
			return nil
		}},
	}
	for _, k := range cases {
		c := &harness.Case{ID: k.id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: k.expected, NoLeak: true,
			Timeout: 5 * time.Second, Grace: 200 * time.Millisecond, Run: k.run}
		res := r.Run(c)
		if res.Outcome != report.Timeout || !strings.Contains(res.Detail, "liveness check") {
			t.Errorf("%s: rank 1 stopped after the body, got %s: %s", k.id, res.Outcome, res.Detail)
		}
	}
}

// Issue 26 item 2: only the rank's own error reply is a failure a case may
// accept; a timeout, a death or a protocol error never is.
func TestRankRefused(t *testing.T) {
	for _, k := range []struct {
		err  error
		want bool
	}{
		{&harness.RemoteError{Rank: 1, What: "read", Msg: "bad buffer"}, true},
		{&harness.RemoteError{Rank: 1, What: "read", Msg: "x", NotSupported: true}, false},
		{&harness.RemoteError{Rank: 1, What: "read", Msg: "x", Fault: &wire.Fault{}}, false},
		{&harness.TimeoutError{Rank: 1, What: "read"}, false},
		{&harness.DeadError{Rank: 1, What: "read"}, false},
		{&harness.ProtocolError{Rank: 1, Err: errors.New("x")}, false},
		{nil, false},
	} {
		if got := harness.RankRefused(k.err); got != k.want {
			t.Errorf("RankRefused(%v) = %v, want %v", k.err, got, k.want)
		}
	}
}

// Issue 37 item 4: a wedged call gets its verdict in a budget made from the
// baseline's recorded duration, names the call, and costs one world: with
// the 5th mmap of every rank process never returning, each case ends
// pass or timeout, every timeout names mmap and the rule, no more cases
// time out than rank processes were started (each can wedge once), and a
// case after the first timeout passes in a fresh world. Issue 48 item 2:
// once two cases timed out stuck in mmap, the driver is wedged there and
// every later case is not-run at once, naming the call and the first case
// (never before the second timeout).
func TestWedgedCallCostsOneWorld(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"hang-at:mmap=5"}
	r := harness.NewRunner(backends.HostName, set, 1)
	defer r.Close()
	const n = 10
	r.Recorded = map[string]float64{}
	for i := range n {
		r.Recorded[fmt.Sprintf("wedge_%d", i)] = 0.05 // the healthy case's 50 ms: a 2 s budget (the floor)
	}
	timeouts, firstTimeout, passAfter, notRun := 0, -1, false, 0
	for i := range n {
		res := r.Run(fillCase(fmt.Sprintf("wedge_%d", i)))
		switch res.Outcome {
		case report.Pass:
			passAfter = passAfter || firstTimeout >= 0
			if notRun > 0 {
				t.Errorf("case %d passed after a case was judged not-run", i)
			}
		case report.Timeout:
			timeouts++
			t.Logf("case %d: %s", i, res.Detail)
			if firstTimeout < 0 {
				firstTimeout = i
			}
			for _, want := range []string{"stuck in mmap", "hang-at:mmap=5", "the baseline recorded", "no progress"} {
				if !strings.Contains(res.Detail, want) {
					t.Errorf("case %d: timeout detail does not say %q: %s", i, want, res.Detail)
				}
			}
		case report.NotRunOutcome:
			notRun++
			first := fmt.Sprintf("wedge_%d", firstTimeout)
			if timeouts < 2 || res.JudgedFrom == nil || res.JudgedFrom.Case != first || !strings.Contains(res.Detail, "wedged in mmap") {
				t.Errorf("case %d: not-run after %d timeouts, judged from %+v: %s", i, timeouts, res.JudgedFrom, res.Detail)
			}
		default:
			t.Errorf("case %d: %s, want pass, timeout or not-run: %s", i, res.Outcome, res.Detail)
		}
	}
	procs := 2 * r.WorldsStarted()
	if timeouts != 2 || timeouts > procs || !passAfter || notRun == 0 {
		t.Errorf("%d timeouts in %d cases over %d rank processes (want 2, then not-run), a pass after the first: %v, %d not-run",
			timeouts, n, procs, passAfter, notRun)
	}
}

// A case the baseline timed gets max(floor, 10× its duration), never more
// than its own deadline; one it did not keeps its own Timeout.
func TestBudgetFromBaseline(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	r.Recorded = map[string]float64{"fast": 0.01, "slow": 0.7, "long": 100}
	for id, want := range map[string]time.Duration{"fast": 2 * time.Second, "slow": 7 * time.Second, "long": 20 * time.Second, "unknown": 20 * time.Second} {
		c := &harness.Case{ID: id, Case: report.Case{Ranks: 2}, Timeout: 20 * time.Second}
		if got := harness.LimitOf(r, c); got != want {
			t.Errorf("%s: deadline %s, want %s", id, got, want)
		}
		if c.Limit() != 20*time.Second {
			t.Errorf("%s: the case itself changed: %s", id, c.Limit())
		}
	}
}

// Issue 37 item 4, the rank-side watchdog (internal/watchdog): a wait on
// the device that is still in flight when its work is done is reported by
// the rank, and the case ends then, not at its deadline. With the 2nd
// synchronize of every rank process never returning (fillCase launches one
// kernel on rank 0), every other case times out, and its detail is the
// watchdog's, naming the call and the rule; the deadline's own wording
// ("before the deadline") would mean the watchdog never spoke.
func TestWatchdogEndsAWedgedWait(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"hang-at:synchronize=3"}
	r := harness.NewRunner(backends.HostName, set, 1)
	defer r.Close()
	timeouts := 0
	for i := range 4 {
		res := r.Run(fillCase(fmt.Sprintf("sync_%d", i)))
		switch res.Outcome {
		case report.Pass:
		case report.Timeout:
			timeouts++
			t.Logf("case %d: %s", i, res.Detail)
			for _, want := range []string{"its watchdog found synchronize wedged", "its work done", "0 of 64 kernel threads running", "stuck in synchronize", "hang-at:synchronize=3"} {
				if !strings.Contains(res.Detail, want) {
					t.Errorf("case %d: timeout detail does not say %q: %s", i, want, res.Detail)
				}
			}
			if strings.Contains(res.Detail, "before the deadline") {
				t.Errorf("case %d: ended by the deadline, not the watchdog: %s", i, res.Detail)
			}
		default:
			t.Errorf("case %d: %s, want pass or timeout: %s", i, res.Outcome, res.Detail)
		}
	}
	if timeouts != 2 {
		t.Errorf("%d of 4 cases timed out; the 3rd launch of each of 2 worlds wedges: want 2", timeouts)
	}
}
