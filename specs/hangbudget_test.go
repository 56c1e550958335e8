package specs

import (
	"slices"
	"testing"
	"time"

	"p2patomics/harness/report"
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
// flag nobody sets; that it still fails for it, naming the wait, is
// specs/e2e's TestBoundedWaitIsShortAndFails (a host world). Planted: a
// 200 ms bound fails it.
func TestBoundedWaitIsShort(t *testing.T) {
	if BoundedWait > 50*time.Millisecond {
		t.Errorf("waitflag.bounded waits %v, want at most 50ms", BoundedWait)
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
