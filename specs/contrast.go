package specs

import (
	"bytes"
	"fmt"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// contrast is the seed's contrast in one case (IRIS-FIX
// p2p_atomics_hip.cpp): on one allocation of rank 0, rank 1 first writes
// and reads it back with plain (non-atomic) kernel accesses through its
// import, which must work on every path, then runs the seed's f32 add at
// acq_rel on a word of the same allocation, which the reports say faults
// on coarse-grained VRAM. The plain part's result is a note, so a crash of
// the atomic part still shows that the same mapping carried plain traffic.
func (b *builder) contrast() {
	k := kernels.MustLookup(kernels.Name(kernels.OpAdd, kernels.F32, kernels.AcqRel, kernels.Sys))
	labels := append(append([]report.Label{LabelAtomics}, facets(k)...), LabelInfo)
	b.add(Spec{Name: "contrast", Variant: "plain_then_" + k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: labels, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error {
			return runContrast(c, k)
		}})
}

// contrastBytes is the plain region, after the atomic word's 4 KiB.
const contrastOff, contrastBytes = 4096, 64 << 10

func runContrast(c *harness.Ctx, k kernels.Kernel) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	m, err := c.Shared(0, 1<<20, true)
	if err != nil {
		return err
	}
	const r = 1
	src, err := c.Local(r, contrastBytes)
	if err != nil {
		return err
	}
	back, err := c.Local(r, contrastBytes)
	if err != nil {
		return err
	}
	pat := make([]byte, contrastBytes)
	for i := range pat {
		pat[i] = byte(i*7 + 3)
	}
	if err := c.Write(r, src, 0, pat); err != nil {
		return err
	}
	if err := c.Zero(r, back, 0, contrastBytes); err != nil {
		return err
	}
	copyK := kernels.MustLookup("copy_b128_plain_dev")
	grid, block := uint32(4), uint32(256)
	if !c.Backend().GPU {
		grid, block = 1, 2
	}
	run := func(dst int, dstOff uint64, from int, fromOff uint64) error {
		_, err := c.Run(harness.Launch{Rank: r, Kernel: copyK.Name, Grid: grid, Block: block, Args: map[string]wireArg{
			"dst": harness.P(dst, dstOff), "src": harness.P(from, fromOff), "nbytes": harness.V(contrastBytes),
			"block": harness.V(uint64(block)), "nthreads": harness.V(uint64(grid) * uint64(block))}})
		return err
	}
	// Plain peer write (rank 1 into rank 0's memory), then plain peer read.
	if err := run(m.Bufs[r], contrastOff, src, 0); err != nil {
		return fmt.Errorf("plain peer kernel write: %w", err)
	}
	if err := run(back, 0, m.Bufs[r], contrastOff); err != nil {
		return fmt.Errorf("plain peer kernel read: %w", err)
	}
	got, err := c.Read(r, back, 0, contrastBytes)
	if err != nil {
		return err
	}
	owner, err := c.Read(0, m.Bufs[0], contrastOff, contrastBytes)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, pat) || !bytes.Equal(owner, pat) {
		return harness.Failf("plain peer kernel write/read of %d bytes on rank 0's allocation: read back equal %v, owner's view equal %v (before any atomic ran)",
			contrastBytes, bytes.Equal(got, pat), bytes.Equal(owner, pat))
	}
	c.Note("plain peer kernel write and read of %d bytes of rank 0's allocation by rank %d: passed", contrastBytes, r)
	// Then the seed's atomic on a word of the same allocation.
	return runCounterOn(c, k, m, 0)
}
