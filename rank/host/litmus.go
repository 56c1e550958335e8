package host

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"p2patomics/kernels"
)

// litmusOps are the litmus tests: the spinning MP, SB and IRIW kernels,
// the parallel testing environments (kernels.LitmusEnvArgs) and the tally
// that histograms their results.
var litmusOps = map[kernels.Op]hostOp{
	kernels.OpMP: {ptrs: []string{"x", "y", "out", "wit"}, build: mpBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"x": mul(l.val["n"], 4), "y": mul(l.val["n"], 4), "out": 16, "wit": 16}
		}},
	kernels.OpSB: {ptrs: []string{"x", "y", "out"}, build: sbBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			n := l.val["n"]
			return map[string]uint64{"x": mul(n, 4), "y": mul(n, 4), "out": mul(n, 4)}
		}},
	kernels.OpIRIW: {ptrs: []string{"x", "y"}, build: iriwBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			n := l.val["n"]
			return map[string]uint64{"x": mul(n, 4), "y": mul(n, 4), "out": mul(n, 8)}
		}},
	kernels.OpPMP:   litmusEnvOp,
	kernels.OpPSB:   litmusEnvOp,
	kernels.OpPLB:   litmusEnvOp,
	kernels.OpPIRIW: litmusEnvOp,
	kernels.OpP22W:  litmusEnvOp,
	kernels.OpPCoRR: litmusEnvOp,
	kernels.OpTally: {ptrs: []string{"res", "out", "wit"}, build: tallyBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"res": mul(l.val["n"], 8), "out": kernels.TallyBins * 8, "wit": 16}
		}},
}

// mpBody: role 0 writes x[i] then flag y[i]; role 1 waits for each flag and
// counts data it finds stale (out[0]) and flags that never came (out[1],
// with the last such flag and index in out[2], out[3]), witnessed.
func mpBody(l *launchArgs) (func(g uint64), error) {
	x, y, out, n, role := l.ptr["x"], l.ptr["y"], l.ptr["out"], l.val["n"], l.val["role"]
	wit, nonce, block, timeout := l.ptr["wit"], l.val["nonce"], l.block, l.timeout()
	return func(g uint64) {
		var bad, lost, seen uint64
		for i := g; i < n; i += block {
			if role == 0 {
				w32.store(at(x, i, 4), i+1)
				w32.store(at(y, i, 4), 1)
				seen++
				continue
			}
			if !spin(timeout, func() bool { return w32.load(at(y, i, 4)) == 1 }) {
				lost++
				w32.store(at(out, 2, 4), w32.load(at(y, i, 4)))
				w32.store(at(out, 3, 4), i)
				continue
			}
			if w32.load(at(x, i, 4)) != w32.mask(i+1) {
				bad++
			}
			seen++
		}
		w32.add(at(out, 0, 4), bad)
		w32.add(at(out, 1, 4), lost)
		witness(wit, nonce, seen, g)
	}, nil
}

// sbBody: each role stores 1 to its own word and records the other's.
func sbBody(l *launchArgs) (func(g uint64), error) {
	x, y, out, n, role, block := l.ptr["x"], l.ptr["y"], l.ptr["out"], l.val["n"], l.val["role"], l.block
	mine, theirs := x, y
	if role == 1 {
		mine, theirs = y, x
	}
	return func(g uint64) {
		for i := g; i < n; i += block {
			w32.store(at(mine, i, 4), 1)
			w32.store(at(out, i, 4), w32.load(at(theirs, i, 4)))
		}
	}, nil
}

// iriwBody: roles 0 and 1 write x and y; role 2's threads 0 and 1 read them
// in opposite orders, each after waiting for its first word.
func iriwBody(l *launchArgs) (func(g uint64), error) {
	if l.val["role"] == 2 && l.ptr["out"] == nil {
		return nil, fmt.Errorf("%s: the reader role needs out", l.k.Name)
	}
	x, y, out, n, role := l.ptr["x"], l.ptr["y"], l.ptr["out"], l.val["n"], l.val["role"]
	block, timeout := l.block, l.timeout()
	return func(g uint64) {
		if role < 2 {
			p := x
			if role == 1 {
				p = y
			}
			for i := g; i < n; i += block {
				w32.store(at(p, i, 4), 1)
			}
			return
		}
		if role != 2 || g > 1 {
			return
		}
		iriwRead(g, x, y, out, n, timeout)
	}, nil
}

// iriwRead is reader g of IRIW: it records each round's second word, plus 2
// when its first never came.
func iriwRead(g uint64, x, y, out unsafe.Pointer, n uint64, timeout time.Duration) {
	first, second := x, y
	if g == 1 {
		first, second = y, x
	}
	timedOut := false
	for i := uint64(0); i < n; i++ {
		// After one timeout, look once instead of waiting again (as the
		// GPU kernel does), so a lost writer costs one timeout, not one
		// per round.
		wait := timeout
		if timedOut {
			wait = time.Nanosecond
		}
		ok := spin(wait, func() bool { return w32.load(at(first, i, 4)) == 1 })
		timedOut = timedOut || !ok
		v := w32.load(at(second, i, 4))
		if !ok {
			v += 2
		}
		w32.store(at(out, 2*i+g, 4), v)
	}
}

// tallyBody histograms the res pairs of n instances into out's
// kernels.TallyBins counters, grid-stride, witnessed.
func tallyBody(l *launchArgs) (func(g uint64), error) {
	res, out, n, nt, wit, nonce := l.ptr["res"], l.ptr["out"], l.val["n"], l.threads(), l.ptr["wit"], l.val["nonce"]
	return func(g uint64) {
		var hist [kernels.TallyBins]uint64
		var seen uint64
		for i := g; i < n; i += nt {
			hist[kernels.TallyBin(w32.load(at(res, 2*i, 4)), w32.load(at(res, 2*i+1, 4)))]++
			seen++
		}
		for b, c := range hist {
			if c != 0 {
				w64.add(at(out, uint64(b), 8), c)
			}
		}
		witness(wit, nonce, seen, g)
	}, nil
}

// litmusEnvOp is every parallel testing environment: mem holds the x and y
// slots (spread apart) and the barrier words, res two result words per
// instance (n*iters of them).
var litmusEnvOp = hostOp{ptrs: []string{"mem", "res"}, build: litmusEnv,
	needBytes: func(l *launchArgs) map[string]uint64 {
		n, iters, spread := l.val["n"], l.val["iters"], l.val["spread"]
		total := mul(n, iters)
		words := kernels.LitmusEnvWords(n, iters, spread)
		if total == math.MaxUint64 || mul(total, spread) == math.MaxUint64 {
			words = math.MaxUint64
		}
		return map[string]uint64{"mem": mul(words, 4), "res": mul(total, 8)}
	}}

// litmusEnv is the host's parallel testing environment (kernels.cu
// P2P_K_LITMUS, same slots, permutation and result codes). The strong
// kernels use sync/atomic, which is sequentially consistent: stronger than
// release/acquire, as everywhere on this backend. The relaxed mutants use
// plain Go loads and stores, which on amd64 are plain MOVs: x86-TSO keeps
// MP's and LB's orders (their weak outcomes never show) but lets a store
// wait in the store buffer behind a later load, so SB's weak outcome does.
// A CPU has one coherence domain: the device-scope mutants are the strong
// kernels here and cannot be killed.
func litmusEnv(l *launchArgs) (func(g uint64), error) {
	e, err := newLitmusRun(l)
	if err != nil || e == nil {
		return func(uint64) {}, err // e nil: no instances, nothing to do (as on a GPU)
	}
	if e.role == 3 {
		return e.collect, nil
	}
	return e.thread, nil
}

// litmusRun is one launch of a litmus environment: its arguments, the
// memory layout derived from them, and the per-block barrier generations.
type litmusRun struct {
	op                      kernels.Op
	n, iters, role, block   uint64
	tblocks, parties, seed  uint64
	spread, stress          uint64
	timeout                 time.Duration
	acc                     litmusAccess
	res, xs, ys, sync0, hot unsafe.Pointer
	mask, pa, roles         uint64
	gens                    []atomic.Uint64 // block barrier: thread 0 publishes the round
}

// newLitmusRun reads and checks the arguments (nil, nil: no instances) and
// lays out mem as kernels.cu does: xs, ys, then the sync words and the
// stress threads' hot region.
func newLitmusRun(l *launchArgs) (*litmusRun, error) {
	v := l.val
	e := &litmusRun{op: l.k.Op, n: v["n"], iters: v["iters"], role: v["role"], block: l.block,
		tblocks: v["tblocks"], parties: v["parties"], seed: v["seed"], spread: v["spread"], stress: v["stress"],
		timeout: l.timeout(), res: l.ptr["res"]}
	total := e.n * e.iters
	if total == 0 {
		return nil, nil
	}
	if e.spread == 0 || bits.OnesCount64(total) != 1 || e.role > 3 {
		return nil, fmt.Errorf("%s: n*iters must be a power of two and spread, role valid (n=%d iters=%d spread=%d role=%d)",
			l.k.Name, e.n, e.iters, e.spread, e.role)
	}
	// Relaxed (and IRIW's acquire mutant, whose loads amd64 gives acquire
	// order anyway) use plain accesses; CoRR's strong kernel is relaxed by
	// design and keeps sync/atomic (a CPU is coherent either way).
	e.acc.plain = (l.k.Order == kernels.Relaxed || l.k.Order == kernels.Acquire) && l.k.Op != kernels.OpPCoRR
	mem := l.ptr["mem"]
	e.mask = total - 1
	e.xs, e.ys = mem, at(mem, total*e.spread, 4)
	e.sync0 = at(mem, 2*total*e.spread, 4)
	e.hot = at(e.sync0, 32, 4)
	e.gens = make([]atomic.Uint64, (l.nthreads+l.block-1)/l.block)
	e.pa = e.seed>>17 | 1
	e.roles = kernels.LitmusRoles(l.k.Op)
	return e, nil
}

// litmusAccess is a litmus kernel's loads and stores: plain for the
// relaxed mutants, sync/atomic otherwise.
type litmusAccess struct{ plain bool }

func (a litmusAccess) load(p unsafe.Pointer) uint32 {
	if a.plain {
		return *(*uint32)(p)
	}
	return atomic.LoadUint32((*uint32)(p))
}

func (a litmusAccess) store(p unsafe.Pointer, v uint32) {
	if a.plain {
		*(*uint32)(p) = v
		return
	}
	atomic.StoreUint32((*uint32)(p), v)
}

// slots are instance kk's x and y words (two independent permutations).
func (e *litmusRun) slots(kk uint64) (unsafe.Pointer, unsafe.Pointer) {
	return at(e.xs, litmusSlot(kk, e.seed, e.mask)*e.spread, 4), at(e.ys, litmusSlot(kk, e.seed^0x5bd1e995, e.mask)*e.spread, 4)
}

// collect is role 3 (2+2W): after the roles' launches, thread g replaces
// each recorded instance r*n+g's res with 1 + final x, 1 + final y.
func (e *litmusRun) collect(g uint64) {
	for r := uint64(0); r < e.iters && g < e.n && kernels.LitmusCollect[e.op]; r++ {
		kk := r*e.n + g
		x, y := e.slots(kk)
		r0, r1 := (*uint32)(at(e.res, 2*kk, 4)), (*uint32)(at(e.res, 2*kk+1, 4))
		if atomic.LoadUint32(r0) != 0 && atomic.LoadUint32(r1) != 0 {
			atomic.StoreUint32(r0, 1+atomic.LoadUint32((*uint32)(x)))
			atomic.StoreUint32(r1, 1+atomic.LoadUint32((*uint32)(y)))
		}
	}
}

// thread is launch thread g: a stress thread past the testing blocks, else
// a tester that runs its role in every round.
func (e *litmusRun) thread(g uint64) {
	b, t := g/e.block, g%e.block
	if b >= e.tblocks {
		e.stressHot(g)
		return
	}
	// Roles as in kernels.cu: threads [c*n, (c+1)*n) play role c of
	// this launch's roles (all of them for role 2, half for 0/1).
	per, c := e.roles/2, g/e.n
	me := e.role*per + c
	if e.role == 2 {
		per, me = e.roles, c
	}
	j := e.n
	if c < per {
		j = g - c*e.n
	}
	pinned := pinRole(me)
	gaveUp := false
	for r := uint64(0); r < e.iters; r++ {
		if e.parties != 0 {
			gaveUp = e.barrier(b, t, r, gaveUp, pinned)
		}
		if j < e.n {
			e.instance(me, j, r)
		}
	}
}

// stressHot is a stress thread: random loads and stores to a hot 16 KiB
// region, which keeps the memory system busy while the testers run.
func (e *litmusRun) stressHot(g uint64) {
	h := (e.seed ^ g) * 0x9E3779B97F4A7C15
	for i := uint64(0); i < e.stress; i++ {
		h = h*6364136223846793005 + 1442695040888963407
		w := at(e.hot, (h>>33)&4095, 4)
		if i&1 == 1 {
			atomic.StoreUint32((*uint32)(w), uint32(i))
		} else {
			atomic.LoadUint32((*uint32)(w))
		}
	}
}

// barrier is round r's start: thread 0 of block b counts its block in at
// sync0 and waits for every party (giving up for good after one timeout,
// counted in sync0[1]), then releases its block's threads; all start
// together unless the wait was given up. It returns gaveUp.
//
// A thread pinned to a CPU of its own (pinRole) waits on that CPU without
// yielding it: a party that arrives finds the earlier ones still running,
// so the round's instances overlap. Yielding, the earlier party gave its
// CPU to whatever else was runnable (12 busy loops on the loaded 2-core
// machine) and was off it when the last party arrived and ran its
// instance alone: the planted SB mutant never showed its weak outcome and
// passed (issue 48). Unpinned (one usable CPU), it yields so the other
// party can run at all.
func (e *litmusRun) barrier(b, t, r uint64, gaveUp, pinned bool) bool {
	if t == 0 {
		if !gaveUp {
			atomic.AddUint32((*uint32)(e.sync0), 1)
			want := uint32(e.parties * (r + 1))
			if !spinWait(e.timeout, !pinned, func() bool { return atomic.LoadUint32((*uint32)(e.sync0)) >= want }) {
				gaveUp = true
				atomic.AddUint32((*uint32)(at(e.sync0, 1, 4)), 1)
			}
		}
		e.gens[b].Store(r + 1)
	} else {
		spinYield(0, func() bool { return e.gens[b].Load() > r })
	}
	if !gaveUp {
		startTogether()
	}
	return gaveUp
}

// instance runs role me's part of round r's instance for tester j (role 0
// takes instance j; the others a permutation of it) and records the result
// code in the role's res slot.
func (e *litmusRun) instance(me, j, r uint64) {
	idx := j
	if me != 0 {
		idx = (j*e.pa + r*0x9E3779B97F4A7C15 + e.seed + (me-1)*0x632BE59BD9B4E019) & (e.n - 1)
	}
	kk := r*e.n + idx
	x, y := e.slots(kk)
	v, slot := litmusShapes[e.op](e.acc, me, x, y)
	if slot < 2 {
		atomic.StoreUint32((*uint32)(at(e.res, 2*kk+slot, 4)), v)
	}
}

// litmusShapes is each environment's instance: role me's accesses to x and
// y, and the result code it records (1 + what it read) in slot (0 or 1; 2
// records nothing).
var litmusShapes = map[kernels.Op]func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64){
	kernels.OpPMP: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		if me == 0 {
			a.store(x, 1)
			a.store(y, 1)
			return 1, me
		}
		ry := a.load(y)
		rx := a.load(x)
		return 1 + 2*ry + rx, me
	},
	kernels.OpPSB: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		mine, theirs := x, y
		if me == 1 {
			mine, theirs = y, x
		}
		a.store(mine, 1)
		return 1 + a.load(theirs), me
	},
	kernels.OpPLB: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		in, out := x, y
		if me == 1 {
			in, out = y, x
		}
		v := 1 + a.load(in)
		a.store(out, 1)
		return v, me
	},
	kernels.OpPIRIW: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		if me < 2 {
			w := x
			if me == 1 {
				w = y
			}
			a.store(w, 1)
			return 0, 2 // writers record nothing
		}
		p, p2 := x, y
		if me == 3 {
			p, p2 = y, x
		}
		r1 := a.load(p)
		r2 := a.load(p2)
		return 1 + 2*r1 + r2, me - 2
	},
	kernels.OpP22W: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		p, p2 := x, y
		if me == 1 {
			p, p2 = y, x
		}
		a.store(p, 1)
		a.store(p2, 2)
		return 1, me
	},
	kernels.OpPCoRR: func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {
		if me == 0 {
			a.store(x, 1)
			return 1, me
		}
		r1 := a.load(x)
		r2 := a.load(x)
		return 1 + 2*r1 + r2, me
	},
}

// litmusSlot is kernels.cu's p2p_slot: a bijection on [0, mask+1).
func litmusSlot(k, seed, mask uint64) uint64 {
	k = (k*0x9E3779B97F4A7C15 + seed) & mask
	k ^= k >> 7
	return (k * 0xBF58476D1CE4E5B9) & mask
}

// pinRole keeps the two roles on two different CPUs (and reports whether
// this one was pinned): the thread running
// this goroutine is locked to it and pinned to the role's CPU among those
// the process may use. Two roles that the OS placed on one core (seen on
// the loaded 2-core CI machine) take turns and never race, so SB's mutant
// survived whole runs. The goroutine ends locked, so Go retires the thread
// and its pinning with it. With one usable CPU nothing is pinned.
func pinRole(role uint64) bool {
	var cur unix.CPUSet
	if unix.SchedGetaffinity(0, &cur) != nil || cur.Count() < 2 {
		return false
	}
	var cpus []int
	for c := 0; c < len(cur)*64; c++ {
		if cur.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	runtime.LockOSThread()
	var one unix.CPUSet
	one.Set(cpus[int(role)%len(cpus)])
	return unix.SchedSetaffinity(0, &one) == nil // best effort: unpinned, the test still runs
}

// startTogether narrows the skew between the threads leaving a round's
// barrier: each sees the last arrival up to a cache-line transfer late (on
// the order of 100 ns, longer than a store waits in the store buffer), so
// each instead waits for the same wall-clock slot boundary, the next
// multiple of 4 µs at least 2 µs away (CLOCK_REALTIME is shared by
// processes). Threads that read the clock on two sides of a boundary start
// one slot apart: that round is merely unaligned. A GPU needs none of this:
// its barrier release reaches every block within a few clock cycles.
func startTogether() {
	const slot = 4000
	start := (time.Now().UnixNano() + 2000 + slot - 1) / slot * slot
	for time.Now().UnixNano() < start {
	}
}

// spinYield is spin for waits on other processes: after the goroutine
// yields it also yields the CPU (sched_yield), so a rank in another process
// that holds the word's answer gets to run on a machine with few cores.
func spinYield(timeout time.Duration, cond func() bool) bool { return spinWait(timeout, true, cond) }
