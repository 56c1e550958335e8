package sampling

import (
	"testing"
	"time"
)

func TestIters(t *testing.T) {
	for _, c := range []struct {
		base       uint64
		el, target time.Duration
		want       uint64
	}{
		{200, 180 * time.Microsecond, 20 * time.Millisecond, 200 * 112}, // ceil(20000/180) = 112
		{200, 50 * time.Microsecond, 20 * time.Millisecond, 200 * 400},
		{20, 3 * time.Millisecond, 20 * time.Millisecond, 20 * 7},
		{200, 20 * time.Millisecond, 20 * time.Millisecond, 200},  // already long enough
		{200, 40 * time.Millisecond, 20 * time.Millisecond, 200},  // never fewer than base
		{200, 0, 20 * time.Millisecond, 200},                      // no timing (host backend, failed event)
		{200, time.Millisecond, 0, 200},                           // calibration off
		{3, time.Nanosecond, 20 * time.Millisecond, 3 * MaxScale}, // bounded
	} {
		if got := Iters(c.base, c.el, c.target); got != c.want {
			t.Errorf("Iters(%d, %v, %v) = %d, want %d", c.base, c.el, c.target, got, c.want)
		}
	}
}

// Every placement must be a different page, line-aligned, leave room for
// both flags (128 bytes) and fit in PlacementSpan; the line within the page
// must move. The reference program hard-codes the same stride and count.
func TestFlagOffsets(t *testing.T) {
	pages, lines := map[uint64]bool{}, map[uint64]bool{}
	for p := 0; p < Placements; p++ {
		off := FlagOffset(p)
		if off%128 != 0 {
			t.Errorf("placement %d at %d: not line-aligned", p, off)
		}
		if off+128 > PlacementSpan {
			t.Errorf("placement %d at %d: past the %d-byte buffer", p, off, PlacementSpan)
		}
		pages[off/4096] = true
		lines[off%4096] = true
	}
	if len(pages) != Placements || len(lines) < min(Placements, 32) {
		t.Errorf("%d placements use %d pages and %d line positions", Placements, len(pages), len(lines))
	}
	if PlacementSpan%(2<<20) != 0 || PlacementSpan > 16<<20 {
		t.Errorf("span %d: want a multiple of 2 MiB, at most 16 MiB", PlacementSpan)
	}
	if Stride != 32*4096+3*128 || Placements != 64 {
		t.Errorf("stride %d, %d placements: scripts/ref/p2pref.cu's kStride and kPlacements must change with them", Stride, Placements)
	}
}
