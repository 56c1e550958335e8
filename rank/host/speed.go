package host

import (
	"fmt"
	"runtime"
	"time"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// The injector's speed rules on the host backend (docs/FAULTS.md, "The
// driver-fault injector"). Both act inside the wall-clock window the
// metric is taken from and change no byte a kernel or a copy leaves.

// copyAgain issues the copy of src into dst again as copy-times asks: the
// first copy has run; whole-1 more of all of it and one of the first extra
// bytes follow. Each writes the bytes the first wrote.
func copyAgain(dst, src []byte) {
	whole, extra, r, ok := inject.CopyPlan(uint64(len(dst)))
	if !ok {
		return
	}
	sp := trace.Begin("inject."+r.Kind, func() string { return fmt.Sprintf("bytes=%d rule=%s", len(dst), r) })
	for i := 1; i < whole; i++ {
		copy(dst, src)
	}
	copy(dst[:extra], src[:extra])
	sp.End(0, "copied again", nil)
}

// stretchLaunch waits, after a launch of kernel that took el, until the
// launch's window is F times el (stretch:<kernel>=F), and returns the
// window. The wait spins on the clock (yielding), as a GPU's spin kernel
// does: time.Sleep overshoots a launch of some µs by tens of µs (a planted
// 2 read 3.5 on the host's spread atomics).
func stretchLaunch(kernel string, t0 time.Time, el time.Duration) time.Duration {
	f, r, ok := inject.StretchOf(kernel)
	if !ok {
		return el
	}
	sp := trace.Begin("inject."+r.Kind, func() string { return fmt.Sprintf("kernel=%s elapsed=%v rule=%s", kernel, el, r) })
	want := time.Duration(float64(el) * f)
	for time.Since(t0) < want {
		runtime.Gosched()
	}
	sp.End(0, "stretched", nil)
	return time.Since(t0)
}
