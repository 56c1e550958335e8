package specs

import (
	"errors"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/internal/device"
)

// TestLitmusPeerFollowsTheBarrier (issue 50, Q3): the litmus environments
// ask a pair of devices for P2P atomics exactly where their round barrier
// is a P2P atomic. On a PCIe pair with access but without atomics (an R9700
// pair under the backends' PCIe rule) the AMD stacks run them (their
// barrier is a store barrier since Q1, and the kernels' disassembly test
// proves no AMD litmus kernel holds an atomic), while CUDA, whose barrier
// is an atomic add across the GPUs, skips naming the missing atomics.
// Planted: NeedPeer(false) everywhere (the code before the fix) runs the
// CUDA barrier's atomics (red); NeedPeer(true) everywhere skips the AMD
// stacks (red).
func TestLitmusPeerFollowsTheBarrier(t *testing.T) {
	const why = "P2P atomics unverified on PCIe"
	for _, tc := range []struct {
		backend string
		skip    bool
	}{
		{backends.HSAName, false},
		{backends.HIPName, false},
		{backends.CUDAName, true},
	} {
		infos := make([]device.Info, 2)
		for r := range infos {
			infos[r].Caps.Peers = device.AllPeers(r, 2, device.Yes("peer access"), device.No("%s", why))
		}
		c := &harness.Ctx{W: &harness.World{Backend: tc.backend, Infos: infos, Procs: []*harness.Proc{{Device: 0}, {Device: 1}}}}
		err := litmusPeer(c)
		var se *harness.SkipError
		switch {
		case tc.skip && (!errors.As(err, &se) || se.Reason != why):
			t.Errorf("%s: want a skip naming %q, got %v", tc.backend, why, err)
		case !tc.skip && err != nil:
			t.Errorf("%s: the store barrier needs no P2P atomics, got %v", tc.backend, err)
		}
	}
}
