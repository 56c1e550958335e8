package specs

import (
	"encoding/binary"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

func (b *builder) patterns() {
	for _, s := range kernels.Scopes {
		k := kernels.MustLookup(kernels.Name(kernels.OpSpread, kernels.U64, kernels.Relaxed, s))
		b.add(Spec{Name: "spread", Variant: k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
			Labels: []report.Label{LabelAtomics, facet(s)}, Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error {
				if err := c.NeedPeer(true); err != nil {
					return err
				}
				sz := sizing(c, kernels.OpSpread)
				m, err := c.Shared(0, max(sz.threads()*8, 4096), true)
				if err != nil {
					return err
				}
				if err := c.Zero(0, m.Bufs[0], 0, sz.threads()*8); err != nil {
					return err
				}
				ls := make([]harness.Launch, c.N())
				for r := range ls {
					ls[r] = counterLaunch(r, k, sz, harness.P(m.Bufs[r], 0), 1)
				}
				if _, err := c.Run(ls...); err != nil {
					return err
				}
				data, err := c.Read(0, m.Bufs[0], 0, sz.threads()*8)
				if err != nil {
					return err
				}
				want := uint64(c.N()) * sz.iters
				for g := uint64(0); g < sz.threads(); g++ {
					if v := le64(data[g*8:]); v != want {
						return harness.Failf("word %d: expected %d, got %d (lost %d)", g, want, v, int64(want-v))
					}
				}
				return nil
			}})
		ar := kernels.MustLookup(kernels.Name(kernels.OpAllReduce, kernels.U64, kernels.Relaxed, s))
		b.add(Spec{Name: "allreduce", Variant: ar.Name, Ranks: b.o.Ranks, Expected: report.Pass,
			Labels: []report.Label{LabelAtomics, facet(s)}, Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error {
				if err := c.NeedPeer(true); err != nil {
					return err
				}
				const n = 4096
				sz := sizing(c, kernels.OpAllReduce)
				dst, err := c.Shared(0, n*8, true)
				if err != nil {
					return err
				}
				if err := c.Zero(0, dst.Bufs[0], 0, n*8); err != nil {
					return err
				}
				want := make([]uint64, n)
				ls := make([]harness.Launch, c.N())
				for r := range ls {
					src, err := c.Local(r, n*8)
					if err != nil {
						return err
					}
					vals := make([]byte, n*8)
					for j := 0; j < n; j++ {
						v := uint64(r+1)*1_000_003 + uint64(j)*uint64(c.Seed+7)
						binary.LittleEndian.PutUint64(vals[j*8:], v)
						want[j] += v
					}
					if err := c.Write(r, src, 0, vals); err != nil {
						return err
					}
					ls[r] = harness.Launch{Rank: r, Kernel: ar.Name, Grid: sz.grid, Block: sz.block, Args: map[string]wireArg{
						"dst": harness.P(dst.Bufs[r], 0), "src": harness.P(src, 0), "n": harness.V(n),
						"block": harness.V(uint64(sz.block)), "nthreads": harness.V(sz.threads())}}
				}
				if _, err := c.Run(ls...); err != nil {
					return err
				}
				// Every rank reads the reduced vector through its own mapping.
				for r := 0; r < c.N(); r++ {
					data, err := c.Read(r, dst.Bufs[r], 0, n*8)
					if err != nil {
						return err
					}
					for j := 0; j < n; j++ {
						if v := le64(data[j*8:]); v != want[j] {
							return harness.Failf("rank %d sees element %d = %d, expected %d", r, j, v, want[j])
						}
					}
				}
				return nil
			}})
	}
}
