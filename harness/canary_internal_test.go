package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// A canary (Case.Canary, set by specs for its canary spec) tests the
// harness's handling of a rank's death, not its kind's setup: once a setup
// streak has formed, a canary still runs (judging it would meet or miss its
// expectation without the death it exists to cause), and its own end, a
// pass or the streak's very failure, neither ends nor extends the streak.
// Fails with the field ignored in judgedFromSetup (the canary is judged,
// its body never runs) or in noteSetup (the passing canary ends the streak,
// or the failing one extends it: the next case is not judged from the
// first setupStreakMax).
func TestSetupStreakSparesCanaries(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"fail:dup=95"}
	r := NewRunner(backends.HostName, set, 1)
	defer r.Close()
	ran := 0
	mk := func(id string, canary, export bool) *Case {
		return &Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 10 * time.Second, Canary: canary,
			Run: func(c *Ctx) error {
				ran++
				if !export {
					return nil
				}
				_, err := c.Shared(0, 4096, true)
				return err
			}}
	}
	for i := 0; i < setupStreakMax; i++ {
		r.Run(mk(fmt.Sprintf("shared%d", i), false, true))
	}
	for _, c := range []*Case{mk("canary.fails", true, true), mk("canary.passes", true, false)} {
		before := ran
		res := r.Run(c)
		if ran != before+1 || r.JudgedFromSetup(c.ID) {
			t.Fatalf("%s was judged from the setup streak instead of running: %s %s", c.ID, res.Outcome, res.Detail)
		}
	}
	res := r.Run(mk("after", false, true))
	want := fmt.Sprintf("not run: judged from shared0, the first of %d memfd cases", setupStreakMax)
	if !strings.Contains(res.Detail, want) {
		t.Fatalf("after the canaries: %s %q, want the streak of %d unchanged (%q)", res.Outcome, res.Detail, setupStreakMax, want)
	}
}

// TestSetupStreakSparesControls: a control (a planted bug, a negative
// control, an expected failure) runs once a setup streak has formed:
// judged, it would end not-run and lose its control. Fails with the
// report.IsControl clause dropped from judgedFromSetup (the control's body
// never runs and it ends not-run).
func TestSetupStreakSparesControls(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"fail:dup=95"}
	r := NewRunner(backends.HostName, set, 1)
	defer r.Close()
	ran := 0
	mk := func(id string, expected report.Outcome, labels ...string) *Case {
		return &Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: expected, Labels: labels, Timeout: 10 * time.Second,
			Run: func(c *Ctx) error { ran++; _, err := c.Shared(0, 4096, true); return err }}
	}
	for i := 0; i < setupStreakMax; i++ {
		r.Run(mk(fmt.Sprintf("shared%d", i), report.Pass))
	}
	for _, c := range []*Case{mk("planted.racy", report.Pass, "planted"), mk("noaccess", report.Crash, "control")} {
		before := ran
		res := r.Run(c)
		if ran != before+1 || res.Outcome == report.NotRunOutcome {
			t.Fatalf("control %s was judged from the setup streak instead of running: %s %s", c.ID, res.Outcome, res.Detail)
		}
	}
	if res := r.Run(mk("after", report.Pass)); res.Outcome != report.NotRunOutcome {
		t.Fatalf("after the controls: %s %q, want not-run", res.Outcome, res.Detail)
	}
}
