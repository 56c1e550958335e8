package specs

import (
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/power"
	"p2patomics/internal/device"
	"p2patomics/kernels"
)

// Issue 52: a CAS counter on a GPU's host memory runs 16 blocks of 8
// threads a rank, 2 iterations (its loops retry across PCIe one attempt at
// a time: 0.13 s a case at 32 blocks on one H100), still enough operations
// to see the planted racy counter's lost updates with 99.9 % confidence;
// device memory keeps sizing's shape, and the other host-memory counters
// their power-sized iterations. Planted: sizing's 32 blocks fails the
// first row; the grid applied to every kind fails the last.
func TestHostCASCounterIsSmaller(t *testing.T) {
	cas := kernels.MustLookup("cas_u32_acqrel_sys")
	add := kernels.MustLookup("add_u64_relaxed_sys")
	ctx := func(kind string) *harness.Ctx {
		return &harness.Ctx{W: &harness.World{Backend: "cuda", N: 2, Infos: []device.Info{{Units: 132}, {Units: 132}}}, Kind: kind}
	}
	got := counterSizing(ctx("vmm-host"), cas)
	if got != (size{16, 8, 2}) {
		t.Errorf("vmm-host CAS: %+v, want 16 blocks of 8 threads, 2 iterations", got)
	}
	if ops := 2 * got.threads() * got.iters; ops < uint64(power.Instances(racyLossRate)) {
		t.Errorf("vmm-host CAS: %d operations cannot see the racy counter's losses", ops)
	}
	if got := counterSizing(ctx("vmm-host"), add); got.grid != 132 || got.iters != 2 {
		t.Errorf("vmm-host add: %+v, want a block per SM and 2 iterations (power-sized)", got)
	}
	if got := counterSizing(ctx("vmm"), cas); got != (size{132, 32, 4}) {
		t.Errorf("vmm CAS: %+v, want sizing's 132 × 32 × 4", got)
	}
}
