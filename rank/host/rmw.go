package host

import (
	"math"
	"unsafe"

	"p2patomics/kernels"
)

// rmwOps are the read-modify-write ops (kernels.RMW): each thread applies
// the op iters times to the one target word, as kernels.cu's P2P_K_SIMPLE.
var rmwOps = map[kernels.Op]hostOp{
	kernels.OpAdd:  rmwOp(rmwAdd),
	kernels.OpSub:  rmwOp(rmwSub),
	kernels.OpXchg: rmwOp(rmwXchg, "out"),
	kernels.OpCAS:  rmwOp(rmwCAS),
	kernels.OpAnd:  rmwOp(rmwAnd),
	kernels.OpOr:   rmwOp(rmwOr),
	kernels.OpXor:  rmwOp(rmwXor),
	kernels.OpMin:  rmwOp(rmwMinMax(true)),
	kernels.OpMax:  rmwOp(rmwMinMax(false)),
	kernels.OpInc:  rmwOp(rmwInc),
}

// rmwLaunch is what an RMW body reads: the word's width and signedness, the
// target, and the value arguments every RMW kernel takes (rmwArgs).
type rmwLaunch struct {
	typ                  kernels.Type
	w                    word
	tgt, out             unsafe.Pointer
	operand, iters, salt uint64
}

// rmwOp makes an RMW op's table entry: every one needs its target (and
// some more pointers), and all reach the same bytes: one word of target and,
// where passed, one 8-byte count per thread in out.
func rmwOp(body func(r rmwLaunch) func(g uint64), more ...string) hostOp {
	return hostOp{
		ptrs: append([]string{"target"}, more...),
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"target": uint64(l.k.Type.Bits() / 8), "out": mul(l.nthreads, 8)}
		},
		build: func(l *launchArgs) (func(g uint64), error) {
			return body(rmwLaunch{typ: l.k.Type, w: wordFor(l.k.Type), tgt: l.ptr["target"], out: l.ptr["out"],
				operand: l.val["operand"], iters: l.val["iters"], salt: l.val["salt"]}), nil
		},
	}
}

func rmwAdd(r rmwLaunch) func(uint64) {
	if r.typ == kernels.F32 { // a CAS loop: no atomic float add in Go
		return func(uint64) {
			for i := uint64(0); i < r.iters; i++ {
				r.w.rmw(r.tgt, func(o uint64) uint64 {
					return uint64(math.Float32bits(math.Float32frombits(uint32(o)) + math.Float32frombits(uint32(r.operand))))
				})
			}
		}
	}
	return func(uint64) {
		for i := uint64(0); i < r.iters; i++ {
			r.w.add(r.tgt, r.operand)
		}
	}
}

func rmwSub(r rmwLaunch) func(uint64) {
	return func(uint64) {
		for i := uint64(0); i < r.iters; i++ {
			r.w.add(r.tgt, -r.operand)
		}
	}
}

// rmwXchg swaps in a tag per thread and iteration and adds what it got back
// to out[g], so the sum over threads proves every old value was seen once.
func rmwXchg(r rmwLaunch) func(uint64) {
	return func(g uint64) {
		var s uint64
		for i := uint64(0); i < r.iters; i++ {
			s += r.w.swap(r.tgt, r.w.mask(kernels.Tag(r.salt, g, i)))
		}
		addOut(r.out, g, s)
	}
}

// rmwCAS increments by CAS loop and counts the failed attempts in out[g].
func rmwCAS(r rmwLaunch) func(uint64) {
	return func(g uint64) {
		var fails uint64
		for i := uint64(0); i < r.iters; i++ {
			fails += r.w.rmw(r.tgt, func(o uint64) uint64 { return o + 1 })
		}
		addOut(r.out, g, fails)
	}
}

func rmwAnd(r rmwLaunch) func(uint64) {
	return func(g uint64) {
		b := kernels.Bit(r.salt, g, r.w.bits)
		for i := uint64(0); i < r.iters; i++ {
			r.w.and(r.tgt, r.w.mask(^b))
		}
	}
}

func rmwOr(r rmwLaunch) func(uint64) {
	return func(g uint64) {
		b := kernels.Bit(r.salt, g, r.w.bits)
		for i := uint64(0); i < r.iters; i++ {
			r.w.or(r.tgt, b)
		}
	}
}

func rmwXor(r rmwLaunch) func(uint64) {
	return func(g uint64) {
		b := kernels.Bit(r.salt, g, r.w.bits)
		for i := uint64(0); i < r.iters; i++ {
			r.w.rmw(r.tgt, func(o uint64) uint64 { return o ^ b })
		}
	}
}

// rmwMinMax keeps the smaller (isMin) or larger of the word and the
// thread's value, compared as the type's signedness says.
func rmwMinMax(isMin bool) func(r rmwLaunch) func(uint64) {
	return func(r rmwLaunch) func(uint64) {
		return func(g uint64) {
			v := r.w.mask(kernels.MinMaxValue(r.salt, g, r.operand))
			for i := uint64(0); i < r.iters; i++ {
				r.w.rmw(r.tgt, func(o uint64) uint64 {
					if isMin == r.w.less(v, o) {
						return v
					}
					return o
				})
			}
		}
	}
}

// rmwInc is CUDA's atomicInc: wrap to 0 at operand, else add one.
func rmwInc(r rmwLaunch) func(uint64) {
	return func(uint64) {
		for i := uint64(0); i < r.iters; i++ {
			r.w.rmw(r.tgt, func(o uint64) uint64 {
				if r.w.mask(o) >= r.w.mask(r.operand) {
					return 0
				}
				return o + 1
			})
		}
	}
}
