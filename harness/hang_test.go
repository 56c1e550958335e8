package harness_test

import (
	"errors"
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
		c := &harness.Case{ID: k.id, Backend: backends.HostName, Kind: "memfd", Ranks: 2, Expected: k.expected, NoLeak: true,
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
