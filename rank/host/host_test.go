package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

func open(t testing.TB) *Backend {
	h := &Backend{}
	if _, err := h.Open(backend.Config{Rank: 0, Ranks: 1}); err != nil {
		t.Fatal(err)
	}
	return h
}

// openWithPage opens a backend with one 4 KiB buffer, freed at the test's end.
func openWithPage(t *testing.T) (*Backend, backend.Buffer) {
	h := open(t)
	b, exp, err := h.Alloc(Kind, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Free(b) })
	_ = closeFd(exp.Fd)
	return h, b
}

// The planted racy kernel must lose updates with two threads, while the
// atomic add with the same shape must not: both verification directions.
func TestRacyLosesAtomicDoesNot(t *testing.T) {
	h, b := openWithPage(t)
	racy := kernels.MustLookup("racy_u64_plain_sys")
	// Two blocks of one thread each meet at a barrier (word 1) first, so
	// the two increments overlap, unless the OS runs one goroutine's whole
	// loop while the other waits for a core: on a loaded 2-core machine one
	// run in a few hundred lost nothing. Five tries; one must lose.
	p := make([]byte, 8)
	var counts []uint64
	for try := 0; try < 5; try++ {
		h.Write(b, 0, make([]byte, 16))
		if _, err := h.Launch(racy, 2, 1, []uint64{b.Addr(), b.Addr() + 8, 20000, 1, 200, 2, uint64(5e9)}); err != nil {
			t.Fatal(err)
		}
		h.Read(b, 0, p)
		if counts = append(counts, le(p)); le(p) < 40000 {
			break
		}
	}
	if got := counts[len(counts)-1]; got >= 40000 {
		t.Fatalf("racy counter counted %v of 40000 in %d tries: the planted race lost nothing", counts, len(counts))
	}
	// The atomic half has no barrier to make its threads overlap, so it
	// gives a lost update many chances instead: four threads, 200000 adds
	// each, three launches, every one exact. A load+store planted in the
	// add loses updates in one of them (a two-thread, 20000-add launch
	// caught that plant in only 2 of 8 runs).
	add := kernels.MustLookup("add_u64_relaxed_sys")
	for try := 0; try < 3; try++ {
		h.Write(b, 0, make([]byte, 8))
		if _, err := h.Launch(add, 1, 4, []uint64{b.Addr(), 0, 1, 200000, 4, 0}); err != nil {
			t.Fatal(err)
		}
		h.Read(b, 0, p)
		if got := le(p); got != 800000 {
			t.Fatalf("atomic add counted %d in launch %d, want 800000 (4 threads × 200000)", got, try)
		}
	}
}

// missingHostOps lists what ops lacks for the manifest: an op with no
// entry, or no needBytes or body, or a pointer argument its needBytes leaves
// unchecked (Launch would let a kernel reach past that argument's mapping),
// or a body that does not build on valid pointers.
func missingHostOps(ops map[kernels.Op]hostOp) []string {
	var miss []string
	for _, k := range kernels.All() {
		op, ok := ops[k.Op]
		switch {
		case !ok:
			miss = append(miss, fmt.Sprintf("%s: op %s has no host body", k.Name, k.Op))
			continue
		case op.needBytes == nil || op.build == nil:
			miss = append(miss, fmt.Sprintf("%s: op %s has no needBytes or no body", k.Name, k.Op))
			continue
		}
		l := &launchArgs{k: k, ptr: fakePtrs(k), val: map[string]uint64{}, nthreads: 1, block: 1}
		need := op.needBytes(l)
		for _, a := range k.Args {
			if _, ok := need[a.Name]; a.Ptr && !ok {
				miss = append(miss, fmt.Sprintf("%s: needBytes has no extent for pointer argument %s", k.Name, a.Name))
			}
		}
		if _, err := op.body(l); err != nil {
			miss = append(miss, fmt.Sprintf("%s: %v", k.Name, err))
		}
	}
	return miss
}

// Every manifest kernel has a host body and a needBytes that covers each of
// its pointer arguments; a table with one op taken out, or one extent
// forgotten, must be reported.
func TestEveryManifestKernelHasAHostBody(t *testing.T) {
	for _, m := range missingHostOps(hostOps) {
		t.Error(m)
	}
	less := maps.Clone(hostOps)
	delete(less, kernels.OpTally)
	if got := missingHostOps(less); len(got) == 0 || !strings.Contains(got[0], "has no host body") {
		t.Errorf("tally taken out of the table: reported %v", got)
	}
	short := maps.Clone(hostOps)
	wait := short[kernels.OpWait]
	wait.needBytes = fixed(map[string]uint64{"flag": 4})
	short[kernels.OpWait] = wait
	if got := missingHostOps(short); len(got) != 1 || !strings.Contains(got[0], "pointer argument out") {
		t.Errorf("wait's extent for out forgotten: reported %v", got)
	}
}

// The family tables are disjoint: joinOps keeps an op's first entry, so an
// op in two files would silently run one of them.
func TestHostOpsAreDisjoint(t *testing.T) {
	if n := len(rmwOps) + len(patternOps) + len(litmusOps); n != len(hostOps) {
		t.Errorf("the family tables hold %d entries, hostOps %d: an op is in two files", n, len(hostOps))
	}
	if got := len(joinOps(rmwOps, rmwOps)); got != len(rmwOps) {
		t.Errorf("joinOps of a table with itself holds %d ops, want %d", got, len(rmwOps))
	}
}

// Every op that runs as a litmus environment has an instance shape:
// litmusRun.instance would find none and panic the rank.
func TestEveryLitmusEnvHasAShape(t *testing.T) {
	for _, k := range kernels.All() {
		if slices.Equal(k.Args, kernels.LitmusEnvArgs) && litmusShapes[k.Op] == nil {
			t.Errorf("%s: op %s runs as a litmus environment and has no litmusShapes entry", k.Name, k.Op)
		}
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	h := open(b)
	buf, exp, _ := h.Alloc(Kind, 4096)
	_ = closeFd(exp.Fd)
	add := kernels.MustLookup("add_u64_relaxed_sys")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Launch(add, 1, 2, []uint64{buf.Addr(), 0, 1, 100000, 2, 0})
	}
	b.ReportMetric(float64(b.N)*200000/b.Elapsed().Seconds()/1e6, "Mops/s")
}

// The ping-pong walks its placements in order and counts every round; a
// placement whose flags were not cleared stops the chain there, with the
// timeout flag set, instead of counting on or hanging.
func TestPingPongPlacements(t *testing.T) {
	h, b := openWithPage(t)
	pp := kernels.MustLookup("pingpong_u64_acqrel_dev")
	const n, places, stride = 200, 4, 512
	out := b.Addr() + 3072
	run := func(timeout uint64) (done, late uint64) {
		if _, err := h.Launch(pp, 2, 1, []uint64{b.Addr(), b.Addr() + 64, out, n, 2, timeout, places, stride}); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 16)
		h.Read(b, 3072, p)
		return le(p[:8]), le(p[8:])
	}
	// Bounds generous enough for a loaded machine: at 50 ms a rank
	// descheduled at load 35 timed out a clean placement (121 of 800).
	for _, timeout := range []uint64{uint64(5e9), 0} { // bounded, then unbounded polls
		h.Write(b, 0, make([]byte, 3072))
		if done, late := run(timeout); done != n*places || late != 0 {
			t.Fatalf("clean flags, timeout %d: %d rounds done (want %d), timed out %d", timeout, done, n*places, late)
		}
	}
	for p := uint64(0); p < places; p++ {
		w := make([]byte, 8)
		h.Read(b, p*stride, w)
		if le(w) != n {
			t.Errorf("placement %d: side 0's flag ends at %d, want %d", p, le(w), n)
		}
	}
	h.Write(b, 0, make([]byte, 3072))
	h.Write(b, 2*stride, []byte{7, 0, 0, 0, 0, 0, 0, 0}) // planted: placement 2 not cleared
	if done, late := run(uint64(2e9)); done != 2*n || late != 1 {
		t.Fatalf("dirty placement 2: %d rounds done (want %d), timed out %d (want 1)", done, 2*n, late)
	}
}

// The planted racy kernel loses an update however its threads are
// scheduled: the test holds thread 1 after the barrier until thread 0 has
// either stored (the threads then run one after the other, as two ranks'
// threads did on a loaded machine) or is waiting in the first add's
// rendezvous. One add each must leave the counter at 1. Fails without the
// rendezvous (the counter reads 2: nothing lost).
func TestRacyLosesAnUpdateWhateverTheSchedule(t *testing.T) {
	h, b := openWithPage(t)
	racy := kernels.MustLookup("racy_u64_plain_sys")
	base, _, err := h.resolve(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	racyHook = func(g uint64) {
		if g == 1 {
			spin(5*time.Second, func() bool { return w64.load(at(base, 2, 8)) >= 1 || w64.load(base) >= 1 })
		}
	}
	defer func() { racyHook = nil }()
	h.Write(b, 0, make([]byte, 24))
	if _, err := h.Launch(racy, 2, 1, []uint64{b.Addr(), b.Addr() + 8, 1, 1, 0, 2, uint64(5e9)}); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	h.Read(b, 0, p)
	if got := le(p); got != 1 {
		t.Fatalf("two racy adds, thread 1 held until thread 0 stored or waits: counter %d, want 1 (an update lost)", got)
	}
}
