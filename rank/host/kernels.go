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

	"p2patomics/internal/watchdog"
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
// osYields counts the CPU yields of spinWait (for tests: a wait that
// must keep its CPU never yields it).
var osYields atomic.Int64

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
				osYields.Add(1)
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
	op, ok := hostOps[k.Op]
	if !ok {
		return backend.LaunchResult{}, fmt.Errorf("host: kernel %s (op %s) has no host implementation", k.Name, k.Op)
	}
	l := &launchArgs{k: k, ptr: map[string]unsafe.Pointer{}, val: map[string]uint64{}, nthreads: n, block: uint64(block)}
	for i, a := range k.Args {
		if !a.Ptr {
			l.val[a.Name] = args[i]
		}
	}
	if err := h.resolveArgs(l, op.needBytes(l), args); err != nil {
		return backend.LaunchResult{}, err
	}
	body, err := op.body(l)
	if err != nil {
		return backend.LaunchResult{}, err
	}
	sp := trace.Begin("launch", func() string { return fmt.Sprintf("kernel=%s grid=%d block=%d", k.Name, grid, block) })
	t0 := time.Now()
	var wg sync.WaitGroup
	var left atomic.Int64 // kernel threads still running: what synchronize waits for
	left.Store(int64(n))
	for g := uint64(0); g < n; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); defer left.Add(-1); body(g) }()
	}
	// The host's stream synchronize, through the choke point (so a hang
	// rule can wedge it, as hang-at:cuStreamSynchronize does on a GPU) and
	// under the watchdog, whose query is the count of threads still running.
	done := func() (bool, string) {
		l := left.Load()
		return l == 0, fmt.Sprintf("%d of %d kernel threads running", l, n)
	}
	if err := watchdog.Wait("synchronize", done, func() error {
		return sys("synchronize", func() string { return "kernel=" + k.Name }, func() error { wg.Wait(); return nil })
	}); err != nil {
		sp.EndErr(err, nil)
		return backend.LaunchResult{}, fmt.Errorf("host: kernel %s: synchronize: %w", k.Name, err)
	}
	el := stretchLaunch(k.Name, t0, time.Since(t0))
	sp.End(0, "ok", nil)
	return backend.LaunchResult{Elapsed: el, Method: "wall"}, nil
}

// resolveArgs turns the launch's non-null pointer arguments into Go
// pointers in l.ptr, each checked against how far the kernel reaches (need).
func (h *Backend) resolveArgs(l *launchArgs, need map[string]uint64, args []uint64) error {
	for i, a := range l.k.Args {
		if !a.Ptr || args[i] == 0 {
			continue // a value, or an optional pointer (out, bar) left null
		}
		p, left, err := h.resolve(args[i])
		if err != nil {
			return fmt.Errorf("%s argument %s: %w", l.k.Name, a.Name, err)
		}
		// A GPU faults on an access past its mapping; Go code would write
		// into whatever mapping lies next, so check the extent first.
		if want, ok := need[a.Name]; ok && want > left {
			return fmt.Errorf("%s argument %s: the kernel touches %d bytes from %#x, the mapping holds %d",
				l.k.Name, a.Name, want, args[i], left)
		}
		l.ptr[a.Name] = p
	}
	return nil
}

// launchArgs is what an op's needBytes and body are built from: the kernel,
// its pointer arguments (resolved, extent-checked; a null one is absent),
// its value arguments by name, and the launch's shape.
type launchArgs struct {
	k        kernels.Kernel
	ptr      map[string]unsafe.Pointer
	val      map[string]uint64
	nthreads uint64 // grid x block
	block    uint64
}

// timeout is the kernel's timeout_ns argument (0: wait forever).
func (l *launchArgs) timeout() time.Duration { return time.Duration(l.val["timeout_ns"]) }

// threads is the kernel's nthreads argument, or the launch's thread count
// when the caller left it 0 (the grid-stride kernels).
func (l *launchArgs) threads() uint64 {
	if nt := l.val["nthreads"]; nt != 0 {
		return nt
	}
	return l.nthreads
}

// hostOp is one manifest op on the host: the pointer arguments it cannot
// run without, how far past each pointer argument a launch reaches (from
// the kernel's semantics, the manifest's Doc strings), and the body each
// launch thread runs. Ops register in hostOps from the file of their family:
// rmw.go, patterns.go, litmus.go.
type hostOp struct {
	ptrs      []string
	needBytes func(l *launchArgs) map[string]uint64
	build     func(l *launchArgs) (func(g uint64), error)
}

// hostOps is every op the host runs, one table per family.
// TestEveryManifestKernelHasAHostBody fails for a manifest op missing here,
// or whose needBytes leaves a pointer argument unchecked.
var hostOps = joinOps(rmwOps, patternOps, litmusOps)

// joinOps merges the families' tables; an op in two tables keeps its first
// and shows as a length mismatch in TestHostOpsAreDisjoint.
func joinOps(tables ...map[kernels.Op]hostOp) map[kernels.Op]hostOp {
	all := map[kernels.Op]hostOp{}
	for _, t := range tables {
		for op, h := range t {
			if _, dup := all[op]; !dup {
				all[op] = h
			}
		}
	}
	return all
}

// body checks the required pointers and builds the threads' body.
func (o hostOp) body(l *launchArgs) (func(g uint64), error) {
	for _, n := range o.ptrs {
		if l.ptr[n] == nil {
			return nil, fmt.Errorf("%s: pointer argument %s is null", l.k.Name, n)
		}
	}
	return o.build(l)
}

// mul is a*b, or MaxUint64 (which no mapping holds) when it overflows.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// fixed is a needBytes that does not depend on the launch.
func fixed(m map[string]uint64) func(*launchArgs) map[string]uint64 {
	return func(*launchArgs) map[string]uint64 { return m }
}

// addOut adds v to out[g] when the launch passed out (a per-thread count).
func addOut(out unsafe.Pointer, g, v uint64) {
	if out != nil {
		atomic.AddUint64((*uint64)(at(out, g, 8)), v)
	}
}

func at(p unsafe.Pointer, i, size uint64) unsafe.Pointer { return unsafe.Add(p, i*size) }

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
