package e2e

import (
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/specs"
	"p2patomics/wire"
)

// Issue 52: waitflag.bounded waits specs.BoundedWait for a flag nobody
// sets, and still fails for it: on the host backend, end to end, the
// case's detail names the missing flag and the wait (specs'
// TestBoundedWaitIsShort holds the bound). Planted: a bound the case never
// reports (the flag check dropped: pass) fails it.
func TestBoundedWaitIsShortAndFails(t *testing.T) {
	c := hostCase(t, "host.memfd.waitflag.bounded")
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	res := r.Run(c)
	if res.Outcome != report.Fail || !strings.Contains(res.Detail, "flag never arrived: waited "+specs.BoundedWait.String()) {
		t.Errorf("%s: %s (%s), want fail naming the %v wait", c.ID, res.Outcome, res.Detail, specs.BoundedWait)
	}
}

// The planted hangs still end in the timeout they expect at their 150 ms
// budget (specs' TestPlantedHangsHaveAShortBudget), on the host backend,
// end to end: the hang is reached and classified inside the budget.
func TestPlantedHangsStillTimeOut(t *testing.T) {
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
