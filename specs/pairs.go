package specs

import (
	"fmt"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
	"p2patomics/wire"
)

// pairs are the per-pair and all-to-all cases: every ordered pair of ranks
// doing system-scope atomics on the other's memory, and every rank loading
// a different peer at once. On 8 GPUs the interesting failures are per
// pair, so each pair is its own case (label pair=<s>-<d>, id r<s>r<d>) and
// the report's pair matrix is built from them.
func (b *builder) pairs() {
	k := kernels.MustLookup("add_u64_relaxed_sys")
	n := b.o.Ranks
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s == d {
				continue
			}
			b.add("pairs", fmt.Sprintf("%s.r%dr%d", k.Name, s, d), n, report.Pass,
				[]string{"atomics", "pairs", string(k.Scope), fmt.Sprintf("pair=%d-%d", s, d)}, 60*time.Second,
				func(c *harness.Ctx) error { return runPair(c, k, s, d) })
		}
	}
	b.add("alltoall", k.Name, n, report.Pass, []string{"atomics", "pairs", "alltoall", string(k.Scope)}, 120*time.Second,
		func(c *harness.Ctx) error { return runAllToAll(c, k) })
}

// runPair: rank s adds to a word of rank d's memory through its mapping
// while d adds to the same word locally; the word must hold every add.
func runPair(c *harness.Ctx, k kernels.Kernel, s, d int) error {
	if err := c.NeedPeer(true); err != nil {
		return err
	}
	m, err := c.Shared(d, 1<<20, true)
	if err != nil {
		return err
	}
	if err := c.PutU64(d, m.Bufs[d], 0, counterInit(k)); err != nil {
		return err
	}
	sz := sizing(c, k.Op)
	ls := make([]harness.Launch, 0, 2)
	for _, r := range []int{s, d} {
		ls = append(ls, counterLaunch(r, k, sz, harness.P(m.Bufs[r], 0), counterOperand(k)))
	}
	el, err := c.Run(ls...)
	if err != nil {
		return err
	}
	if el[0] > 0 {
		c.Metric("pair_atomic_rate", "Mops/s", fmt.Sprintf("rank %d's launch elapsed, both ranks' ops (one word of rank %d's memory)", s, d),
			float64(2*sz.threads()*sz.iters)/el[0].Seconds()/1e6)
	}
	want := counterExpect(k, 2, sz.threads(), sz.iters)
	for _, r := range []int{d, s} {
		got, err := c.U64(r, m.Bufs[r], 0)
		if err != nil {
			return err
		}
		if got != want {
			return harness.Failf("rank %d reads %#x, expected %#x (ranks %d and %d x %d threads x %d iterations); lost updates: %d",
				r, got, want, s, d, sz.threads(), sz.iters, int64(want-got))
		}
	}
	return nil
}

// runAllToAll: every rank owns a word; in round t rank r adds to rank
// (r+t) mod n's word, all ranks at once, so every link carries atomics in
// both directions in each round and every ordered pair is covered after
// n-1 rounds. Each word must end with exactly n-1 ranks' adds.
func runAllToAll(c *harness.Ctx, k kernels.Kernel) error {
	if err := c.NeedPeer(true); err != nil {
		return err
	}
	n := c.N()
	mems, err := c.SharedAll(1 << 20)
	if err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		if err := c.PutU64(r, mems[r].Bufs[r], 0, counterInit(k)); err != nil {
			return err
		}
	}
	sz := sizing(c, k.Op)
	for t := 1; t < n; t++ {
		ls := make([]harness.Launch, n)
		for r := range ls {
			ls[r] = counterLaunch(r, k, sz, harness.P(mems[(r+t)%n].Bufs[r], 0), counterOperand(k))
		}
		if _, err := c.Run(ls...); err != nil {
			return err
		}
	}
	want := counterExpect(k, n-1, sz.threads(), sz.iters)
	var bad []string
	for r := 0; r < n; r++ {
		got, err := c.U64(r, mems[r].Bufs[r], 0)
		if err != nil {
			return err
		}
		if got != want {
			bad = append(bad, fmt.Sprintf("rank %d's word %#x (lost %d)", r, got, int64(want-got)))
		}
	}
	if bad != nil {
		return harness.Failf("expected %#x in every rank's word after %d rounds: %v", want, n-1, bad)
	}
	c.Note("%d rounds, every ordered pair loaded", n-1)
	return nil
}

// cpuGPU: the CPU of every rank takes part in system-scope atomics on one
// word of rank 0's memory while every rank's GPU adds to it. Only memory
// the CPU can address (host memory) and devices whose atomics on host
// memory are atomic with the CPU's can pass; elsewhere the case skips
// naming what is missing. The planted variant has rank 0's CPU do a load
// and a store instead of an add, and must fail.
func (b *builder) cpuGPU() {
	k := kernels.MustLookup("add_u64_relaxed_sys")
	b.add("cpugpu", k.Name, b.o.Ranks, report.Pass, []string{"atomics", "cpu", string(k.Scope)}, 60*time.Second,
		func(c *harness.Ctx) error { return runCPUGPU(c, k, false) })
	b.add("cpugpu", "racy_cpu", b.o.Ranks, report.Fail, []string{"atomics", "cpu", "control", "planted"}, 60*time.Second,
		func(c *harness.Ctx) error { return runCPUGPU(c, k, true) })
}

func runCPUGPU(c *harness.Ctx, k kernels.Kernel, racy bool) error {
	if err := c.NeedHostAtomics(); err != nil {
		return err
	}
	if err := c.NeedPeer(true); err != nil {
		return err
	}
	m, err := c.Shared(0, 1<<20, true)
	if err != nil {
		return err
	}
	if err := c.PutU64(0, m.Bufs[0], 0, 0); err != nil {
		return err
	}
	sz := sizing(c, k.Op)
	cpuThreads, cpuIters := 4, uint64(100000)
	if c.Vendor() == "host" {
		cpuThreads, cpuIters = 2, 20000
	}
	ls := make([]harness.Launch, c.N())
	for r := range ls {
		ls[r] = counterLaunch(r, k, sz, harness.P(m.Bufs[r], 0), 1)
		ls[r].CPU = &wire.CPUAtomics{Target: harness.P(m.Bufs[r], 0), Threads: cpuThreads, Iters: cpuIters, Operand: 1, Racy: racy && r == 0}
	}
	if _, err := c.Run(ls...); err != nil {
		return err
	}
	gpu := uint64(c.N()) * sz.threads() * sz.iters
	cpu := uint64(c.N()*cpuThreads) * cpuIters
	got, err := c.U64(0, m.Bufs[0], 0)
	if err != nil {
		return err
	}
	if got != gpu+cpu {
		return harness.Failf("expected %d (%d GPU adds + %d CPU adds), got %d; lost updates: %d", gpu+cpu, gpu, cpu, got, int64(gpu+cpu-got))
	}
	return nil
}
