package host

import (
	"math"
	"runtime"
	"unsafe"

	"p2patomics/kernels"
)

// patternOps are the memory-access patterns and controls that are not one
// word's RMW: spread and allreduce adds, the copy, the ping-pong, the
// planted racy increment, the flag wait, and the witnessed fill and sum.
var patternOps = map[kernels.Op]hostOp{
	kernels.OpSpread: {ptrs: []string{"target"}, build: spreadBody,
		needBytes: func(l *launchArgs) map[string]uint64 { return map[string]uint64{"target": mul(l.nthreads, 8)} }},
	kernels.OpAllReduce: {ptrs: []string{"dst", "src"}, build: allReduceBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"dst": mul(l.val["n"], 8), "src": mul(l.val["n"], 8)}
		}},
	kernels.OpCopy: {ptrs: []string{"dst", "src"}, build: copyBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"dst": l.val["nbytes"], "src": l.val["nbytes"]}
		}},
	kernels.OpPingPong: {ptrs: []string{"flag", "peer", "out"}, build: pingPongBody, needBytes: pingPongBytes},
	kernels.OpRacy: {ptrs: []string{"target"}, build: racyBody,
		needBytes: fixed(map[string]uint64{"target": 8, "bar": 16})},
	kernels.OpWait: {ptrs: []string{"flag", "out"}, build: waitBody,
		needBytes: fixed(map[string]uint64{"flag": 4, "out": 8})},
	kernels.OpFill: {ptrs: []string{"dst", "wit"}, build: fillBody,
		needBytes: func(l *launchArgs) map[string]uint64 { return map[string]uint64{"dst": mul(l.val["n"], 8), "wit": 16} }},
	kernels.OpSum: {ptrs: []string{"src", "out", "wit"}, build: sumBody,
		needBytes: func(l *launchArgs) map[string]uint64 {
			return map[string]uint64{"src": mul(l.val["n"], 8), "out": 8, "wit": 16}
		}},
}

// spreadBody: thread g adds operand to its own word target[g].
func spreadBody(l *launchArgs) (func(g uint64), error) {
	tgt, operand, iters := l.ptr["target"], l.val["operand"], l.val["iters"]
	return func(g uint64) {
		p := at(tgt, g, 8)
		for i := uint64(0); i < iters; i++ {
			w64.add(p, operand)
		}
	}, nil
}

// allReduceBody adds src into dst, word j by thread j mod nthreads.
func allReduceBody(l *launchArgs) (func(g uint64), error) {
	dst, src, n, nt := l.ptr["dst"], l.ptr["src"], l.val["n"], l.threads()
	return func(g uint64) {
		for j := g; j < n; j += nt {
			w64.add(at(dst, j, 8), w64.load(at(src, j, 8)))
		}
	}, nil
}

// copyBody copies nbytes from src to dst, 16 bytes per thread and stride.
func copyBody(l *launchArgs) (func(g uint64), error) {
	dst, src, nbytes, nt := l.ptr["dst"], l.ptr["src"], l.val["nbytes"], l.threads()
	return func(g uint64) {
		for off := 16 * g; off+16 <= nbytes; off += 16 * nt {
			*(*[16]byte)(unsafe.Add(dst, off)) = *(*[16]byte)(unsafe.Add(src, off))
		}
	}, nil
}

// pingPongBytes: the out record is 3 words (8 per side when one launch
// plays both, role 2), and the last placement's flag word must lie inside
// each flag buffer.
func pingPongBytes(l *launchArgs) map[string]uint64 {
	out := uint64(24)
	if l.val["role"] == 2 {
		out = 64
	}
	span := uint64(8)
	if p := l.val["places"]; p > 1 {
		if span = mul(p-1, l.val["stride"]); span <= math.MaxUint64-8 {
			span += 8
		}
	}
	return map[string]uint64{"flag": span, "peer": span, "out": out}
}

// pingPongBody: side 0 waits for its flag to reach i and sets the peer's
// to i+1, side 1 the same one behind, n rounds per placement; out gets the
// rounds done, a timeout flag and the last flag seen.
func pingPongBody(l *launchArgs) (func(g uint64), error) {
	flag, peer, out, n, role := l.ptr["flag"], l.ptr["peer"], l.ptr["out"], l.val["n"], l.val["role"]
	places, stride, block, timeout := l.val["places"], l.val["stride"], l.block, l.timeout()
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
}

// racyBody is the planted bug: after an optional barrier (bar counts the
// blocks in, up to parties), a load, a pause, a store.
//
// With the barrier, the first add of every party is a rendezvous: each
// loads, counts itself in at bar[1], and stores only once parties have
// loaded (or the timeout passed), so at least two threads read the same
// value and one update is lost however the OS schedules them (issue 48:
// on a loaded machine the two ranks' threads ran one after another and
// pairs.racy_pair_in_round passed; the racy CPU control got the same
// rendezvous in 60d227d).
func racyBody(l *launchArgs) (func(g uint64), error) {
	tgt, bar, iters := l.ptr["target"], l.ptr["bar"], l.val["iters"]
	pause, parties, block, timeout := l.val["pause"], l.val["parties"], l.block, l.timeout()
	return func(g uint64) {
		if bar != nil {
			if g%block == 0 {
				w64.add(bar, 1)
			}
			spin(timeout, func() bool { return w64.load(bar) >= parties })
		}
		if racyHook != nil {
			racyHook(g)
		}
		for i := uint64(0); i < iters; i++ {
			// Each access is atomic on its own; the increment is not.
			x := w64.load(tgt)
			if i == 0 && bar != nil {
				loaded := at(bar, 1, 8)
				w64.add(loaded, 1)
				spin(timeout, func() bool { return w64.load(loaded) >= min(parties, 2) })
			}
			for j := uint64(0); j < pause; j++ {
			}
			// Yield inside the window too: with fewer free CPUs than
			// threads (a loaded CI machine) the threads would otherwise
			// run one after another and lose nothing.
			runtime.Gosched()
			w64.store(tgt, x+1)
		}
	}, nil
}

// racyHook, set by tests only, runs in each racy thread after the barrier:
// a test holds a thread there to plant a schedule.
var racyHook func(g uint64)

// waitBody: thread 0 waits for flag to equal expect; out[0] is 1 when it
// did, 2 on timeout, out[1] the flag's last value.
func waitBody(l *launchArgs) (func(g uint64), error) {
	flag, out, expect, timeout := l.ptr["flag"], l.ptr["out"], l.val["expect"], l.timeout()
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
}

// fillBody stores value in n words of dst, grid-stride, witnessed.
func fillBody(l *launchArgs) (func(g uint64), error) {
	dst, value, n, nt := l.ptr["dst"], l.val["value"], l.val["n"], l.threads()
	wit, nonce := l.ptr["wit"], l.val["nonce"]
	return func(g uint64) {
		var seen uint64
		for j := g; j < n; j += nt {
			w64.store(at(dst, j, 8), value)
			seen++
		}
		witness(wit, nonce, seen, g)
	}, nil
}

// sumBody adds n words of src into out, grid-stride, witnessed.
func sumBody(l *launchArgs) (func(g uint64), error) {
	src, out, n, nt := l.ptr["src"], l.ptr["out"], l.val["n"], l.threads()
	wit, nonce := l.ptr["wit"], l.val["nonce"]
	return func(g uint64) {
		var s, seen uint64
		for j := g; j < n; j += nt {
			s += w64.load(at(src, j, 8))
			seen++
		}
		w64.add(out, s)
		witness(wit, nonce, seen, g)
	}, nil
}
