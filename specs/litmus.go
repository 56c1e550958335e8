package specs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

func litmusSize(c *harness.Ctx) (n uint64, block uint32, timeout time.Duration) {
	if !c.Backend().GPU {
		return 20000, 2, 5 * time.Second
	}
	return 200000, 256, 5 * time.Second
}

func (b *builder) litmus() {
	b.litmusEnvs()
	for _, name := range []string{"mp_u32_acqrel_sys", "mp_u32_relaxed_sys"} {
		k := kernels.MustLookup(name)
		labels := []report.Label{facet(shapeLabel(k.Op))}
		if k.Info {
			labels = append(labels, LabelInfo)
		}
		b.add(Spec{Name: "litmus", Variant: k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
			Labels: labels, Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error { return runMP(c, k) }})
	}
	sb := kernels.MustLookup("sb_u32_seqcst_sys")
	b.add(Spec{Name: "litmus", Variant: sb.Name, Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: []report.Label{facet(shapeLabel(sb.Op))}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error { return runSB(c, sb) }})
	iriw := kernels.MustLookup("iriw_u32_seqcst_sys")
	ranks := max(3, b.o.Ranks)
	b.add(Spec{Name: "litmus", Variant: iriw.Name, Ranks: ranks, Expected: report.Pass,
		Labels: []report.Label{facet(shapeLabel(iriw.Op))}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error { return runIRIW(c, iriw) }})
}

// twoWords is the memory MP and SB share: n instances of two u32 words (x,
// y), owned by rank 0, granted to its peer and zeroed, after checking that
// the ranks can reach each other's memory at all.
func twoWords(c *harness.Ctx, n uint64) (*harness.Mem, error) {
	if err := c.NeedPeer(false); err != nil {
		return nil, err
	}
	xy, err := c.Shared(0, 2*n*4, true)
	if err != nil {
		return nil, err
	}
	return xy, c.Zero(0, xy.Bufs[0], 0, 2*n*4)
}

// runMP is message passing: rank 0 writes data then a flag, rank 1 waits for the
// flag and checks the data; a flag seen with stale data is forbidden.
func runMP(c *harness.Ctx, k kernels.Kernel) error {
	n, block, to := litmusSize(c)
	xy, err := twoWords(c, n)
	if err != nil {
		return err
	}
	outs := make([]int, 2)
	for r := 0; r < 2; r++ {
		if outs[r], err = c.Local(r, 64); err != nil {
			return err
		}
		if err := c.Zero(r, outs[r], 0, 64); err != nil {
			return err
		}
	}
	// Both roles are witnessed: a launch that never ran would
	// count 0 stale reads and 0 lost flags.
	ls := make([]harness.Launch, 2)
	wits := make([]harness.Witness, 2)
	for r := 0; r < 2; r++ {
		if wits[r], err = c.NewWitness(r, k.Name); err != nil {
			return err
		}
		ls[r] = harness.Launch{Rank: r, Kernel: k.Name, Grid: 1, Block: block, Args: wits[r].Args(map[string]wireArg{
			"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4), "out": harness.P(outs[r], 0),
			"n": harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(uint64(block)), "timeout_ns": harness.V(uint64(to))})}
	}
	if _, err := c.Run(ls...); err != nil {
		return err
	}
	o, err := c.Read(1, outs[1], 0, 16)
	if err != nil {
		return err
	}
	bad, lost := binary.LittleEndian.Uint32(o), binary.LittleEndian.Uint32(o[4:])
	c.Note("%d message-passing rounds, %d stale reads, %d lost flags", n, bad, lost)
	if lost > 0 {
		return harness.Failf("flag never arrived in %d of %d rounds (last flag value seen %d at round %d)",
			lost, n, binary.LittleEndian.Uint32(o[8:]), binary.LittleEndian.Uint32(o[12:]))
	}
	for r := 0; r < 2; r++ {
		if err := wits[r].Check(c, n, "rounds"); err != nil {
			return err
		}
	}
	c.Metric(report.MetricKind{Name: "outcome.fresh", Unit: "count"}, "message-passing rounds whose data read was the value written", float64(n)-float64(bad))
	c.Metric(report.MetricKind{Name: "outcome.stale", Unit: "count"}, "message-passing rounds that saw the flag but stale data", float64(bad))
	if bad > 0 {
		return harness.Failf("forbidden outcome: %d of %d reads saw the flag but stale data", bad, n)
	}
	if !k.Info {
		weakEvidence(c)
	}
	return nil
}

// runSB is store buffering: each rank stores its word and loads the other's; both
// loading 0 is forbidden under sequential consistency.
func runSB(c *harness.Ctx, sb kernels.Kernel) error {
	n, block, to := litmusSize(c)
	xy, err := twoWords(c, n)
	if err != nil {
		return err
	}
	outs := make([]int, 2)
	ls := make([]harness.Launch, 2)
	for r := 0; r < 2; r++ {
		if outs[r], err = c.Local(r, n*4); err != nil {
			return err
		}
		// Every result starts as a value no round writes, so a round
		// the kernel never ran shows as unwritten, not as an outcome.
		if err := c.Write(r, outs[r], 0, poison(n*4)); err != nil {
			return err
		}
		ls[r] = harness.Launch{Rank: r, Kernel: sb.Name, Grid: 1, Block: block, Args: map[string]wireArg{
			"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4), "out": harness.P(outs[r], 0),
			"n": harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(uint64(block)), "timeout_ns": harness.V(uint64(to))}}
	}
	if _, err := c.Run(ls...); err != nil {
		return err
	}
	// The range checks below cannot see a read that moved a round to
	// another legal outcome (a flipped bit 0 swaps (0,1) and (1,0)), and
	// the histogram sums to n by construction: the slots are cross-checked
	// by Ctx.Read, which compares the bytes received with the rank's device
	// sum of the same slots (harness/readcheck.go, docs/SYNC.md).
	r0, err := c.Read(0, outs[0], 0, n*4)
	if err != nil {
		return err
	}
	r1, err := c.Read(1, outs[1], 0, n*4)
	if err != nil {
		return err
	}
	var hist [2][2]uint64
	unwritten := uint64(0)
	for i := uint64(0); i < n; i++ {
		a, b := binary.LittleEndian.Uint32(r0[i*4:]), binary.LittleEndian.Uint32(r1[i*4:])
		if a > 1 || b > 1 {
			unwritten++
			continue
		}
		hist[a][b]++
	}
	if unwritten > 0 {
		return fmt.Errorf("%w: %s left %d of %d rounds' results unwritten", harness.ErrUnwitnessed, sb.Name, unwritten, n)
	}
	forbidden, both := hist[0][0], hist[1][1]
	for a := range 2 {
		for b := range 2 {
			c.Metric(report.MetricKind{Name: fmt.Sprintf("outcome.%d_%d", a, b), Unit: "count"}, "store-buffering rounds whose (rank 0, rank 1) loads read this", float64(hist[a][b]))
		}
	}
	c.Note("%d store-buffering rounds, %d saw both stores, %d forbidden; histogram (r0,r1) (0,0)=%d (0,1)=%d (1,0)=%d (1,1)=%d",
		n, both, forbidden, hist[0][0], hist[0][1], hist[1][0], hist[1][1])
	if forbidden > 0 {
		return harness.Failf("forbidden outcome r0=r1=0 in %d of %d rounds", forbidden, n)
	}
	if hist[0][1] == 0 || hist[1][0] == 0 {
		inconclusive(c, "(0,1) and (1,0): each rank's round running before the other's")
		return nil
	}
	weakEvidence(c)
	return nil
}

// runIRIW is independent reads of independent writes on three ranks: ranks 0 and 1
// write x and y, rank 2's two readers read them in opposite orders; readers
// that disagree on the order of the writes are forbidden.
func runIRIW(c *harness.Ctx, iriw kernels.Kernel) error {
	if err := c.NeedPeer(false); err != nil {
		return err
	}
	n, _, to := litmusSize(c)
	n = min(n, 20000)
	xy, err := c.Shared(0, 2*n*4, true)
	if err != nil {
		return err
	}
	if err := c.Zero(0, xy.Bufs[0], 0, 2*n*4); err != nil {
		return err
	}
	out, err := c.Local(2, 2*n*4)
	if err != nil {
		return err
	}
	if err := c.Write(2, out, 0, poison(2*n*4)); err != nil {
		return err
	}
	var ls []harness.Launch
	for r := 0; r < 3; r++ {
		args := map[string]wireArg{"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4),
			"out": harness.Null(), // the writers (roles 0, 1) record nothing
			"n":   harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(2), "timeout_ns": harness.V(uint64(to))}
		if r == 2 {
			args["out"] = harness.P(out, 0)
		}
		ls = append(ls, harness.Launch{Rank: r, Kernel: iriw.Name, Grid: 1, Block: 2, Args: args})
	}
	if _, err := c.Run(ls...); err != nil {
		return err
	}
	// Verified against the reader's device sum of the same slots (Ctx.Read):
	// a flipped bit keeps a value in its class (0-1 outcome, 2-3 lost).
	o, err := c.Read(2, out, 0, 2*n*4)
	if err != nil {
		return err
	}
	forbidden, lost, unwritten := 0, 0, uint64(0)
	var hist [2][2]uint64
	for i := uint64(0); i < n; i++ {
		a, b := binary.LittleEndian.Uint32(o[8*i:]), binary.LittleEndian.Uint32(o[8*i+4:])
		if a > 3 || b > 3 {
			unwritten++
			continue
		}
		if a >= 2 || b >= 2 {
			lost++
			continue
		}
		hist[a][b]++
		if a == 0 && b == 0 {
			forbidden++
		}
	}
	if unwritten > 0 {
		return fmt.Errorf("%w: %s left %d of %d rounds' results unwritten", harness.ErrUnwitnessed, iriw.Name, unwritten, n)
	}
	for a := range 2 {
		for b := range 2 {
			c.Metric(report.MetricKind{Name: fmt.Sprintf("outcome.%d_%d", a, b), Unit: "count"}, "IRIW rounds whose readers' second loads read this", float64(hist[a][b]))
		}
	}
	c.Note("%d IRIW rounds on 3 ranks, %d forbidden, %d waits timed out", n, forbidden, lost)
	if lost > 0 {
		return harness.Failf("a write never arrived at the readers in %d of %d rounds", lost, n)
	}
	if forbidden > 0 {
		return harness.Failf("forbidden IRIW outcome (readers disagree on the order of two writes) in %d of %d rounds", forbidden, n)
	}
	weakEvidence(c)
	return nil
}

// poison is n bytes of 0xff: a result word no round writes.
func poison(n uint64) []byte { return bytes.Repeat([]byte{0xff}, int(n)) }

// inconclusive grades a pass whose outcome histogram never showed the
// interleavings the shape needs (docs/LITMUS.md, "Histograms").
func inconclusive(c *harness.Ctx, lack string) {
	c.Evidence = report.EvidenceInconclusive
	c.Note("evidence inconclusive: the histogram never shows %s, so the absence of the forbidden outcome says nothing", lack)
}

// weakEvidence grades a pass of the simple litmus cases: they run no mutant
// (their relaxed twin mp_u32_relaxed_sys showed 0 stale reads on H200 too),
// so a pass cannot tell a working ordering from a broken one. The
// pmp/psb/plb environments carry the mutation-scored evidence.
func weakEvidence(c *harness.Ctx) {
	c.Evidence = report.EvidenceWeak
	c.Note("evidence weak: no mutant runs in this simple environment (see the pmp/psb/plb cases)")
}
