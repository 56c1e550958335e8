package specs

import (
	"slices"
	"testing"
	"time"

	"p2patomics/harness/report"
)

// Issue 52 item 3: a planted hang (a case the default suite expects to
// time out) has a short budget of its own, at most 250 ms: it proves the
// hang is classified and the world recovers, which a longer wait adds
// nothing to. Planted: the old 1 s budgets of waitflag.unbounded and
// canary.hang fail it.
func TestPlantedHangsHaveAShortBudget(t *testing.T) {
	n := 0
	for _, c := range everyCase(t) {
		if c.Expected != report.Timeout || slices.Contains(c.Labels, LabelManual.String()) {
			continue
		}
		n++
		if c.Timeout > 250*time.Millisecond {
			t.Errorf("%s: a planted hang's budget is %s, want at most 250ms", c.ID, c.Timeout)
		}
	}
	if n == 0 {
		t.Fatal("no planted hang in the catalogue")
	}
}
