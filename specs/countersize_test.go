package specs

import (
	"math"
	"testing"

	"p2patomics/harness/power"
	"p2patomics/kernels"
)

// Issue 52 item 2: a host-memory counter runs the iterations its power
// needs, not sizing's 20: on one H100 (132 SMs × 32 threads × 2 ranks) 2
// iterations, xor 3 (odd), and a small grid more, so that a rule losing
// updates at the planted racy counter's rate loses one with 99.9 %
// confidence. Planted: sizing's 20 (the old count) fails the first rows;
// dropping the odd rule fails the xor row; dropping the power bound (2
// always) fails the last.
func TestHostCounterItersFromTheRacyRate(t *testing.T) {
	for _, c := range []struct {
		op      kernels.Op
		threads uint64
		want    uint64
	}{
		{kernels.OpAdd, 2 * 132 * 32, 2},
		{kernels.OpXchg, 2 * 132 * 32, 2},
		{kernels.OpXor, 2 * 132 * 31, 3},
		{kernels.OpAdd, 2, 4}, // 7 operations need 4 iterations of 2 threads
	} {
		it := hostCounterIters(c.op, c.threads)
		if it != c.want {
			t.Errorf("%s with %d threads: %d iterations, want %d", c.op, c.threads, it, c.want)
		}
		// Unseen with probability (1-q)^ops: at most 1 - power.Confidence.
		if miss := math.Pow(1-racyLossRate, float64(it*c.threads)); miss > 1-power.Confidence {
			t.Errorf("%s with %d threads × %d: a loss at the racy rate goes unseen with probability %g", c.op, c.threads, it, miss)
		}
	}
}
