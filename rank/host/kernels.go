package host

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"p2patomics/kernels"
	"p2patomics/rank/backend"
	"p2patomics/trace"
)

// word abstracts a 32- or 64-bit atomic word so each op is written once.
type word struct {
	bits   int
	signed bool
	load   func(p unsafe.Pointer) uint64
	store  func(p unsafe.Pointer, v uint64)
	add    func(p unsafe.Pointer, v uint64) uint64 // returns old
	swap   func(p unsafe.Pointer, v uint64) uint64
	cas    func(p unsafe.Pointer, old, new uint64) bool
	and    func(p unsafe.Pointer, v uint64) uint64
	or     func(p unsafe.Pointer, v uint64) uint64
}

var w32 = word{bits: 32,
	load:  func(p unsafe.Pointer) uint64 { return uint64(atomic.LoadUint32((*uint32)(p))) },
	store: func(p unsafe.Pointer, v uint64) { atomic.StoreUint32((*uint32)(p), uint32(v)) },
	add: func(p unsafe.Pointer, v uint64) uint64 {
		return uint64(atomic.AddUint32((*uint32)(p), uint32(v)) - uint32(v))
	},
	swap: func(p unsafe.Pointer, v uint64) uint64 { return uint64(atomic.SwapUint32((*uint32)(p), uint32(v))) },
	cas: func(p unsafe.Pointer, o, n uint64) bool {
		return atomic.CompareAndSwapUint32((*uint32)(p), uint32(o), uint32(n))
	},
	and: func(p unsafe.Pointer, v uint64) uint64 { return uint64(atomic.AndUint32((*uint32)(p), uint32(v))) },
	or:  func(p unsafe.Pointer, v uint64) uint64 { return uint64(atomic.OrUint32((*uint32)(p), uint32(v))) },
}

var w64 = word{bits: 64,
	load:  func(p unsafe.Pointer) uint64 { return atomic.LoadUint64((*uint64)(p)) },
	store: func(p unsafe.Pointer, v uint64) { atomic.StoreUint64((*uint64)(p), v) },
	add:   func(p unsafe.Pointer, v uint64) uint64 { return atomic.AddUint64((*uint64)(p), v) - v },
	swap:  func(p unsafe.Pointer, v uint64) uint64 { return atomic.SwapUint64((*uint64)(p), v) },
	cas:   func(p unsafe.Pointer, o, n uint64) bool { return atomic.CompareAndSwapUint64((*uint64)(p), o, n) },
	and:   func(p unsafe.Pointer, v uint64) uint64 { return atomic.AndUint64((*uint64)(p), v) },
	or:    func(p unsafe.Pointer, v uint64) uint64 { return atomic.OrUint64((*uint64)(p), v) },
}

func wordFor(t kernels.Type) word {
	w := w64
	if t.Bits() == 32 {
		w = w32
	}
	w.signed = t.Signed()
	return w
}

func (w word) mask(v uint64) uint64 {
	if w.bits == 32 {
		return v & math.MaxUint32
	}
	return v
}

// less compares two words as the type's signedness says.
func (w word) less(a, b uint64) bool {
	if !w.signed {
		return w.mask(a) < w.mask(b)
	}
	if w.bits == 32 {
		return int32(uint32(a)) < int32(uint32(b))
	}
	return int64(a) < int64(b)
}

// rmw applies f with a CAS loop and returns the failed attempts.
func (w word) rmw(p unsafe.Pointer, f func(old uint64) uint64) uint64 {
	var fails uint64
	for {
		old := w.load(p)
		if w.cas(p, old, w.mask(f(old))) {
			return fails
		}
		fails++
	}
}

// spin waits until cond holds or timeout passes (0 = forever); it yields so
// that a spinning goroutine never starves the one it waits for.
func spin(timeout time.Duration, cond func() bool) bool { return spinWait(timeout, false, cond) }

// spinWait is spin and spinYield: every 64 tries it checks the deadline and
// yields the goroutine; with osYield, every 1024 tries the CPU as well.
func spinWait(timeout time.Duration, osYield bool, cond func() bool) bool {
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
			if osYield && i&1023 == 1023 {
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
}

// Launch runs a manifest kernel with one goroutine per thread.
func (h *Backend) Launch(k kernels.Kernel, grid, block uint32, args []uint64) (backend.LaunchResult, error) {
	n := uint64(grid) * uint64(block)
	if n == 0 || n > MaxThreads {
		return backend.LaunchResult{}, fmt.Errorf("host: %s launch of %d threads (grid %d x block %d); the host runs 1..%d",
			k.Name, n, grid, block, MaxThreads)
	}
	ptr := map[string]unsafe.Pointer{}
	val := map[string]uint64{}
	for i, a := range k.Args {
		if !a.Ptr {
			val[a.Name] = args[i]
		}
	}
	need := needBytes(k, val, n)
	for i, a := range k.Args {
		if !a.Ptr || args[i] == 0 {
			continue // a value, or an optional pointer (out, bar) left null
		}
		p, left, err := h.resolve(args[i])
		if err != nil {
			return backend.LaunchResult{}, fmt.Errorf("%s argument %s: %w", k.Name, a.Name, err)
		}
		// A GPU faults on an access past its mapping; Go code would write
		// into whatever mapping lies next, so check the extent first.
		if want, ok := need[a.Name]; ok && want > left {
			return backend.LaunchResult{}, fmt.Errorf("%s argument %s: the kernel touches %d bytes from %#x, the mapping holds %d",
				k.Name, a.Name, want, args[i], left)
		}
		ptr[a.Name] = p
	}
	body, err := h.body(k, ptr, val, n, uint64(block))
	if err != nil {
		return backend.LaunchResult{}, err
	}
	sp := trace.Begin("launch", func() string { return fmt.Sprintf("kernel=%s grid=%d block=%d", k.Name, grid, block) })
	t0 := time.Now()
	var wg sync.WaitGroup
	for g := uint64(0); g < n; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); body(g) }()
	}
	wg.Wait()
	el := time.Since(t0)
	sp.End(0, "ok", nil)
	return backend.LaunchResult{Elapsed: el, Method: "wall"}, nil
}

func at(p unsafe.Pointer, i, size uint64) unsafe.Pointer { return unsafe.Add(p, i*size) }

func (h *Backend) body(k kernels.Kernel, ptr map[string]unsafe.Pointer, val map[string]uint64, nthreads, block uint64) (func(g uint64), error) {
	w := wordFor(k.Type)
	tgt, out := ptr["target"], ptr["out"]
	operand, iters, salt := val["operand"], val["iters"], val["salt"]
	timeout := time.Duration(val["timeout_ns"])
	need := func(names ...string) error {
		for _, n := range names {
			if ptr[n] == nil {
				return fmt.Errorf("%s: pointer argument %s is null", k.Name, n)
			}
		}
		return nil
	}
	addOut := func(g, v uint64) {
		if out != nil {
			atomic.AddUint64((*uint64)(at(out, g, 8)), v)
		}
	}
	if k.Op.IsRMW() {
		if err := need("target"); err != nil {
			return nil, err
		}
	}
	switch k.Op {
	case kernels.OpAdd:
		if k.Type == kernels.F32 {
			return func(uint64) {
				for i := uint64(0); i < iters; i++ {
					w.rmw(tgt, func(o uint64) uint64 {
						return uint64(math.Float32bits(math.Float32frombits(uint32(o)) + math.Float32frombits(uint32(operand))))
					})
				}
			}, nil
		}
		return func(uint64) {
			for i := uint64(0); i < iters; i++ {
				w.add(tgt, operand)
			}
		}, nil
	case kernels.OpSub:
		return func(uint64) {
			for i := uint64(0); i < iters; i++ {
				w.add(tgt, -operand)
			}
		}, nil
	case kernels.OpXchg:
		if err := need("out"); err != nil {
			return nil, err
		}
		return func(g uint64) {
			var s uint64
			for i := uint64(0); i < iters; i++ {
				s += w.swap(tgt, w.mask(kernels.Tag(salt, g, i)))
			}
			addOut(g, s)
		}, nil
	case kernels.OpCAS:
		return func(g uint64) {
			var fails uint64
			for i := uint64(0); i < iters; i++ {
				fails += w.rmw(tgt, func(o uint64) uint64 { return o + 1 })
			}
			addOut(g, fails)
		}, nil
	case kernels.OpAnd:
		return func(g uint64) {
			b := kernels.Bit(salt, g, w.bits)
			for i := uint64(0); i < iters; i++ {
				w.and(tgt, w.mask(^b))
			}
		}, nil
	case kernels.OpOr:
		return func(g uint64) {
			b := kernels.Bit(salt, g, w.bits)
			for i := uint64(0); i < iters; i++ {
				w.or(tgt, b)
			}
		}, nil
	case kernels.OpXor:
		return func(g uint64) {
			b := kernels.Bit(salt, g, w.bits)
			for i := uint64(0); i < iters; i++ {
				w.rmw(tgt, func(o uint64) uint64 { return o ^ b })
			}
		}, nil
	case kernels.OpMin, kernels.OpMax:
		isMin := k.Op == kernels.OpMin
		return func(g uint64) {
			v := w.mask(kernels.MinMaxValue(salt, g, operand))
			for i := uint64(0); i < iters; i++ {
				w.rmw(tgt, func(o uint64) uint64 {
					if isMin == w.less(v, o) {
						return v
					}
					return o
				})
			}
		}, nil
	case kernels.OpInc:
		return func(uint64) {
			for i := uint64(0); i < iters; i++ {
				w.rmw(tgt, func(o uint64) uint64 {
					if w.mask(o) >= w.mask(operand) {
						return 0
					}
					return o + 1
				})
			}
		}, nil
	case kernels.OpSpread:
		if err := need("target"); err != nil {
			return nil, err
		}
		return func(g uint64) {
			p := at(tgt, g, 8)
			for i := uint64(0); i < iters; i++ {
				w64.add(p, operand)
			}
		}, nil
	case kernels.OpAllReduce:
		if err := need("dst", "src"); err != nil {
			return nil, err
		}
		dst, src, n, nt := ptr["dst"], ptr["src"], val["n"], val["nthreads"]
		if nt == 0 {
			nt = nthreads
		}
		return func(g uint64) {
			for j := g; j < n; j += nt {
				w64.add(at(dst, j, 8), w64.load(at(src, j, 8)))
			}
		}, nil
	case kernels.OpMP:
		if err := need("x", "y", "out"); err != nil {
			return nil, err
		}
		if err := need("wit"); err != nil {
			return nil, err
		}
		x, y, n, role := ptr["x"], ptr["y"], val["n"], val["role"]
		wit, nonce := ptr["wit"], val["nonce"]
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
	case kernels.OpSB:
		if err := need("x", "y", "out"); err != nil {
			return nil, err
		}
		x, y, n, role := ptr["x"], ptr["y"], val["n"], val["role"]
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
	case kernels.OpIRIW:
		if err := need("x", "y"); err != nil {
			return nil, err
		}
		if val["role"] == 2 && out == nil {
			return nil, fmt.Errorf("%s: the reader role needs out", k.Name)
		}
		x, y, n, role := ptr["x"], ptr["y"], val["n"], val["role"]
		return func(g uint64) {
			switch role {
			case 0, 1:
				p := x
				if role == 1 {
					p = y
				}
				for i := g; i < n; i += block {
					w32.store(at(p, i, 4), 1)
				}
			case 2:
				if g > 1 {
					return
				}
				first, second := x, y
				if g == 1 {
					first, second = y, x
				}
				timedOut := false
				for i := uint64(0); i < n; i++ {
					// After one timeout, look once instead of waiting again
					// (as the GPU kernel does), so a lost writer costs one
					// timeout, not one per round.
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
		}, nil
	case kernels.OpPingPong:
		if err := need("flag", "peer", "out"); err != nil {
			return nil, err
		}
		flag, peer, n, role := ptr["flag"], ptr["peer"], val["n"], val["role"]
		places, stride := val["places"], val["stride"]
		return func(g uint64) {
			side := role
			if role == 2 {
				side = g / block // block b plays side b
			}
			if g%block != 0 || side > 1 || (role != 2 && g != 0) {
				return
			}
			mine, other, o := flag, peer, out
			if role == 2 && side == 1 {
				mine, other = peer, flag
			}
			if role == 2 {
				o = at(out, 4*side, 8)
			}
			var done uint64
			late, last := false, mine
			for p := uint64(0); p < places && !late; p++ {
				m, oth := at(mine, p*stride, 1), at(other, p*stride, 1)
				for i := uint64(0); i < n; i++ {
					want := i
					if side == 1 {
						want = i + 1
					}
					if !spin(timeout, func() bool { return w64.load(m) == want }) {
						w64.store(at(o, 1, 8), 1)
						late = true
						break
					}
					w64.store(oth, i+1)
					done++
				}
				last = m
			}
			w64.store(o, done)
			w64.store(at(o, 2, 8), w64.load(last))
		}, nil
	case kernels.OpPMP, kernels.OpPSB, kernels.OpPLB, kernels.OpPIRIW, kernels.OpP22W, kernels.OpPCoRR:
		if err := need("mem", "res"); err != nil {
			return nil, err
		}
		return litmusEnv(k, ptr["mem"], ptr["res"], val, block, nthreads)
	case kernels.OpTally:
		if err := need("res", "out", "wit"); err != nil {
			return nil, err
		}
		res, n, nt, wit, nonce := ptr["res"], val["n"], val["nthreads"], ptr["wit"], val["nonce"]
		if nt == 0 {
			nt = nthreads
		}
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
	case kernels.OpCopy:
		if err := need("dst", "src"); err != nil {
			return nil, err
		}
		dst, src, nbytes, nt := ptr["dst"], ptr["src"], val["nbytes"], val["nthreads"]
		if nt == 0 {
			nt = nthreads
		}
		return func(g uint64) {
			for off := 16 * g; off+16 <= nbytes; off += 16 * nt {
				*(*[16]byte)(unsafe.Add(dst, off)) = *(*[16]byte)(unsafe.Add(src, off))
			}
		}, nil
	case kernels.OpRacy:
		if err := need("target"); err != nil {
			return nil, err
		}
		bar, pause, parties := ptr["bar"], val["pause"], val["parties"]
		return func(g uint64) {
			if bar != nil {
				if g%block == 0 {
					w64.add(bar, 1)
				}
				spin(timeout, func() bool { return w64.load(bar) >= parties })
			}
			for i := uint64(0); i < iters; i++ {
				// The planted bug: a load, a pause, a store. Each access
				// is atomic on its own; the increment is not.
				x := w64.load(tgt)
				for j := uint64(0); j < pause; j++ {
				}
				// Yield inside the window too: with fewer free CPUs than
				// threads (a loaded CI machine) the threads would otherwise
				// run one after another and lose nothing.
				runtime.Gosched()
				w64.store(tgt, x+1)
			}
		}, nil
	case kernels.OpWait:
		if err := need("flag", "out"); err != nil {
			return nil, err
		}
		flag, expect := ptr["flag"], val["expect"]
		return func(g uint64) {
			if g != 0 {
				return
			}
			ok := spin(timeout, func() bool { return w32.load(flag) == w32.mask(expect) })
			res := uint64(1)
			if !ok {
				res = 2
			}
			w32.store(out, res)
			w32.store(at(out, 1, 4), w32.load(flag))
		}, nil
	case kernels.OpSum:
		if err := need("src", "out", "wit"); err != nil {
			return nil, err
		}
		src, n, nt, wit, nonce := ptr["src"], val["n"], val["nthreads"], ptr["wit"], val["nonce"]
		if nt == 0 {
			nt = nthreads
		}
		return func(g uint64) {
			var s, seen uint64
			for j := g; j < n; j += nt {
				s += w64.load(at(src, j, 8))
				seen++
			}
			w64.add(out, s)
			witness(wit, nonce, seen, g)
		}, nil
	case kernels.OpFill:
		if err := need("dst", "wit"); err != nil {
			return nil, err
		}
		dst, value, n, nt, wit, nonce := ptr["dst"], val["value"], val["n"], val["nthreads"], ptr["wit"], val["nonce"]
		if nt == 0 {
			nt = nthreads
		}
		return func(g uint64) {
			var seen uint64
			for j := g; j < n; j += nt {
				w64.store(at(dst, j, 8), value)
				seen++
			}
			witness(wit, nonce, seen, g)
		}, nil
	}
	return nil, fmt.Errorf("host: kernel %s (op %s) has no host implementation", k.Name, k.Op)
}

// needBytes is how far past each pointer argument a launch reaches, from
// the kernel's semantics (manifest Doc strings). Products that overflow
// become MaxUint64, which no mapping holds.
func needBytes(k kernels.Kernel, val map[string]uint64, nthreads uint64) map[string]uint64 {
	mul := func(a, b uint64) uint64 {
		hi, lo := bits.Mul64(a, b)
		if hi != 0 {
			return math.MaxUint64
		}
		return lo
	}
	word := uint64(k.Type.Bits() / 8)
	n := val["n"]
	switch k.Op {
	case kernels.OpAdd, kernels.OpSub, kernels.OpXchg, kernels.OpCAS, kernels.OpAnd, kernels.OpOr,
		kernels.OpXor, kernels.OpMin, kernels.OpMax, kernels.OpInc:
		return map[string]uint64{"target": word, "out": mul(nthreads, 8)}
	case kernels.OpSpread:
		return map[string]uint64{"target": mul(nthreads, 8)}
	case kernels.OpAllReduce:
		return map[string]uint64{"dst": mul(n, 8), "src": mul(n, 8)}
	case kernels.OpMP:
		return map[string]uint64{"x": mul(n, 4), "y": mul(n, 4), "out": 16, "wit": 16}
	case kernels.OpPMP, kernels.OpPSB, kernels.OpPLB, kernels.OpPIRIW, kernels.OpP22W, kernels.OpPCoRR:
		total := mul(n, val["iters"])
		words := kernels.LitmusEnvWords(n, val["iters"], val["spread"])
		if total == math.MaxUint64 || mul(total, val["spread"]) == math.MaxUint64 {
			words = math.MaxUint64
		}
		return map[string]uint64{"mem": mul(words, 4), "res": mul(total, 8)}
	case kernels.OpTally:
		return map[string]uint64{"res": mul(n, 8), "out": kernels.TallyBins * 8, "wit": 16}
	case kernels.OpSB:
		return map[string]uint64{"x": mul(n, 4), "y": mul(n, 4), "out": mul(n, 4)}
	case kernels.OpIRIW:
		return map[string]uint64{"x": mul(n, 4), "y": mul(n, 4), "out": mul(n, 8)}
	case kernels.OpPingPong:
		out := uint64(24)
		if val["role"] == 2 {
			out = 64
		}
		// The last placement's flag word must lie inside each buffer.
		span := uint64(8)
		if p := val["places"]; p > 1 {
			if span = mul(p-1, val["stride"]); span <= math.MaxUint64-8 {
				span += 8
			}
		}
		return map[string]uint64{"flag": span, "peer": span, "out": out}
	case kernels.OpCopy:
		return map[string]uint64{"dst": val["nbytes"], "src": val["nbytes"]}
	case kernels.OpRacy:
		return map[string]uint64{"target": 8, "bar": 8}
	case kernels.OpWait:
		return map[string]uint64{"flag": 4, "out": 8}
	case kernels.OpFill:
		return map[string]uint64{"dst": mul(n, 8), "wit": 16}
	case kernels.OpSum:
		return map[string]uint64{"src": mul(n, 8), "out": 8, "wit": 16}
	}
	return nil
}

// witness is p2p_witness of kernels/src/p2p.h: thread g adds the elements it
// visited to wit[0] and thread 0 stores the launch's nonce in wit[1].
func witness(wit unsafe.Pointer, nonce, seen, g uint64) {
	if seen != 0 {
		w64.add(wit, seen)
	}
	if g == 0 {
		w64.store(at(wit, 1, 8), nonce)
	}
}
