package specs

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/power"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// The mutation-scored litmus environments (docs/LITMUS.md). One case per
// strong kernel runs its mutants first, each until it shows the shape's weak
// outcome or its share of the budget is spent, then the strong kernel for at
// least as many instances. A weak outcome of the strong kernel fails the
// case; a pass is "strong" evidence only when a mutant was killed in this
// run, otherwise "weak" (report.Result.Evidence).

// envShape is one launch's shape: instances per round, rounds, threads per
// block, stress blocks per launch and stress iterations, slot spread.
type envShape struct {
	n, iters, block, sblocks, stress, spread uint64
	budget                                   time.Duration // per kernel
	maxInstances                             uint64        // per kernel
}

func litmusEnvShape(c *harness.Ctx) envShape {
	if !c.Backend().GPU {
		// One goroutine per block; no stress goroutines (a 2-core CI
		// machine has no spare core for them). 512 rounds of 2 instances
		// per launch, and one launch per kernel (the cap): x86-TSO shows
		// SB's weak outcome only, some 27000-80000 per million, so the SB
		// mutant dies in its first launch and no other mutant can ever
		// die here (docs/LITMUS.md); more launches only spent the suite's
		// time (2.4 s a shape). The budget matters to the planted case
		// alone, which has no cap.
		return envShape{n: 2, iters: 1 << 9, block: 1, spread: 16, budget: 500 * time.Millisecond, maxInstances: 1 << 10}
	}
	// 32768 instances per round (128 blocks of 256 per role), 32 rounds:
	// 1 M instances per launch; stress: one block per SM. The 13.5 M
	// instances of the probe cost 77 ms of kernel time on H200.
	return envShape{n: 1 << 15, iters: 32, block: 256, sblocks: uint64(c.W.Units(0)), stress: 1 << 12, spread: 32,
		budget: 700 * time.Millisecond, maxInstances: 1 << 25}
}

// envRun is what one kernel showed over its launches: hist is the full
// outcome histogram (kernels.TallyBin), summing to instances.
type envRun struct {
	kernel                   string
	op                       kernels.Op
	instances, weak, missing uint64
	launches, lateBarriers   uint64
	stressAtKill             uint64
	killed                   bool
	elapsed                  time.Duration
	hist                     [kernels.TallyBins]uint64
}

// missingOf counts a histogram's instances that a role never recorded (a
// slot still 0 from the witnessed clear).
func missingOf(h *[kernels.TallyBins]uint64) uint64 {
	var m uint64
	for a := uint64(0); a < 6; a++ {
		for b := uint64(0); b < 6; b++ {
			if a == 0 || b == 0 {
				m += h[kernels.TallyBin(a, b)]
			}
		}
	}
	return m
}

// degenerate lists the outcomes the shape needs (kernels.LitmusNeeds) that
// the histogram never shows: "" when every one showed.
func (r envRun) degenerate() string {
	var lack []string
	for _, o := range kernels.LitmusLacking(r.op, &r.hist) {
		lack = append(lack, fmt.Sprintf("(%d,%d)", o[0], o[1]))
	}
	return strings.Join(lack, " ")
}

// histogram is the run's outcome table in the form GPUHarbor and MC Mutants
// tabulate: each outcome seen, as the two result slots (1 + what the role
// read, per the shape's Doc), with its count; the weak outcome marked.
func (r envRun) histogram() string {
	want := kernels.LitmusWeak[r.op]
	var parts []string
	for a := uint64(0); a < 6; a++ {
		for b := uint64(0); b < 6; b++ {
			n := r.hist[kernels.TallyBin(a, b)]
			if n == 0 {
				continue
			}
			mark := ""
			if a == want[0] && b == want[1] {
				mark = " weak"
			}
			parts = append(parts, fmt.Sprintf("(%d,%d)%s=%d", a, b, mark, n))
		}
	}
	return "histogram " + strings.Join(parts, " ")
}

func (r envRun) perMillion() float64 { return float64(r.weak) * 1e6 / float64(max(r.instances, 1)) }

// litmusEnv is one case's environment: one allocation of rank 0 holding the
// arena (x and y slots, sync and hot words) and the results, imported by rank
// 1; the tally's out buffer; the placement; and the RNG (from --seed) that
// draws each launch's seed.
type litmusEnv struct {
	c        *harness.Ctx
	sh       envShape
	mem      *harness.Mem
	out      int
	words    uint64
	oneRank  bool
	seed     uint64
	rng      *rand.Rand
	timeout  time.Duration
	memBytes uint64
}

// litmusPeer is what the litmus environments need of the link between the
// ranks' devices (issue 50, Q3). Their round barrier joins both ranks on
// rank 0's memory. On AMD it is a store barrier (kernels.cu
// P2P_LITMUS_ROUND, no read-modify-write: kernels' disassembly test holds
// every AMD object to it), so loads and stores across the link suffice and
// a PCIe pair whose P2P atomics the backend holds back still runs them. On
// NVIDIA it is an atomic add across the GPUs: a pair without P2P atomics
// skips rather than running atomics its backend says it lacks. The host
// backend's ranks share CPU memory, where atomics always hold.
func litmusPeer(c *harness.Ctx) error {
	return c.NeedPeer(c.Backend().Vendor == "nvidia")
}

func newLitmusEnv(c *harness.Ctx) (*litmusEnv, error) {
	sh := litmusEnvShape(c)
	e := &litmusEnv{c: c, sh: sh, seed: uint64(c.Seed), rng: rand.New(rand.NewPCG(uint64(c.Seed), 0x11745)), timeout: 5 * time.Second}
	// Ranks on one GPU are time-sliced: their kernels are never resident
	// together, so both roles run in one launch of rank 1 on the memory it
	// imported from rank 0 (the allocation path is still the cross-process
	// one). Elsewhere each rank plays one role.
	e.oneRank = c.W.SharedGPU(0, 1)
	e.words = kernels.LitmusEnvWords(sh.n, sh.iters, sh.spread)
	e.memBytes = e.words*4 + sh.n*sh.iters*8
	var err error
	if e.mem, e.out, err = allocEnv(c, e.memBytes); err != nil {
		return nil, err
	}
	return e, nil
}

// envAllocator is what allocEnv allocates through (a *harness.Ctx).
type envAllocator interface {
	Shared(owner int, size uint64, grant bool) (*harness.Mem, error)
	Local(r int, size uint64) (int, error)
	ScratchWords(r int, size uint64) (int, error)
}

// allocEnv allocates an environment's memory: the arena and results of
// the case's kind, shared from rank 0 (what the case tests), and the
// tally's histogram in rank 0's device memory (ScratchWords), whatever the
// kind. The histogram is the harness's count, not the memory under test:
// on vmm-host each of the tally's 33 792 threads added its non-zero bins
// (16 for IRIW) to host memory across PCIe one by one, 0.1-0.27 s a launch
// and 1.56 s of the one-H100 suite's 1.57 s of tally kernels (a --trace
// run at a1d6007), against 0.3 ms on device memory.
func allocEnv(a envAllocator, memBytes uint64) (*harness.Mem, int, error) {
	mem, err := a.Shared(0, memBytes, true)
	if err != nil {
		return nil, 0, err
	}
	out, err := a.ScratchWords(0, kernels.TallyBins*8)
	return mem, out, err
}

func (e *litmusEnv) mode() string {
	if e.oneRank {
		return "one-rank (every role in rank 1's launch on memory imported from rank 0; ranks share a device)"
	}
	return "cross-rank (role 0 in rank 0, role 1 in rank 1; IRIW: writers in rank 0, readers in rank 1; on one shared allocation)"
}

// clear zeroes the arena and results with the owner's fill kernel, whose
// witness proves it ran: on an arena that was never reset, the results of
// an earlier launch read as this one's (docs/FAULTS.md).
func (e *litmusEnv) clear() error {
	grid, block := uint32(max(e.c.W.Units(0), 1)), uint32(256)
	if !e.c.Backend().GPU {
		grid, block = 1, 2
	}
	nw := (e.memBytes + 7) / 8
	if err := e.c.RunWitnessed(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: grid, Block: block, Args: map[string]wireArg{
		"dst": harness.P(e.mem.Bufs[0], 0), "value": harness.V(0), "n": harness.V(nw), "block": harness.V(uint64(block)),
		"nthreads": harness.V(uint64(grid) * uint64(block))}}, nw, "words"); err != nil {
		return err
	}
	return e.c.Zero(0, e.out, 0, kernels.TallyBins*8)
}

// launch runs one launch of kernel name (both roles) and tallies it: the
// full outcome histogram, witnessed, its total checked against the
// instances the launch ran.
func (e *litmusEnv) launch(name string, stress uint64) (hist [kernels.TallyBins]uint64, late uint64, el time.Duration, err error) {
	if err = e.clear(); err != nil {
		return
	}
	k := kernels.MustLookup(name)
	sh := e.sh
	roles := kernels.LitmusRoles(k.Op)
	// IRIW's four roles: half the instances per round and twice the rounds,
	// so that a launch has a two-role shape's testing threads (every testing
	// block must be resident for the round barrier; 644 blocks of 256 on one
	// H200 might not be) and its instances (the same arena).
	sh.n, sh.iters = sh.n*2/roles, sh.iters*roles/2
	seed := e.rng.Uint64()
	args := func(rank int, role, tblocks, parties uint64) map[string]wireArg {
		return map[string]wireArg{"mem": harness.P(e.mem.Bufs[rank], 0), "res": harness.P(e.mem.Bufs[rank], e.words*4),
			"n": harness.V(sh.n), "iters": harness.V(sh.iters), "role": harness.V(role), "block": harness.V(sh.block),
			"tblocks": harness.V(tblocks), "parties": harness.V(parties), "seed": harness.V(seed), "spread": harness.V(sh.spread),
			"stress": harness.V(stress), "timeout_ns": harness.V(uint64(e.timeout))}
	}
	// An instance has roles roles: one launch plays them all (threads
	// [c*n, (c+1)*n) play role c), or each rank half of them (IRIW: the
	// writers in rank 0, the readers in rank 1).
	var ls []harness.Launch
	var parties uint64
	if e.oneRank {
		tb := roles * sh.n / sh.block
		parties = tb
		ls = []harness.Launch{{Rank: 1, Kernel: name, Grid: uint32(tb + sh.sblocks), Block: uint32(sh.block), Args: args(1, 2, tb, tb)}}
	} else {
		tb := roles / 2 * sh.n / sh.block
		parties = 2 * tb
		for r := 0; r < 2; r++ {
			ls = append(ls, harness.Launch{Rank: r, Kernel: name, Grid: uint32(tb + sh.sblocks), Block: uint32(sh.block),
				Args: args(r, uint64(r), tb, 2*tb)})
		}
	}
	ts, err := e.c.Run(ls...)
	if err != nil {
		return
	}
	for _, t := range ts {
		el = max(el, t)
	}
	if kernels.LitmusCollect[k.Op] {
		// The outcome is the final state: read it back in a later launch,
		// after every role's launch has ended (role 3, no stress, no barrier).
		tb := sh.n / sh.block
		if _, err = e.c.Run(harness.Launch{Rank: 0, Kernel: name, Grid: uint32(tb), Block: uint32(sh.block), Args: args(0, 3, tb, 0)}); err != nil {
			return
		}
	}
	grid, block := uint32(max(e.c.W.Units(0), 1)), uint32(256)
	if !e.c.Backend().GPU {
		grid, block = 1, 2
	}
	total := sh.n * sh.iters
	if err = e.c.RunWitnessed(harness.Launch{Rank: 0, Kernel: "tally_u32_relaxed_dev", Grid: grid, Block: block, Args: map[string]wireArg{
		"res": harness.P(e.mem.Bufs[0], e.words*4), "out": harness.P(e.out, 0), "n": harness.V(total),
		"block": harness.V(uint64(block)), "nthreads": harness.V(uint64(grid) * uint64(block))}}, total, "instances"); err != nil {
		return
	}
	o, err := e.c.Read(0, e.out, 0, kernels.TallyBins*8)
	if err != nil {
		return
	}
	var sum uint64
	for i := range hist {
		hist[i] = binary.LittleEndian.Uint64(o[8*i:])
		sum += hist[i]
	}
	if sum != total {
		err = fmt.Errorf("%w: tally_u32_relaxed_dev's histogram of %s holds %d instances, the launch ran %d", harness.ErrUnwitnessed, name, sum, total)
		return
	}
	s, err := e.c.Read(0, e.mem.Bufs[0], 2*total*sh.spread*4, 8)
	if err != nil {
		return
	}
	late = uint64(binary.LittleEndian.Uint32(s[4:]))
	if e.c.Backend().Vendor == "amd" {
		// AMD's round barrier is a store barrier (issue 50, Q1): each
		// party that timed out set its own give-up word, as no P2P
		// read-modify-write may count them in sync[1].
		lt, rerr := e.c.Read(0, e.mem.Bufs[0], kernels.LitmusLateWord(sh.n, sh.iters, sh.spread, parties, 0)*4, parties*4)
		if rerr != nil {
			return hist, 0, el, rerr
		}
		late += countSet(lt)
	}
	return hist, late, el, nil
}

// countSet is how many of the u32 words in b are non-zero.
func countSet(b []byte) uint64 {
	var n uint64
	for i := 0; i+4 <= len(b); i += 4 {
		if binary.LittleEndian.Uint32(b[i:]) != 0 {
			n++
		}
	}
	return n
}

// run launches name until it is killed (stopAtWeak), the budget is spent or
// maxInstances ran, and at least minInstances ran. Stress cycles through
// none, the base and four times the base, so a mutant that only shows under
// one of them still gets each.
func (e *litmusEnv) run(name string, stopAtWeak bool, minInstances uint64) (envRun, error) {
	r := envRun{kernel: name, op: kernels.MustLookup(name).Op}
	want := kernels.LitmusWeak[r.op]
	t0 := time.Now()
	levels := []uint64{e.sh.stress, 0, 4 * e.sh.stress}
	for {
		stress := levels[int(r.launches)%len(levels)]
		if e.sh.sblocks == 0 {
			stress = 0
		}
		hist, late, el, err := e.launch(name, stress)
		if err != nil {
			return r, err
		}
		weak, missing := hist[kernels.TallyBin(want[0], want[1])], missingOf(&hist)
		for i, n := range hist {
			r.hist[i] += n
		}
		r.launches++
		r.instances += e.sh.n * e.sh.iters
		r.weak += weak
		r.missing += missing
		r.lateBarriers += late
		r.elapsed += el
		if weak > 0 && !r.killed {
			r.killed, r.stressAtKill = true, stress
		}
		if r.instances < minInstances {
			continue
		}
		if (stopAtWeak && r.killed) || r.missing > 0 || time.Since(t0) >= e.sh.budget || r.instances >= e.sh.maxInstances {
			return r, nil
		}
	}
}

func (e *litmusEnv) note(r envRun) string {
	kill := ""
	if r.killed {
		kill = fmt.Sprintf(", first weak outcome at stress %d", r.stressAtKill)
	}
	return fmt.Sprintf("%s: %d weak in %d instances (%.3g per million, %d launches, %.1f ms of kernel time, %d barrier timeouts%s); %s",
		r.kernel, r.weak, r.instances, r.perMillion(), r.launches, float64(r.elapsed)/1e6, r.lateBarriers, kill, r.histogram())
}

func (e *litmusEnv) params() string {
	sh := e.sh
	return fmt.Sprintf("%s; n=%d instances per round, %d rounds per launch (IRIW: half, twice), block %d, %d stress blocks x %d iterations (cycled x0, x1, x4), spread %d words, seed %d",
		e.mode(), sh.n, sh.iters, sh.block, sh.sblocks, sh.stress, sh.spread, e.seed)
}

// metric records the run's rate and instances, and its histogram: one
// metric per outcome seen, outcome.<a>_<b> (the two result slots).
func (e *litmusEnv) metric(prefix string, r envRun) {
	e.c.Metric(report.MetricKind{Name: prefix + "weak_per_million", Unit: "1/M"}, "tally", r.perMillion())
	e.c.Metric(report.MetricKind{Name: prefix + "instances", Unit: "count"}, "tally", float64(r.instances))
	for a := uint64(0); a < 6; a++ {
		for b := uint64(0); b < 6; b++ {
			if n := r.hist[kernels.TallyBin(a, b)]; n != 0 {
				e.c.Metric(report.MetricKind{Name: fmt.Sprintf("%soutcome.%d_%d", prefix, a, b), Unit: "count"}, "tally histogram (result slots: 1 + what each role read)", float64(n))
			}
		}
	}
}

func shapeLabel(op kernels.Op) string { return strings.TrimPrefix(string(op), "p") }

// litmusEnvKernels is where the catalogue's litmus cases come from; a test
// plants a shape here to show none of specs/ has to change for one.
var litmusEnvKernels = kernels.LitmusEnvs

func (b *builder) litmusEnvs() {
	// One case per shape kernels/manifest.go declares, in its order: a new
	// shape touches nothing here.
	target := b.o.PowerTarget().Litmus // --power's litmus rate, 0: none
	for _, k := range litmusEnvKernels() {
		b.add(Spec{Name: "litmus", Variant: k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
			Labels: []report.Label{facet(shapeLabel(k.Op)), LabelMutation}, Timeout: 120 * time.Second,
			Run: func(c *harness.Ctx) error { return runLitmusEnv(c, k, target) }})
	}
	b.plantedNofence()
}

// runLitmusEnv is one mutation-scored case: the mutants of k, then k, the
// detail leading with the evidence (a table cuts it short), the
// parameters and per-kernel counts following in run order.
func runLitmusEnv(c *harness.Ctx, k kernels.Kernel, target float64) error {
	if err := litmusPeer(c); err != nil {
		return err
	}
	e, err := newLitmusEnv(c)
	if err != nil {
		return err
	}
	lines := []string{e.params()}
	defer func() {
		for _, l := range lines {
			c.Note("%s", l)
		}
	}()
	killed, killedMost, rarest, err := e.mutants(k, target, &lines)
	if err != nil {
		return err
	}
	// The strong kernel is sized from power (issue 52): enough instances
	// to see a weak outcome as rare as the rarest mutant killed here (or
	// --power's litmus rate) with 99.9 % confidence, at least as many as a
	// killed mutant ran, within the budget and the cap. With neither a
	// killed mutant nor a target there is no rate to size from: one launch,
	// the least any case runs (the run states its weakest case's rate, so
	// more instances here would raise no stated power). A mutant that
	// survived sets nothing: its instances are evidence of no rate.
	stop := e.sh.maxInstances
	if c.Backend().GPU {
		e.sh.maxInstances = power.StrongCap(rarest, target, killedMost, e.launchInstances(), stop)
		if n := power.StrongInstances(rarest, target); n > 0 {
			lines = append(lines, fmt.Sprintf("strong sized to %d instances: a weak outcome of %.3g per million seen with 99.9 %% (rarest killed mutant %.3g per million, --power litmus %.3g per million; runs whole launches, at least a killed mutant's)",
				n, power.Seen(float64(n))*1e6, rarest*1e6, target*1e6))
		} else {
			lines = append(lines, fmt.Sprintf("strong sized to one launch (%d instances): no mutant killed and no --power litmus rate to size from", e.launchInstances()))
		}
	}
	r, err := e.run(k.Name, false, killedMost)
	e.sh.maxInstances = stop
	if err != nil {
		return err
	}
	e.metric("", r)
	lines = append(lines, "strong "+e.note(r))
	if r.missing > 0 {
		return harness.Failf("%d of %d instances never recorded a result", r.missing, r.instances)
	}
	if r.weak > 0 {
		return harness.Failf("forbidden outcome: %d of %d instances showed %s's weak outcome (%.3g per million)",
			r.weak, r.instances, shapeLabel(k.Op), r.perMillion())
	}
	gradeLitmus(c, k, r, killed)
	return nil
}

// launchInstances is how many instances one launch runs (n per round,
// iters rounds): the granularity of every run.
func (e *litmusEnv) launchInstances() uint64 { return e.sh.n * e.sh.iters }

// mutants runs k's mutants in manifest order, each until it is killed, its
// budget is spent or it ran its cap; on a GPU a mutant after one that was
// killed is capped by power (power.MutantCap: the instances the strong
// kernel will run for the rarest rate killed so far), so a mutant that
// cannot die here costs a launch, not the 0.7 s budget or the 32 M cap.
// It returns the kills, the most instances a killed mutant ran and the
// rarest killed rate (per instance).
func (e *litmusEnv) mutants(k kernels.Kernel, target float64, lines *[]string) (killed []string, killedMost uint64, rarest float64, err error) {
	for _, m := range k.Mutants {
		if e.oneRank && kernels.MustLookup(m).Scope == kernels.Dev {
			// Both roles run on one device, where device scope is all the
			// ordering needs: this mutant cannot show its weak outcome
			// here, and running it only spends the budget (0.7 s a case on
			// host memory).
			*lines = append(*lines, fmt.Sprintf("mutant %s not run: both roles are on one device, where device scope suffices", m))
			continue
		}
		stop := e.sh.maxInstances
		if e.c.Backend().GPU {
			e.sh.maxInstances = power.MutantCap(rarest, target, e.launchInstances(), stop)
		}
		r, err := e.run(m, true, 0)
		e.sh.maxInstances = stop
		if err != nil {
			return nil, 0, 0, err
		}
		e.metric("mutant."+m+".", r)
		*lines = append(*lines, "mutant "+e.note(r))
		if r.missing > 0 {
			return nil, 0, 0, harness.Failf("mutant %s: %d instances never recorded a result", m, r.missing)
		}
		if r.killed {
			killed = append(killed, fmt.Sprintf("%s (%s, %.3g per million)", m, kernels.MustLookup(m).Mutation, r.perMillion()))
			if p := r.perMillion() / 1e6; rarest == 0 || p < rarest {
				rarest = p
			}
			killedMost = max(killedMost, r.instances)
		}
	}
	return killed, killedMost, rarest, nil
}

// gradeLitmus sets the evidence of a pass: inconclusive when the
// histogram lacks an outcome the shape needs (the absence of the weak
// outcome means nothing when the roles never ran in both orders), strong
// when a mutant was killed, weak otherwise.
func gradeLitmus(c *harness.Ctx, k kernels.Kernel, r envRun, killed []string) {
	switch lack := r.degenerate(); {
	case lack != "":
		c.Evidence = report.EvidenceInconclusive
		c.Note("evidence inconclusive: the histogram never shows %s, the outcomes %s needs to tell an ordering from a schedule", lack, shapeLabel(k.Op))
	case len(killed) > 0:
		c.Evidence = report.EvidenceStrong
		c.Note("evidence strong: killed %s", strings.Join(killed, ", "))
	default:
		c.Evidence = report.EvidenceWeak
		c.Note("evidence weak: no mutant showed the weak outcome in this run, so this pass cannot tell a working ordering from a broken one")
	}
}

// plantedNofence adds the planted bug: a strong kernel with its fence (or
// release/acquire) removed, judged as if it were the strong one, must fail.
// The shape is the one whose weak outcome this backend can show: MP on GPUs
// (about 3 per million on H200), SB on the host (x86-TSO never reorders MP).
func (b *builder) plantedNofence() {
	b.add(Spec{Name: "litmus", Variant: "planted-nofence", Ranks: b.o.Ranks, Expected: report.Fail,
		Labels: []report.Label{LabelPlanted, LabelMutation}, Timeout: 120 * time.Second,
		Run: func(c *harness.Ctx) error {
			if err := litmusPeer(c); err != nil {
				return err
			}
			e, err := newLitmusEnv(c)
			if err != nil {
				return err
			}
			name := "pmp_u32_relaxed_sys"
			if !c.Backend().GPU {
				name = "psb_u32_relaxed_sys"
			}
			// A planted bug that goes unseen is an unexpected pass: give it
			// four times a mutant's budget and no instance cap (on a loaded
			// host the two ranks share few cores; on H200 the first launch
			// kills it).
			e.sh.budget *= 4
			e.sh.maxInstances = math.MaxUint64
			c.Note("planted %s judged as its strong kernel; %s", name, e.params())
			r, err := e.run(name, true, 0)
			if err != nil {
				return err
			}
			e.metric("", r)
			c.Note("%s", e.note(r))
			if r.weak > 0 {
				return harness.Failf("forbidden outcome: %d of %d instances showed the weak outcome (%.3g per million): the planted bug is caught",
					r.weak, r.instances, r.perMillion())
			}
			return nil
		}})
}
