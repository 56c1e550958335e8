package specs

import (
	"slices"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 52 item 3: a planted hang (a case the default suite expects to
// time out) has a short budget of its own, at most 150 ms: it proves the
// hang is classified and the world recovers, which a longer wait adds
// nothing to. Planted: the old 1 s budgets of waitflag.unbounded and
// canary.hang fail it, and 250 ms (a1d6007's) too.
func TestPlantedHangsHaveAShortBudget(t *testing.T) {
	n := 0
	for _, c := range everyCase(t) {
		if c.Expected != report.Timeout || slices.Contains(c.Labels, LabelManual.String()) {
			continue
		}
		n++
		if c.Timeout > 150*time.Millisecond {
			t.Errorf("%s: a planted hang's budget is %s, want at most 150ms", c.ID, c.Timeout)
		}
	}
	if n == 0 {
		t.Fatal("no planted hang in the catalogue")
	}
}

// Issue 52: waitflag.bounded waits BoundedWait (50 ms, was 200 ms) for a
// flag nobody sets, and still fails for it: on the host backend, end to
// end, the case's detail names the missing flag and the wait. Planted: a
// 200 ms bound fails the first check; a bound the case never reports (the
// flag check dropped: pass) fails the second.
func TestBoundedWaitIsShortAndFails(t *testing.T) {
	if BoundedWait > 50*time.Millisecond {
		t.Errorf("waitflag.bounded waits %v, want at most 50ms", BoundedWait)
	}
	notInOwnTests(t)
	c := hostCase(t, "host.memfd.waitflag.bounded")
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	res := r.Run(c)
	if res.Outcome != report.Fail || !strings.Contains(res.Detail, "flag never arrived: waited "+BoundedWait.String()) {
		t.Errorf("%s: %s (%s), want fail naming the %v wait", c.ID, res.Outcome, res.Detail, BoundedWait)
	}
}

// Issue 52: fdexchange.pattern moves a pattern that still spans several
// pages of every kind (4 of a GPU's 64 KiB pages), no more: its trips over
// the wire were the case at 1 MiB. Planted: 1 MiB fails it, 64 KiB too.
func TestFDPatternSpansPagesNoMore(t *testing.T) {
	if fdPatternBytes < 4*64<<10 || fdPatternBytes > 256<<10 {
		t.Errorf("fdexchange.pattern moves %d bytes, want 256 KiB: at least 4 GPU pages of 64 KiB, at most 256 KiB", fdPatternBytes)
	}
}

// The planted hangs still end in the timeout they expect at their 150 ms
// budget, on the host backend, end to end: the hang is reached and
// classified inside the budget.
func TestPlantedHangsStillTimeOut(t *testing.T) {
	notInOwnTests(t)
	for _, id := range []string{"host.memfd.waitflag.unbounded", "host.memfd.canary.hang"} {
		c := hostCase(t, id)
		r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
		res := r.Run(c)
		r.Close()
		if res.Outcome != report.Timeout {
			t.Errorf("%s: %s (%s), want timeout", id, res.Outcome, res.Detail)
		}
	}
}
