package specs

import (
	"fmt"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/kernels"
	"p2patomics/specs/sampling"
)

// Metrics measured by more than one spec, declared once: their name,
// unit and the direction every judge reads (report.MetricKind). A metric
// measured in one place declares its kind at its Ctx.Metric call; a
// bandwidth is declared by Ctx.Bandwidth.
var (
	atomicRate     = report.MetricKind{Name: "atomic_rate", Unit: "Mops/s", Better: report.Higher}
	pairAtomicRate = report.MetricKind{Name: "pair_atomic_rate", Unit: "Mops/s", Better: report.Higher}
)

// perf cases measure what a path is worth: copy bandwidth with the copy
// engine and with a copy kernel, both directions, per ordered rank pair, and
// the round-trip latency of a dependent chain of system-scope atomics.
// Some of their metrics are measured and reported but not gated: the
// both-direction copies, the one-launch round trip on GPU memory and the
// vmm-host spread atomics move more between healthy runs than a gate can
// tolerate; specs/ungated lists them with the reasons, for the perf gate.
func (b *builder) perf() {
	n := b.o.Ranks
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s == d {
				continue
			}
			for _, eng := range []report.Label{LabelCE, LabelKernel} {
				for _, dir := range []report.Label{LabelWrite, LabelRead} {
					variant := fmt.Sprintf("copy_%s_%s.r%dr%d", eng, dir, s, d)
					sp := b.samplePlan(variant)
					b.add(Spec{Name: "perf", Variant: variant, Ranks: n, Expected: report.Pass,
						Labels: []report.Label{LabelPerf, LabelBandwidth, eng, dir}, Pair: &[2]int{s, d}, Timeout: 120 * time.Second,
						Run: func(c *harness.Ctx) error { return runCopy(c, s, d, eng, dir, sp) }})
				}
			}
		}
	}
	// The copy check's planted bug: a "copy" that moves nothing must fail
	// the same check every timed copy passes.
	if n >= 2 {
		b.add(Spec{Name: "copycheck", Variant: "skipped_copy", Ranks: n, Expected: report.Fail,
			Labels: []report.Label{LabelBandwidth, LabelControl, LabelPlanted}, Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error { return runCopyOpts(c, 0, 1, LabelCE, LabelWrite, true, samplePlan{}) }})
	}
	// Both directions at once: rank s pushes into d while d pushes into s.
	for s := 0; s < n; s++ {
		for d := s + 1; d < n; d++ {
			for _, eng := range []report.Label{LabelCE, LabelKernel} {
				variant := fmt.Sprintf("copy_%s_bidir.r%dr%d", eng, s, d)
				sp := b.samplePlan(variant)
				b.add(Spec{Name: "perf", Variant: variant, Ranks: n, Expected: report.Pass,
					Labels: []report.Label{LabelPerf, LabelBandwidth, eng, LabelBidir}, Pair: &[2]int{s, d}, Timeout: 120 * time.Second,
					Run: func(c *harness.Ctx) error { return runBidir(c, s, d, eng, sp) }})
			}
		}
	}
	// Atomic throughput: rank 0 on its own memory (local), rank 1 on rank
	// 0's (peer), or every rank on rank 0's at once (all; contended only:
	// all threads of all ranks on one word). Contended is one word, spread
	// a word per thread.
	for _, s := range kernels.Scopes {
		for _, pat := range []kernels.Op{kernels.OpAdd, kernels.OpSpread} {
			for _, where := range []report.Label{LabelLocal, LabelPeer, LabelAll} {
				if where == LabelAll && pat == kernels.OpSpread {
					continue
				}
				k := kernels.MustLookup(kernels.Name(pat, kernels.U64, kernels.Relaxed, s))
				name := LabelContended
				if pat == kernels.OpSpread {
					name = facet(pat)
				}
				variant := fmt.Sprintf("atomic_%s_%s_%s", name, where, s)
				sp := b.samplePlan(variant)
				b.add(Spec{Name: "perf", Variant: variant, Ranks: n, Expected: report.Pass,
					Labels: []report.Label{LabelPerf, LabelAtomics, name, where, facet(s)}, Timeout: 60 * time.Second,
					Run: func(c *harness.Ctx) error { return runAtomicRate(c, k, where, sp) }})
			}
		}
	}
	// Round trips: system scope between every ordered pair of ranks (the
	// first rank starts the chain and times it), device scope with both
	// sides in one launch on rank 0's device, on its own memory.
	for _, sc := range kernels.Scopes {
		pp := kernels.MustLookup(kernels.Name(kernels.OpPingPong, kernels.U64, kernels.AcqRel, sc))
		if sc == kernels.Dev {
			sp := b.samplePlan("pingpong_latency_local")
			b.add(Spec{Name: "perf", Variant: "pingpong_latency_local", Ranks: n, Expected: report.Pass,
				Labels: []report.Label{LabelPerf, LabelLatency, facet(sc)}, Pair: &[2]int{0, 0}, Timeout: 60 * time.Second,
				Run: func(c *harness.Ctx) error { return runPingPong(c, pp, 0, 0, sp) }})
			continue
		}
		for s := 0; s < n; s++ {
			for d := 0; d < n; d++ {
				if s != d {
					variant := fmt.Sprintf("pingpong_latency.r%dr%d", s, d)
					sp := b.samplePlan(variant)
					b.add(Spec{Name: "perf", Variant: variant, Ranks: n, Expected: report.Pass,
						Labels: []report.Label{LabelPerf, LabelLatency, facet(sc)}, Pair: &[2]int{s, d}, Timeout: 60 * time.Second,
						Run: func(c *harness.Ctx) error { return runPingPong(c, pp, s, d, sp) }})
				}
			}
		}
	}
}

// runPingPong times a dependent chain of acquire/release hand-overs. Each
// side polls a flag in its own memory and writes the other's.
// Side 0 runs on rank a, side 1 on rank b; a == b puts both sides in one
// launch on a's device (local). One sample is one launch per side that runs
// the chain at each of sampling.Placements flag placements in turn (the
// round trip on one GPU depends on the flags' L2 slice); side 0's elapsed
// time over all its rounds is the sample.
func runPingPong(c *harness.Ctx, pp kernels.Kernel, a, b int, sp samplePlan) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	rounds := uint64(625) // per placement: 40 000 round trips per sample
	if !c.Backend().GPU {
		// 640 round trips a sample: a CPU's latency is not what the
		// suite measures, and 50 a placement cost 3.7 s of a host run.
		rounds = 10
	}
	local := a == b
	f0, err := c.Shared(a, sampling.PlacementSpan, true) // side 0's flags: rank a's memory
	if err != nil {
		return err
	}
	f1 := f0 // side 1's flags: 64 bytes further, in rank b's memory (a's when local)
	if !local {
		if f1, err = c.Shared(b, sampling.PlacementSpan, true); err != nil {
			return err
		}
	}
	outs := make([]int, c.N())
	for _, r := range []int{a, b} {
		if outs[r], err = c.Local(r, 64); err != nil {
			return err
		}
	}
	arg := func(r, role int, rounds uint64, timeout time.Duration) map[string]wireArg {
		own, peer := harness.P(f0.Bufs[r], 0), harness.P(f1.Bufs[r], 64)
		if role == 1 {
			own, peer = peer, own
		}
		return map[string]wireArg{"flag": own, "peer": peer, "out": harness.P(outs[r], 0), "n": harness.V(rounds),
			"role": harness.V(uint64(role)), "timeout_ns": harness.V(uint64(timeout)),
			"places": harness.V(sampling.Placements), "stride": harness.V(sampling.Stride)}
	}
	launches := func(rounds uint64, timeout time.Duration) []harness.Launch {
		if local {
			return []harness.Launch{{Rank: a, Kernel: pp.Name, Grid: 2, Block: 1, Args: arg(a, 2, rounds, timeout)}}
		}
		return []harness.Launch{{Rank: a, Kernel: pp.Name, Grid: 1, Block: 1, Args: arg(a, 0, rounds, timeout)},
			{Rank: b, Kernel: pp.Name, Grid: 1, Block: 1, Args: arg(b, 1, rounds, timeout)}}
	}
	if !local && c.W.SharedGPU(a, b) {
		return sharedPingPong(c, pp, a, b, f0, f1, outs, sp)
	}
	warm := rounds
	if c.Backend().GPU {
		// The warm-up runs an eighth of the rounds at every placement; the
		// timed samples are sized from it (pingPongRounds).
		warm = max(1, rounds/pingPongWarmShare)
	}
	metric := report.MetricKind{Name: "rtt_" + string(pp.Scope) + "_us", Unit: "us", Better: report.Lower}
	var got []float64
	for sample := 0; sample <= todayTimed && !sp.done(c, metric.Name, got); sample++ {
		n := rounds
		if sample == 0 {
			n = warm
		}
		total := n * sampling.Placements
		// The warm-up polls with a bound, so a path that loses a flag ends
		// as fail; once it has delivered every flag, the timed samples poll
		// without one (the bound's bookkeeping cost 6.6% on one H200; a flag
		// lost now would end as the case's timeout).
		timeout := time.Duration(0)
		if sample == 0 {
			timeout = 5 * time.Second
		}
		ls := launches(n, timeout)
		// Every placement's flags start at 0, cleared by host writes (one per
		// placement and side). One fill kernel over each flag buffer instead
		// moved the one-GPU round trip from 0.94 to 1.16 µs on 2xH200
		// (results/h200x2-580.159.04/review-check/), so the clears stay.
		for p := 0; p < sampling.Placements; p++ {
			at := sampling.FlagOffset(p)
			if err := c.Zero(a, f0.Bufs[a], at, 128); err != nil {
				return err
			}
			if !local {
				if err := c.Zero(b, f1.Bufs[b], at, 128); err != nil {
					return err
				}
			}
		}
		el, err := c.Run(ls...)
		if err != nil {
			return err
		}
		done, err := c.U64(a, outs[a], 0)
		if err != nil {
			return err
		}
		if done != total {
			st, _ := c.U64(a, outs[a], 16)
			return harness.Failf("ping-pong stopped after %d of %d rounds (placement %d, flag last seen %d)", done, total, done/n, st)
		}
		if sample == 0 {
			if c.Backend().GPU {
				rounds = pingPongRounds(rounds, warm, el[0])
			}
			continue // warm-up
		}
		got = append(got, el[0].Seconds()*1e6/float64(total))
		c.Metric(metric, fmt.Sprintf("side 0 kernel elapsed / rounds (dependent acquire/release chain, local polls, posted stores), %d rounds at each of %d flag placements in one launch, unbounded polls after a bounded warm-up", rounds, sampling.Placements),
			got[len(got)-1])
	}
	return nil
}

// A ping-pong's warm-up runs 1/pingPongWarmShare of the rounds at every
// placement, with bounded polls; each timed sample then runs about
// pingPongSampleTarget (pingPongRounds). On device memory 625 rounds a
// placement (40 000 round trips of about 1 µs) are already that long and
// stay; on host memory (vmm-host, 4.2 µs a round trip on one H100) they
// took 167 ms a sample, six samples 1.05 s of the one-GPU suite, for a
// metric whose within-run CV was 0.11 % against a 40 % tolerance.
const (
	pingPongWarmShare    = 8
	pingPongSampleTarget = 50 * time.Millisecond
)

// pingPongRounds is a timed sample's rounds per placement: about
// pingPongSampleTarget at the round trip the warm-up measured (warm rounds
// a placement in el), at least warm, at most most (today's 625).
func pingPongRounds(most, warm uint64, el time.Duration) uint64 {
	return min(most, sampling.Iters(warm, el, pingPongSampleTarget))
}

// Shared-GPU ping-pong bounds: each poll gives up after sharedPollBound,
// the warm-up runs sharedWarmRounds round trips, and each timed sample
// about sharedSampleTarget, at least sharedMinRounds and at most the
// one-GPU-per-rank count.
const (
	sharedPollBound    = 2 * time.Second
	sharedWarmRounds   = 4
	sharedMinRounds    = 4
	sharedSampleTarget = 50 * time.Millisecond
)

// sharedPingPong is the ping-pong between two processes whose ranks share
// one GPU. Without MPS their kernels are time-sliced, not resident
// together: each hand-over waits for the other context's time slice, so
// the 40 000-round chain of the one-GPU-per-rank case ran into the case's
// 60 s timeout. This measures what a runtime engineer's users get there
// (the time-sliced round trip, or with MPS the co-resident one) with a
// bounded number of rounds at one flag placement, every poll bounded,
// under its own metric name so it is never compared with a link's round
// trip. docs/PERFORMANCE.md says why this measures rather than skips.
func sharedPingPong(c *harness.Ctx, pp kernels.Kernel, a, b int, f0, f1 *harness.Mem, outs []int, sp samplePlan) error {
	mps := "no MPS: kernels time-sliced"
	if c.W.MPS(a) && c.W.MPS(b) {
		mps = "MPS: kernels co-resident"
	}
	c.Note("shared-gpu: ranks %d and %d share GPU %s (%s); round trip measured with bounded rounds", a, b, c.W.DeviceKey(a), mps)
	run := func(rounds uint64) (time.Duration, error) {
		for _, z := range [][2]int{{a, f0.Bufs[a]}, {b, f1.Bufs[b]}} {
			if err := c.Zero(z[0], z[1], sampling.FlagOffset(0), 128); err != nil {
				return 0, err
			}
		}
		arg := func(r, role int) map[string]wireArg {
			own, peer := harness.P(f0.Bufs[r], 0), harness.P(f1.Bufs[r], 64)
			if role == 1 {
				own, peer = peer, own
			}
			return map[string]wireArg{"flag": own, "peer": peer, "out": harness.P(outs[r], 0), "n": harness.V(rounds),
				"role": harness.V(uint64(role)), "timeout_ns": harness.V(uint64(sharedPollBound)),
				"places": harness.V(1), "stride": harness.V(sampling.Stride)}
		}
		el, err := c.Run(harness.Launch{Rank: a, Kernel: pp.Name, Grid: 1, Block: 1, Args: arg(a, 0)},
			harness.Launch{Rank: b, Kernel: pp.Name, Grid: 1, Block: 1, Args: arg(b, 1)})
		if err != nil {
			return 0, err
		}
		done, err := c.U64(a, outs[a], 0)
		if err != nil {
			return 0, err
		}
		if done != rounds {
			st, _ := c.U64(a, outs[a], 16)
			return 0, harness.Failf("shared-GPU ping-pong stopped after %d of %d rounds (a poll waited %v; flag last seen %d)", done, rounds, sharedPollBound, st)
		}
		return el[0], nil
	}
	warm, err := run(sharedWarmRounds)
	if err != nil {
		return err
	}
	rounds := sampling.Iters(sharedWarmRounds, warm, sharedSampleTarget)
	rounds = min(max(rounds, sharedMinRounds), 625*sampling.Placements)
	metric := report.MetricKind{Name: "rtt_" + string(pp.Scope) + "_shared_gpu_us", Unit: "us", Better: report.Lower}
	for got := []float64(nil); !sp.done(c, metric.Name, got); {
		el, err := run(rounds)
		if err != nil {
			return err
		}
		got = append(got, el.Seconds()*1e6/float64(rounds))
		c.Metric(metric, fmt.Sprintf("shared-gpu (%s): side 0 kernel elapsed / rounds, %d rounds at one flag placement, every poll bounded by %v", mps, rounds, sharedPollBound),
			got[len(got)-1])
	}
	return nil
}

// fillU64 writes v into every 64-bit word of size bytes of buf in rank,
// with the grid the copy kernels use. The fill is witnessed: a check that
// relies on it (a copy's destination cleared, a source's pattern) would
// otherwise read whatever the memory held before.
func fillU64(c *harness.Ctx, rank, buf int, v, size uint64, grid, block uint32) error {
	return c.RunWitnessed(harness.Launch{Rank: rank, Kernel: "fill_u64_plain_dev", Grid: grid, Block: block, Args: map[string]wireArg{
		"dst": harness.P(buf, 0), "value": harness.V(v), "n": harness.V(size / 8), "block": harness.V(uint64(block)),
		"nthreads": harness.V(uint64(grid) * uint64(block))}}, size/8, "words")
}

// deviceSum is the 64-bit sum of size bytes of buf in rank, added up by
// rank's own device (sum_u64_relaxed_dev) into out, a scratch word of
// rank's: reading a GiB back to the host took 0.2 s per check. The sum is
// witnessed: a sum that did not run reads 0, which matched a copy that did
// not run either (docs/FAULTS.md).
func deviceSum(c *harness.Ctx, rank, buf, out int, size uint64, grid, block uint32) (uint64, error) {
	if err := c.Zero(rank, out, 0, 8); err != nil {
		return 0, err
	}
	if err := c.RunWitnessed(harness.Launch{Rank: rank, Kernel: "sum_u64_relaxed_dev", Grid: grid, Block: block, Args: map[string]wireArg{
		"src": harness.P(buf, 0), "out": harness.P(out, 0), "n": harness.V(size / 8), "block": harness.V(uint64(block)),
		"nthreads": harness.V(uint64(grid) * uint64(block))}}, size/8, "words"); err != nil {
		return 0, err
	}
	return c.U64(rank, out, 0)
}

// copySize is one timed copy's size: 1 GiB on a GPU (2.7 ms at 390 GB/s,
// 20 times the 50 MiB L2 of an H200). At 256 MiB (0.7 ms) a single
// stall of some tens of µs moved a sample by 2-11%; nvbandwidth gets the
// same effect by timing 16 copies of 512 MiB per sample. Host memory
// (vmm-host) is reached over PCIe at about 50 GB/s, where 1 GiB took 21 ms
// a copy and its ten cases 31 s of the one-GPU suite's 65 s: 256 MiB
// there is 5 ms a copy, twice the NVLink copy's length, still 5 times the
// L2. 4 MiB on the host backend: each copy is filled, copied and summed
// by one goroutine pair, and at 16 MiB the ten host copy cases took 12 s
// of a 37 s host suite.
func copySize(c *harness.Ctx) uint64 {
	switch {
	case !c.Backend().GPU:
		return 4 << 20
	case c.MemLoc(0).Host:
		return 256 << 20
	}
	return 1 << 30
}

// copySamples is a copy case's samples, the warm-up first. On a GPU its
// metric is gated: 5 timed samples, as the bands were recorded. Elsewhere
// (the host backend) the gate judges none of its metrics (perf.Gated: GPU
// backends only): it takes the least a reported metric needs,
// perf.MinSamples timed (issue 52, run sizes from power: the host suite's
// ten copy cases took 0.12-0.25 s each at 6).
func copySamples(gpu bool) int {
	if gpu {
		return 1 + todayTimed
	}
	return perf.MinSamples + 1
}

// runCopy moves size bytes between rank s's local buffer and memory owned
// by rank d, from rank s: "write" pushes into d, "read" pulls from d.
func runCopy(c *harness.Ctx, s, d int, eng, dir report.Label, sp samplePlan) error {
	return runCopyOpts(c, s, d, eng, dir, false, sp)
}

// runCopyOpts is runCopy; planted skips the copies (16 MiB, one sample), so
// the data check must fail.
func runCopyOpts(c *harness.Ctx, s, d int, eng, dir report.Label, planted bool, sp samplePlan) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	size, samples := copySize(c), copySamples(c.Backend().GPU)
	if planted {
		size, samples = 16<<20, 1
	}
	local, err := c.Local(s, size)
	if err != nil {
		return err
	}
	remote, err := c.Shared(d, size, true)
	if err != nil {
		return err
	}
	copyK := kernels.MustLookup("copy_b128_plain_dev")
	grid, block := uint32(c.W.Units(s)*4), uint32(256)
	if !c.Backend().GPU {
		grid, block = 1, 2
	}
	nthreads := uint64(grid) * uint64(block)
	// Fill the source with a value, the destination with another, so the
	// sum check after each copy proves the bytes moved.
	srcRank, srcBuf, dstRank, dstBuf := s, local, d, remote.Bufs[d]
	if dir == LabelRead {
		srcRank, srcBuf, dstRank, dstBuf = d, remote.Bufs[d], s, local
	}
	fillBuf := func(rank, buf int, v uint64) error { return fillU64(c, rank, buf, v, size, grid, block) }
	// s addresses the remote buffer through its import.
	sSrc, sDst := local, remote.Bufs[s]
	if dir == LabelRead {
		sSrc, sDst = remote.Bufs[s], local
	}
	name := fmt.Sprintf("bw_%s_%s_gbps", eng, dir)
	ceil := c.CopyCeiling(harness.Flow{Exec: s, Src: c.MemLoc(srcRank), Dst: c.MemLoc(dstRank)})
	scratch, err := c.ScratchWords(dstRank, 64)
	if err != nil {
		return err
	}
	var got []float64
	for sample := 0; sample < samples && !sp.done(c, name, got); sample++ {
		val := uint64(0x0101010101010101) * uint64(sample+1)
		if err := fillBuf(srcRank, srcBuf, val); err != nil {
			return err
		}
		if err := fillBuf(dstRank, dstBuf, 0); err != nil {
			return err
		}
		copyOnce := func() (time.Duration, string, error) {
			if planted {
				return time.Millisecond, "planted: no copy", nil
			}
			if eng == LabelCE {
				return c.Copy(s, sDst, 0, sSrc, 0, size)
			}
			els, err := c.Run(harness.Launch{Rank: s, Kernel: copyK.Name, Grid: grid, Block: block, Args: map[string]wireArg{
				"dst": harness.P(sDst, 0), "src": harness.P(sSrc, 0), "nbytes": harness.V(size), "block": harness.V(uint64(block)), "nthreads": harness.V(nthreads)}})
			if len(els) == 0 {
				return 0, "", err
			}
			return els[0], "kernel elapsed", err
		}
		// The fills above sweep each GPU's whole buffer and evict the
		// peer mapping's TLB entries; an untimed copy first warms them, as
		// a standalone loop of back-to-back copies has them warm. With it
		// (and the owner's grant limited to its own device) the harness
		// reads within 3% of the reference on 2xH200, 22% below before
		// (docs/PERFORMANCE.md).
		if _, _, err := copyOnce(); err != nil {
			return err
		}
		el, method, err := copyOnce()
		if err != nil {
			return err
		}
		method += ", TLB-warm"
		sum, err := deviceSum(c, dstRank, dstBuf, scratch, size, grid, block)
		if err != nil {
			return err
		}
		if want := val * (size / 8); sum != want {
			return harness.Failf("copy %s/%s sample %d: destination sums to %#x, expected %#x", eng, dir, sample, sum, want)
		}
		if sample == 0 || el <= 0 {
			continue // warm-up
		}
		where := ""
		if c.W.SharedGPU(s, d) {
			where = " (shared GPU: no link between GPUs)"
		}
		got = append(got, float64(size)/el.Seconds()/1e9)
		if err := c.Bandwidth(name, fmt.Sprintf("%s, %d MiB, rank %d %s rank %d%s", method, size>>20, s, map[report.Label]string{LabelWrite: "→", LabelRead: "←"}[dir], d, where),
			ceil, got[len(got)-1]); err != nil {
			return err
		}
	}
	return nil
}

// runBidir copies size bytes from each of s and d into the other at the same
// time; the metric is the sum of both directions.
func runBidir(c *harness.Ctx, s, d int, eng report.Label, sp samplePlan) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	x, err := newBidir(c, s, d, eng)
	if err != nil {
		return err
	}
	ceil := c.CopyCeiling(harness.Flow{Exec: s, Src: c.MemLoc(s), Dst: c.MemLoc(d)}, harness.Flow{Exec: d, Src: c.MemLoc(d), Dst: c.MemLoc(s)})
	method := fmt.Sprintf("both directions' bytes (%d MiB each) / (last end - first start), CLOCK_MONOTONIC read by each rank around its issue and synchronise", x.size>>20)
	if c.W.SharedGPU(s, d) {
		method += "; shared GPU: both copies run on one device (time-sliced kernels unless MPS runs), one device's memory, no link"
	}
	name := "bw_" + eng.String() + "_bidir_gbps"
	var got []float64
	for sample := 0; sample <= todayTimed && !sp.done(c, name, got); sample++ {
		wins, err := x.sample(sample)
		if err != nil {
			return err
		}
		if sample == 0 {
			continue
		}
		// One clock for both ranks: each side's own elapsed time says
		// nothing about whether the copies overlapped (on one GPU they
		// ran one after the other and the sum of the two rates read
		// 4.26 TB/s, above what its HBM can move).
		span, ok := harness.Span(wins...)
		if !ok || span <= 0 {
			return fmt.Errorf("bidirectional %s copy sample %d: a rank reported no CLOCK_MONOTONIC window (%+v)", eng, sample, wins)
		}
		got = append(got, 2*float64(x.size)/span.Seconds()/1e9)
		if err := c.Bandwidth(name, method, ceil, got[len(got)-1]); err != nil {
			return err
		}
	}
	return nil
}

// bidir is a bidirectional copy case between ranks s and d: each side's
// shared buffer (the other side's copy destination), its local source, its
// scratch words for the sums, and the copy kernel's launch shape.
type bidir struct {
	c               *harness.Ctx
	s, d            int
	eng             report.Label // LabelCE (copy engine) or LabelKernel
	size            uint64
	ms              map[int]*harness.Mem
	locals, scratch map[int]int
	grid, block     uint32
}

func newBidir(c *harness.Ctx, s, d int, eng report.Label) (*bidir, error) {
	// The one-way size, per side: the two copies start from two processes
	// some tens of µs apart, which at 256 MiB spread the samples by up to
	// 3% (both directions overlap for less of a short copy); at 1 GiB by
	// 0.3%.
	x := &bidir{c: c, s: s, d: d, eng: eng, size: copySize(c), ms: map[int]*harness.Mem{}, locals: map[int]int{}, scratch: map[int]int{}}
	for _, r := range []int{s, d} {
		m, err := c.Shared(r, x.size, true)
		if err != nil {
			return nil, err
		}
		x.ms[r] = m
		if x.locals[r], err = c.Local(r, x.size); err != nil {
			return nil, err
		}
	}
	x.grid, x.block = uint32(c.W.Units(s)*4), uint32(256)
	if !c.Backend().GPU {
		x.grid, x.block = 1, 2
	}
	for _, r := range []int{s, d} {
		l, err := c.ScratchWords(r, 64)
		if err != nil {
			return nil, err
		}
		x.scratch[r] = l
	}
	return x, nil
}

// pairs are the two directions: (writer, destination's owner).
func (x *bidir) pairs() [][2]int { return [][2]int{{x.s, x.d}, {x.d, x.s}} }

// sample fills both sources with this sample's pattern, clears both
// destinations, runs an untimed round then a timed one, and checks that
// each destination holds its writer's pattern; it returns the timed
// round's windows.
func (x *bidir) sample(sample int) ([]harness.Window, error) {
	// New data each sample, destinations cleared, so the sums below
	// prove this sample's bytes moved.
	pattern := func(writer int) uint64 { return uint64(0x0101010101010101) * uint64(sample+1) * uint64(writer+1) }
	for _, pr := range x.pairs() {
		if err := fillU64(x.c, pr[0], x.locals[pr[0]], pattern(pr[0]), x.size, x.grid, x.block); err != nil {
			return nil, err
		}
		if err := fillU64(x.c, pr[1], x.ms[pr[1]].Bufs[pr[1]], 0, x.size, x.grid, x.block); err != nil {
			return nil, err
		}
	}
	// An untimed round first, as the one-way cases do: the fills and
	// the sums sweep the GPUs' TLBs.
	if _, err := x.both(); err != nil {
		return nil, err
	}
	wins, err := x.both()
	if err != nil {
		return nil, err
	}
	// Verify: each destination now holds its writer's pattern. The
	// expected sum is the host's arithmetic on the pattern, never a
	// second sum by the same kernel: two sums that did not run, or two
	// buffers a copy that did not run left as they were, agree.
	for _, pr := range x.pairs() {
		want := pattern(pr[0]) * (x.size / 8)
		got, err := deviceSum(x.c, pr[1], x.ms[pr[1]].Bufs[pr[1]], x.scratch[pr[1]], x.size, x.grid, x.block)
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, harness.Failf("bidirectional %s copy sample %d: rank %d's buffer sums %#x, writer rank %d's source %#x", x.eng, sample, pr[1], got, pr[0], want)
		}
	}
	return wins, nil
}

// both runs the two copies at once, by copy engine or by kernel, and
// returns each side's CLOCK_MONOTONIC window.
func (x *bidir) both() ([]harness.Window, error) {
	c := x.c
	if x.eng == LabelCE {
		wins := make([]harness.Window, 2)
		errs := make(chan error, 2)
		for i, pr := range x.pairs() {
			go func() {
				var err error
				_, wins[i], _, err = c.CopyTimed(pr[0], x.ms[pr[1]].Bufs[pr[0]], 0, x.locals[pr[0]], 0, x.size)
				errs <- err
			}()
		}
		// Collect both answers before returning: a rank still talking
		// must not meet the teardown's requests.
		var first error
		for range 2 {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return wins, first
	}
	copyK := kernels.MustLookup("copy_b128_plain_dev")
	nthreads := uint64(x.grid) * uint64(x.block)
	var ls []harness.Launch
	for _, pr := range x.pairs() {
		ls = append(ls, harness.Launch{Rank: pr[0], Kernel: copyK.Name, Grid: x.grid, Block: x.block, Args: map[string]wireArg{
			"dst": harness.P(x.ms[pr[1]].Bufs[pr[0]], 0), "src": harness.P(x.locals[pr[0]], 0), "nbytes": harness.V(x.size),
			"block": harness.V(uint64(x.block)), "nthreads": harness.V(nthreads)}})
	}
	_, wins, err := c.RunTimed(ls...)
	return wins, err
}

// runAtomicRate measures atomic throughput on words of rank 0's memory:
// rank 0 alone (local), rank 1 alone through its mapping (peer), or every
// rank at once (all). The count is checked after every sample.
func runAtomicRate(c *harness.Ctx, k kernels.Kernel, where report.Label, sp samplePlan) error {
	sz := sizing(c, k.Op)
	size := max(sz.threads()*8, 4096)
	// bufs[r] is rank r's id of the counters.
	var bufs []int
	if where == LabelLocal {
		// Rank 0 on its own memory asks nothing of any link: a PCIe pair
		// without P2P atomics (or without peer access) still has a working
		// local path to measure, and a shared allocation would import into
		// ranks that never touch it (issue 40, review 3 P9).
		buf, err := c.Local(0, size)
		if err != nil {
			return err
		}
		bufs = []int{buf}
	} else {
		if err := c.NeedPeer(true); err != nil {
			return err
		}
		m, err := c.Shared(0, size, true)
		if err != nil {
			return err
		}
		bufs = m.Bufs
	}
	ranks := []int{0}
	switch where {
	case LabelPeer:
		ranks = []int{1}
	case LabelAll:
		ranks = ranks[:0]
		for r := 0; r < c.N(); r++ {
			ranks = append(ranks, r)
		}
	}
	target := sampling.Target
	if len(ranks) > 1 {
		// Ranks start their launches some 0.1-0.2 ms apart; a longer
		// sample keeps the part where they do not overlap small (one
		// 20 ms sample in five read +5% on 2xH200).
		target *= 3
	}
	if !c.Backend().GPU {
		target = 0 // CPU "kernels": the fixed count is long enough
	}
	iters := sz.iters
	method := "kernel elapsed, one rank"
	if len(ranks) > 1 {
		// One clock across ranks: ops over (last end - first start), so
		// ranks whose kernels did not overlap (one GPU, time-sliced) are
		// not credited as if they had.
		method = "all ranks' operations / (last end - first start), CLOCK_MONOTONIC read by each rank around its issue and synchronise"
		if c.W.AnySharedGPU() {
			method += "; some ranks share a GPU (time-sliced kernels unless MPS runs)"
		}
	}
	var got []float64
	for sample := 0; sample <= todayTimed && !sp.done(c, atomicRate.Name, got); sample++ {
		if err := c.Zero(0, bufs[0], 0, sz.threads()*8); err != nil {
			return err
		}
		var ls []harness.Launch
		run := sz
		run.iters = iters
		for _, r := range ranks {
			ls = append(ls, counterLaunch(r, k, run, harness.P(bufs[r], 0), 1))
		}
		els, wins, err := c.RunTimed(ls...)
		if err != nil {
			return err
		}
		sum, err := c.Sum(0, bufs[0], 0, sz.threads(), 64)
		if err != nil {
			return err
		}
		ops := sz.threads() * iters * uint64(len(ranks))
		if sum != ops {
			return harness.Failf("%s counted %d of %d", k.Name, sum, ops)
		}
		slowest := time.Duration(0)
		for _, el := range els {
			slowest = max(slowest, el)
		}
		if len(ranks) > 1 {
			span, ok := harness.Span(wins...)
			if !ok {
				return fmt.Errorf("%s sample %d: a rank reported no CLOCK_MONOTONIC window (%+v)", k.Name, sample, wins)
			}
			slowest = span
		}
		if sample == 0 {
			// The warm-up sets the timed samples' length.
			iters = sampling.Iters(sz.iters, slowest, target)
			if iters != sz.iters {
				method += fmt.Sprintf(", %d iterations per thread (about %v per sample)", iters, target)
			}
			continue
		}
		if slowest > 0 {
			got = append(got, float64(ops)/slowest.Seconds()/1e6)
			c.Metric(atomicRate, method, got[len(got)-1])
		}
	}
	return nil
}
