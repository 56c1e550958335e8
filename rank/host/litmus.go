package host

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
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
	if spread == 0 || bits.OnesCount64(total) != 1 || role > 3 {
		return nil, fmt.Errorf("%s: n*iters must be a power of two and spread, role valid (n=%d iters=%d spread=%d role=%d)",
			k.Name, n, iters, spread, role)
	}
	// Relaxed (and IRIW's acquire mutant, whose loads amd64 gives acquire
	// order anyway) use plain accesses; CoRR's strong kernel is relaxed by
	// design and keeps sync/atomic (a CPU is coherent either way).
	plain := (k.Order == kernels.Relaxed || k.Order == kernels.Acquire) && k.Op != kernels.OpPCoRR
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
	roles := kernels.LitmusRoles(k.Op)
	slots := func(kk uint64) (unsafe.Pointer, unsafe.Pointer) {
		return at(xs, litmusSlot(kk, seed, mask)*spread, 4), at(ys, litmusSlot(kk, seed^0x5bd1e995, mask)*spread, 4)
	}
	if role == 3 {
		// Collect (2+2W): after the roles' launches, thread g replaces
		// each recorded instance r*n+g's res with 1 + final x, 1 + final y.
		return func(g uint64) {
			for r := uint64(0); r < iters && g < n && kernels.LitmusCollect[k.Op]; r++ {
				kk := r*n + g
				x, y := slots(kk)
				r0, r1 := (*uint32)(at(res, 2*kk, 4)), (*uint32)(at(res, 2*kk+1, 4))
				if atomic.LoadUint32(r0) != 0 && atomic.LoadUint32(r1) != 0 {
					atomic.StoreUint32(r0, 1+atomic.LoadUint32((*uint32)(x)))
					atomic.StoreUint32(r1, 1+atomic.LoadUint32((*uint32)(y)))
				}
			}
		}, nil
	}
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
		// Roles as in kernels.cu: threads [c*n, (c+1)*n) play role c of
		// this launch's roles (all of them for role 2, half for 0/1).
		per, c := roles/2, g/n
		me := role*per + c
		if role == 2 {
			per, me = roles, c
		}
		j := n
		if c < per {
			j = g - c*n
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
			if me != 0 {
				idx = (j*pa + r*0x9E3779B97F4A7C15 + seed + (me-1)*0x632BE59BD9B4E019) & (n - 1)
			}
			kk := r*n + idx
			x, y := slots(kk)
			var v uint32
			slot := me
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
			case kernels.OpPIRIW:
				if me < 2 {
					w := x
					if me == 1 {
						w = y
					}
					store(w, 1)
					slot = 2 // writers record nothing
					break
				}
				a, a2 := x, y
				if me == 3 {
					a, a2 = y, x
				}
				r1 := load(a)
				r2 := load(a2)
				v, slot = 1+2*r1+r2, me-2
			case kernels.OpP22W:
				a, a2 := x, y
				if me == 1 {
					a, a2 = y, x
				}
				store(a, 1)
				store(a2, 2)
				v = 1
			case kernels.OpPCoRR:
				if me == 0 {
					store(x, 1)
					v = 1
				} else {
					r1 := load(x)
					r2 := load(x)
					v = 1 + 2*r1 + r2
				}
			}
			if slot < 2 {
				atomic.StoreUint32((*uint32)(at(res, 2*kk+slot, 4)), v)
			}
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
func spinYield(timeout time.Duration, cond func() bool) bool { return spinWait(timeout, true, cond) }
