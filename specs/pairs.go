package specs

import (
	"fmt"
	"strings"
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
//
// One pair at a time, the pair cases grow with the square of the rank
// count; by default (--pairs=rounds) they run in the rounds of a
// round-robin tournament instead: each round's disjoint pairs run at once
// on one world (every pair one way, then every pair the other way), and
// each ordered pair still gets its own case and verdict (harness.Round).
func (b *builder) pairs() {
	k := kernels.MustLookup("add_u64_relaxed_sys")
	n := b.o.Ranks
	id := func(s, d int) string { return fmt.Sprintf("%s.r%dr%d", k.Name, s, d) }
	rounds := map[[2]int]*harness.Round{}
	if b.o.Pairs != "alone" {
		for i, pairs := range harness.Tournament(n) {
			rd := pairRound(b, k, fmt.Sprintf("round %d of %d", i+1, len(harness.Tournament(n))), pairs, nil)
			for _, p := range pairs {
				rounds[p] = rd
			}
		}
	}
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s == d {
				continue
			}
			run := func(c *harness.Ctx) error { return runPair(c, k, s, d) }
			if rd := rounds[[2]int{min(s, d), max(s, d)}]; rd != nil {
				full := b.fullID("pairs", id(s, d), n)
				run = func(c *harness.Ctx) error { return rd.Take(c, full) }
			}
			b.add(Spec{Name: "pairs", Variant: id(s, d), Ranks: n, Expected: report.Pass,
				Labels: []report.Label{LabelAtomics, LabelPairs, facet(k.Scope)}, Pair: &[2]int{s, d}, Timeout: 60 * time.Second,
				Run: run})
		}
	}
	// The round's planted bug: one pair of a round runs a non-atomic
	// increment; the round must blame that pair and no other.
	b.plantedRound(k)
	b.add(Spec{Name: "alltoall", Variant: k.Name, Ranks: n, Expected: report.Pass,
		Labels: []report.Label{LabelAtomics, LabelPairs, facet(k.Scope)}, Timeout: 120 * time.Second,
		Run: func(c *harness.Ctx) error { return runAllToAll(c, k) }})
	b.add(Spec{Name: "alltoall", Variant: k.Name + ".stress", Ranks: n, Expected: report.Pass,
		Labels: []report.Label{LabelAtomics, LabelPairs, LabelStress, facet(k.Scope)}, Timeout: 120 * time.Second,
		Run: func(c *harness.Ctx) error { return runAllToAllStress(c, k) }})
	b.add(Spec{Name: "alltoall", Variant: "copy_kernel", Ranks: n, Expected: report.Pass,
		Labels: []report.Label{LabelPerf, LabelBandwidth, LabelKernel}, Timeout: 300 * time.Second,
		Run: func(c *harness.Ctx) error { return runAllToAllCopy(c) }})
}

// pairRound is one round of the tournament as a harness.Round: its members
// are both directions of every pair; planted names ordered pairs whose
// source and destination run the racy kernel instead.
func pairRound(b *builder, k kernels.Kernel, name string, pairs [][2]int, planted map[[2]int]bool) *harness.Round {
	n := b.o.Ranks
	ordered := append([][2]int(nil), pairs...)
	for _, p := range pairs {
		ordered = append(ordered, [2]int{p[1], p[0]})
	}
	rd := &harness.Round{Name: name}
	byID := map[string][2]int{}
	for _, p := range ordered {
		id := b.fullID("pairs", fmt.Sprintf("%s.r%dr%d", k.Name, p[0], p[1]), n)
		rd.Members = append(rd.Members, id)
		byID[id] = p
	}
	rd.Body = func(c *harness.Ctx, parts []*harness.Part) error {
		return runPairRound(c, k, name, ordered, parts, planted)
	}
	rd.Alone = func(c *harness.Ctx, id string) error {
		p := byID[id]
		return runPair(c, k, p[0], p[1])
	}
	return rd
}

// plantedRound adds the control of the round schedule: the first round of
// the tournament with the ordered pair (a→b) of its first pair racy. It
// meets its expected outcome (fail) only when that pair lost updates: a
// round that hands a pair's outcome to another member leaves the planted
// pair passing. Where the path itself is not atomic across GPUs (vmm-host)
// the other pairs lose updates too; they are named, and the planted pair
// still has to be among them.
func (b *builder) plantedRound(k kernels.Kernel) {
	rounds := harness.Tournament(b.o.Ranks)
	pairs := rounds[0]
	bad := pairs[0]
	b.add(Spec{Name: "pairs", Variant: "racy_pair_in_round", Ranks: b.o.Ranks, Expected: report.Fail,
		Labels: []report.Label{LabelPairs, LabelControl, LabelPlanted}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error {
			rd := pairRound(b, k, "planted round", pairs, map[[2]int]bool{bad: true})
			want := rd.Members[0]
			parts := make([]*harness.Part, len(rd.Members))
			for i, m := range rd.Members {
				parts[i] = &harness.Part{ID: m}
			}
			if err := rd.Body(c, parts); err != nil {
				return err
			}
			var caught string
			var others []string
			for _, p := range parts {
				if p.Err == nil {
					continue
				}
				if p.ID == want {
					caught = p.Err.Error()
					continue
				}
				others = append(others, p.ID)
			}
			if caught == "" {
				c.Note("planted racy pair r%dr%d was not caught among %d pairs run at once", bad[0], bad[1], len(parts))
				return nil
			}
			if others != nil {
				return harness.Failf("planted racy pair r%dr%d caught: %s; %d unplanted pairs lost updates too (this path is not atomic across devices): %v",
					bad[0], bad[1], caught, len(others), others)
			}
			return harness.Failf("planted racy pair r%dr%d caught, %d other pairs exact: %s", bad[0], bad[1], len(parts)-1, caught)
		}})
}

// runPairRound runs the ordered pairs of one round: the first half (one
// direction of every pair of the round) all at once, then the second half
// (the other direction). Each ordered pair (s, d) is runPair's shape: s
// adds to a word of d's memory through its mapping while d adds to the same
// word locally; each word belongs to one pair, so a lost update names it.
func runPairRound(c *harness.Ctx, k kernels.Kernel, name string, ordered [][2]int, parts []*harness.Part, planted map[[2]int]bool) error {
	if err := c.NeedPeer(true); err != nil {
		return err
	}
	mems, err := c.SharedAll(1 << 20)
	if err != nil {
		return err
	}
	racy := kernels.MustLookup("racy_u64_plain_sys")
	sz := sizing(c, k.Op)
	half := len(ordered) / 2
	for phase, lo := range []int{0, half} {
		// Each rank owns one word per phase, a page apart.
		off := uint64(phase) * 4096
		var ls []harness.Launch
		want := map[int]uint64{}
		for i := lo; i < lo+half; i++ {
			s, d := ordered[i][0], ordered[i][1]
			if err := c.PutU64(d, mems[d].Bufs[d], off, counterInit(k)); err != nil {
				return err
			}
			if planted[ordered[i]] {
				rz, pause := sizing(c, kernels.OpRacy), uint64(2000)
				if !c.Backend().GPU {
					rz, pause = size{1, 2, 20000}, 200
				} else {
					rz.iters = min(rz.iters, 20)
				}
				if err := c.Zero(d, mems[d].Bufs[d], off+8, racyBarBytes(2*uint64(rz.grid))); err != nil {
					return err
				}
				for j, r := range []int{s, d} {
					ls = append(ls, harness.Launch{Rank: r, Kernel: racy.Name, Grid: rz.grid, Block: rz.block, Args: map[string]wireArg{
						"target": harness.P(mems[d].Bufs[r], off), "bar": harness.P(mems[d].Bufs[r], off+8), "iters": harness.V(rz.iters),
						"block": harness.V(uint64(rz.block)), "pause": harness.V(pause), "parties": harness.V(racyParties(c, 2*uint64(rz.grid), uint64(j)*uint64(rz.grid))),
						"timeout_ns": harness.V(uint64(time.Second))}})
				}
				want[i] = 2 * rz.threads() * rz.iters
				continue
			}
			for _, r := range []int{s, d} {
				ls = append(ls, counterLaunch(r, k, sz, harness.P(mems[d].Bufs[r], off), counterOperand(k)))
			}
			want[i] = counterExpect(k, 2, sz.threads(), sz.iters)
		}
		el, err := c.Run(ls...)
		if err != nil {
			return err
		}
		for i := lo; i < lo+half; i++ {
			s, d := ordered[i][0], ordered[i][1]
			p := parts[i]
			p.Note("%s: %d pairs at once", name, half)
			if j := 2 * (i - lo); el[j] > 0 && !planted[ordered[i]] {
				p.Metric(pairAtomicRate, fmt.Sprintf("rank %d's launch elapsed, both ranks' ops (one word of rank %d's memory), %d pairs at once", s, d, half),
					float64(2*sz.threads()*sz.iters)/el[j].Seconds()/1e6)
			}
			for _, r := range []int{d, s} {
				got, err := c.U64(r, mems[d].Bufs[r], off)
				if err != nil {
					return err
				}
				if got != want[i] {
					p.Err = harness.Failf("rank %d reads %#x, expected %#x (ranks %d and %d at once with %d other pairs); lost updates: %d",
						r, got, want[i], s, d, half-1, int64(want[i]-got))
					break
				}
			}
		}
	}
	return nil
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
		c.Metric(pairAtomicRate, fmt.Sprintf("rank %d's launch elapsed, both ranks' ops (one word of rank %d's memory)", s, d),
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

// runAllToAllStress loads every link at once with a word per ordered pair:
// in step t every rank r adds to its own word in rank (r+t) mod n's memory,
// all ranks at once (each rank sends to one peer and receives from
// another), so after n−1 steps every ordered pair ran its atomics while
// every other rank did the same. A rank runs one launch at a time and a
// counter kernel has one target, so this is the most ordered pairs one
// launch per rank can load together (n of n·(n−1)). The source's threads
// all contend on the pair's word through the link: an atomic that the link
// breaks into a read and a write loses updates even with one source.
func runAllToAllStress(c *harness.Ctx, k kernels.Kernel) error {
	if err := c.NeedPeer(true); err != nil {
		return err
	}
	n := c.N()
	mems, err := c.SharedAll(uint64(n) * 4096)
	if err != nil {
		return err
	}
	sz := sizing(c, k.Op)
	word := func(s int) uint64 { return uint64(s) * 4096 } // rank s's word in any owner, a page apart
	for d := 0; d < n; d++ {
		for s := 0; s < n; s++ {
			if s != d {
				if err := c.PutU64(d, mems[d].Bufs[d], word(s), counterInit(k)); err != nil {
					return err
				}
			}
		}
	}
	for t := 1; t < n; t++ {
		ls := make([]harness.Launch, n)
		for r := range ls {
			d := (r + t) % n
			ls[r] = counterLaunch(r, k, sz, harness.P(mems[d].Bufs[r], word(r)), counterOperand(k))
		}
		_, wins, err := c.RunTimed(ls...)
		if err != nil {
			return err
		}
		// One clock for every rank: the step lasts from the first launch's
		// start to the last one's end.
		if span, ok := harness.Span(wins...); ok && span > 0 {
			c.Metric(report.MetricKind{Name: "alltoall_atomic_rate", Unit: "Mops/s", Better: report.Higher}, fmt.Sprintf("every rank's ops in one step (%d ordered pairs at once) / (last end - first start), CLOCK_MONOTONIC", n),
				float64(uint64(n)*sz.threads()*sz.iters)/span.Seconds()/1e6)
		}
	}
	want := counterExpect(k, 1, sz.threads(), sz.iters)
	var bad []string
	for d := 0; d < n; d++ {
		for s := 0; s < n; s++ {
			if s == d {
				continue
			}
			got, err := c.U64(d, mems[d].Bufs[d], word(s))
			if err != nil {
				return err
			}
			if got != want {
				bad = append(bad, fmt.Sprintf("r%dr%d %#x (lost %d)", s, d, got, int64(want-got)))
			}
		}
	}
	if bad != nil {
		return harness.Failf("expected %#x in every ordered pair's word after %d steps of %d pairs at once: %s", want, n-1, n, strings.Join(bad, ", "))
	}
	c.Note("%d steps of %d ordered pairs at once, all %d ordered pairs exact", n-1, n, n*(n-1))
	return nil
}

// runAllToAllCopy is nvbandwidth's all-to-all shape with one launch per
// rank: in step t every rank's copy kernel writes its local buffer into
// rank (r+t) mod n's memory, all at once, so every GPU sends and receives
// at once; the metric is the step's total bytes over its slowest copy.
// Every destination is checked by its own device.
func runAllToAllCopy(c *harness.Ctx) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	n := c.N()
	size := copySize(c)
	if !c.Backend().GPU {
		// Goroutine copies and sums of n×16 MiB per step took 16 s at 8
		// ranks; 2 MiB still moves every page through every mapping.
		size = 2 << 20
	}
	mems, err := c.SharedAll(size)
	if err != nil {
		return err
	}
	locals := make([]int, n)
	scratch := make([]int, n)
	for r := range locals {
		if locals[r], err = c.Local(r, size); err != nil {
			return err
		}
		if scratch[r], err = c.ScratchWords(r, 64); err != nil {
			return err
		}
	}
	copyK := kernels.MustLookup("copy_b128_plain_dev")
	grid, block := uint32(c.W.Units(0)*4), uint32(256)
	if !c.Backend().GPU {
		grid, block = 1, 2
	}
	nthreads := uint64(grid) * uint64(block)
	val := func(r int) uint64 { return 0x0101010101010101 * uint64(r+1) }
	for r := range locals {
		if err := fillU64(c, r, locals[r], val(r), size, grid, block); err != nil {
			return err
		}
	}
	launches := func(t int) []harness.Launch {
		ls := make([]harness.Launch, n)
		for r := range ls {
			d := (r + t) % n
			ls[r] = harness.Launch{Rank: r, Kernel: copyK.Name, Grid: grid, Block: block, Args: map[string]wireArg{
				"dst": harness.P(mems[d].Bufs[r], 0), "src": harness.P(locals[r], 0), "nbytes": harness.V(size),
				"block": harness.V(uint64(block)), "nthreads": harness.V(nthreads)}}
		}
		return ls
	}
	for t := 1; t < n; t++ {
		for r := range mems {
			if err := fillU64(c, r, mems[r].Bufs[r], 0, size, grid, block); err != nil {
				return err
			}
		}
		// An untimed copy first warms the peer mappings' TLB entries, as
		// in the per-pair copies (runCopyOpts).
		if _, err := c.Run(launches(t)...); err != nil {
			return err
		}
		_, wins, err := c.RunTimed(launches(t)...)
		if err != nil {
			return err
		}
		for d := range mems {
			s := (d - t + n) % n
			sum, err := deviceSum(c, d, mems[d].Bufs[d], scratch[d], size, grid, block)
			if err != nil {
				return err
			}
			if want := val(s) * (size / 8); sum != want {
				return harness.Failf("all-to-all copy step %d: rank %d's buffer (written by rank %d) sums to %#x, expected %#x", t, d, s, sum, want)
			}
		}
		// One clock for every rank, as for the both-directions copies: the
		// step's bytes over its first start to its last end.
		span, ok := harness.Span(wins...)
		if !ok || span <= 0 {
			return fmt.Errorf("all-to-all copy step %d: a rank reported no CLOCK_MONOTONIC window (%+v)", t, wins)
		}
		flows := make([]harness.Flow, n)
		for r := range flows {
			flows[r] = harness.Flow{Exec: r, Src: c.MemLoc(r), Dst: c.MemLoc((r + t) % n)}
		}
		method := fmt.Sprintf("copy kernel, TLB-warm, %d MiB per rank, %d ranks each writing a peer at once: all bytes / (last end - first start), CLOCK_MONOTONIC", size>>20, n)
		if err := c.Bandwidth("bw_alltoall_kernel_gbps", method, c.CopyCeiling(flows...), float64(uint64(n)*size)/span.Seconds()/1e9); err != nil {
			return err
		}
	}
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
	b.add(Spec{Name: "cpugpu", Variant: k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{LabelAtomics, LabelCPU, facet(k.Scope)}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error { return runCPUGPU(c, k, false) }})
	b.add(Spec{Name: "cpugpu", Variant: "racy_cpu", Ranks: b.o.Ranks, Expected: report.Fail,
		Labels: []report.Label{LabelAtomics, LabelCPU, LabelControl, LabelPlanted}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error { return runCPUGPU(c, k, true) }})
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
	if !c.Backend().GPU {
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
