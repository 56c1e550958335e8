package cuda

import (
	"fmt"
	"time"
	"unsafe"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// The injector's speed rules on the CUDA path (docs/FAULTS.md, "The
// driver-fault injector"): real driver work between the two events a
// metric is timed by, changing no byte a case checks.

// spinKernel is the manifest kernel a stretch runs: one thread polls a
// word for a value it never takes and gives up after timeout_ns, read
// from the GPU's global timer, so it spends a chosen time on the device
// and writes only its own out words.
const spinKernel = "wait_u32_acquire_sys"

// arenaZero is 16 bytes of the arena nothing writes (the anonymous
// mapping starts zeroed): the source that clears the spin's words.
const arenaZero = 60 << 10

// openSpin allocates and clears the spin's words (flag at +0, out at +8)
// when a stretch rule is installed (the rules are set before Open, so the
// allocation is in the rank's baseline and no case's leak).
func (b *Backend) openSpin() error {
	if !stretching() {
		return nil
	}
	d := b.d
	if err := d.check(d.cuMemAlloc(&b.spin, 16)); err != nil {
		return fmt.Errorf("cuda: stretch's spin words: %w", err)
	}
	return d.check(d.cuMemcpyHtoD(b.spin, unsafe.Pointer(&b.arena[arenaZero]), 16))
}

func stretching() bool {
	for _, r := range inject.Active() {
		if r.Kind == inject.Stretch {
			return true
		}
	}
	return false
}

// copyAgain issues the copy again on the stream as copy-times asks, after
// the first and before the stop event: whole-1 more copies of all n bytes
// and one of the first extra bytes, each writing what the first wrote.
func (b *Backend) copyAgain(dst, src, n uint64) error {
	whole, extra, r, ok := inject.CopyPlan(n)
	if !ok {
		return nil
	}
	sp := trace.Begin("inject."+r.Kind, func() string { return fmt.Sprintf("bytes=%d rule=%s", n, r) })
	d := b.d
	for i := 1; i < whole; i++ {
		if err := d.check(d.cuMemcpyDtoDAsync(dst, src, n, b.stream)); err != nil {
			return err
		}
	}
	if extra > 0 {
		if err := d.check(d.cuMemcpyDtoDAsync(dst, src, extra, b.stream)); err != nil {
			return err
		}
	}
	sp.End(0, "copied again", nil)
	return nil
}

// stretch runs, after a launch of kernel and before the stop event, the
// spin kernel for F-1 times the launch's own device time (stretch:
// <kernel>=F): the kernel is timed to a mid event first, so the window
// becomes F times the kernel plus the host's turn-around to the spin's
// launch (some µs; the perf kernels run for milliseconds).
func (b *Backend) stretch(kernel string) error {
	f, r, ok := inject.StretchOf(kernel)
	if !ok {
		return nil
	}
	d := b.d
	if err := d.check(d.cuEventRecord(b.evStop, b.stream)); err != nil {
		return err
	}
	if err := d.check(b.syncStream(b.stream)); err != nil {
		return annotate(err, "kernel "+kernel)
	}
	el, err := b.elapsed()
	if err != nil {
		return err
	}
	sp := trace.Begin("inject."+r.Kind, func() string { return fmt.Sprintf("kernel=%s elapsed=%v rule=%s", kernel, el.Elapsed, r) })
	// timeout_ns 0 would spin for ever: at least 1 ns.
	ns := max(uint64(float64(el.Elapsed)*(f-1)), 1)
	fn, err := b.function(spinKernel)
	if err != nil {
		return err
	}
	params := b.params([]uint64{b.spin, b.spin + 8, 1, ns})
	if err := d.check(d.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, b.stream, params, 0)); err != nil {
		return annotate(err, "kernel "+spinKernel+" (stretch)")
	}
	sp.End(0, "stretched", func() string { return "spin=" + time.Duration(ns).String() })
	return nil
}
