package host

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"p2patomics/kernels"
)

// litmusEnv is the host's parallel testing environment (kernels.cu
// P2P_K_LITMUS, same slots, permutation and result codes). The strong
// kernels use sync/atomic, which is sequentially consistent: stronger than
// release/acquire, as everywhere on this backend. The relaxed mutants use
// plain Go loads and stores, which on amd64 are plain MOVs: x86-TSO keeps
// MP's and LB's orders (their weak outcomes never show) but lets a store
// wait in the store buffer behind a later load, so SB's weak outcome does.
// A CPU has one coherence domain: the device-scope mutants are the strong
// kernels here and cannot be killed.
func litmusEnv(k kernels.Kernel, mem, res unsafe.Pointer, val map[string]uint64, block, nthreads uint64) (func(g uint64), error) {
	n, iters, role := val["n"], val["iters"], val["role"]
	tblocks, parties, seed := val["tblocks"], val["parties"], val["seed"]
	spread, stress := val["spread"], val["stress"]
	timeout := time.Duration(val["timeout_ns"])
	total := n * iters
	if total == 0 {
		return func(uint64) {}, nil // no instances: nothing to do (as on a GPU)
	}
	if spread == 0 || bits.OnesCount64(total) != 1 || role > 2 {
		return nil, fmt.Errorf("%s: n*iters must be a power of two and spread, role valid (n=%d iters=%d spread=%d role=%d)",
			k.Name, n, iters, spread, role)
	}
	plain := k.Order == kernels.Relaxed
	load := func(p unsafe.Pointer) uint32 {
		if plain {
			return *(*uint32)(p)
		}
		return atomic.LoadUint32((*uint32)(p))
	}
	store := func(p unsafe.Pointer, v uint32) {
		if plain {
			*(*uint32)(p) = v
			return
		}
		atomic.StoreUint32((*uint32)(p), v)
	}
	mask := total - 1
	xs, ys := mem, at(mem, total*spread, 4)
	sync0 := at(mem, 2*total*spread, 4)
	hot := at(sync0, 32, 4)
	nblocks := (nthreads + block - 1) / block
	gens := make([]atomic.Uint64, nblocks) // block barrier: thread 0 publishes the round
	pa := seed>>17 | 1
	return func(g uint64) {
		b, t := g/block, g%block
		if b >= tblocks {
			h := (seed ^ g) * 0x9E3779B97F4A7C15
			for i := uint64(0); i < stress; i++ {
				h = h*6364136223846793005 + 1442695040888963407
				w := at(hot, (h>>33)&4095, 4)
				if i&1 == 1 {
					atomic.StoreUint32((*uint32)(w), uint32(i))
				} else {
					atomic.LoadUint32((*uint32)(w))
				}
			}
			return
		}
		me, j := role, g
		if role == 2 {
			me, j = 0, g
			if g >= n {
				me, j = 1, g-n
			}
		}
		pinRole(me)
		gaveUp := false
		for r := uint64(0); r < iters; r++ {
			if parties != 0 {
				if t == 0 {
					if !gaveUp {
						atomic.AddUint32((*uint32)(sync0), 1)
						want := uint32(parties * (r + 1))
						if !spinYield(timeout, func() bool { return atomic.LoadUint32((*uint32)(sync0)) >= want }) {
							gaveUp = true
							atomic.AddUint32((*uint32)(at(sync0, 1, 4)), 1)
						}
					}
					gens[b].Store(r + 1)
				} else {
					spinYield(0, func() bool { return gens[b].Load() > r })
				}
				if !gaveUp {
					startTogether()
				}
			}
			if j >= n {
				continue
			}
			idx := j
			if me == 1 {
				idx = (j*pa + r*0x9E3779B97F4A7C15 + seed) & (n - 1)
			}
			kk := r*n + idx
			x := at(xs, litmusSlot(kk, seed, mask)*spread, 4)
			y := at(ys, litmusSlot(kk, seed^0x5bd1e995, mask)*spread, 4)
			var v uint32
			switch k.Op {
			case kernels.OpPMP:
				if me == 0 {
					store(x, 1)
					store(y, 1)
					v = 1
				} else {
					ry := load(y)
					rx := load(x)
					v = 1 + 2*ry + rx
				}
			case kernels.OpPSB:
				mine, theirs := x, y
				if me == 1 {
					mine, theirs = y, x
				}
				store(mine, 1)
				v = 1 + load(theirs)
			case kernels.OpPLB:
				in, out := x, y
				if me == 1 {
					in, out = y, x
				}
				v = 1 + load(in)
				store(out, 1)
			}
			atomic.StoreUint32((*uint32)(at(res, 2*kk+me, 4)), v)
		}
	}, nil
}

// litmusSlot is kernels.cu's p2p_slot: a bijection on [0, mask+1).
func litmusSlot(k, seed, mask uint64) uint64 {
	k = (k*0x9E3779B97F4A7C15 + seed) & mask
	k ^= k >> 7
	return (k * 0xBF58476D1CE4E5B9) & mask
}

// pinRole keeps the two roles on two different CPUs: the thread running
// this goroutine is locked to it and pinned to the role's CPU among those
// the process may use. Two roles that the OS placed on one core (seen on
// the loaded 2-core CI machine) take turns and never race, so SB's mutant
// survived whole runs. The goroutine ends locked, so Go retires the thread
// and its pinning with it. With one usable CPU nothing is pinned.
func pinRole(role uint64) {
	var cur unix.CPUSet
	if unix.SchedGetaffinity(0, &cur) != nil || cur.Count() < 2 {
		return
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
	_ = unix.SchedSetaffinity(0, &one) // best effort: unpinned, the test still runs
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
func spinYield(timeout time.Duration, cond func() bool) bool {
	var deadline time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if i&63 == 63 {
			if timeout > 0 {
				if deadline.IsZero() {
					deadline = time.Now().Add(timeout)
				} else if time.Now().After(deadline) {
					return false
				}
			}
			runtime.Gosched()
			if i&1023 == 1023 {
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
}
