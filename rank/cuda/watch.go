package cuda

import (
	"fmt"

	"p2patomics/internal/watchdog"
)

// The rank's waits on the device run under the watchdog (internal/watchdog):
// a cuStreamSynchronize or cuCtxSynchronize still in flight when
// cuStreamQuery says the streams it waits for are idle is a wedged driver
// call, reported in the trace ring within a third of a second instead of
// at the case's deadline.

// syncStream is cuStreamSynchronize(s) under the watchdog.
func (b *Backend) syncStream(s uintptr) status {
	return watchdog.Wait("cuStreamSynchronize", b.idle(s), func() status { return b.d.cuStreamSynchronize(s) })
}

// syncCtx is cuCtxSynchronize under the watchdog: its work is what the
// rank issued, on its own stream and on the legacy stream (handle 0, where
// cuMemcpyHtoD's copy runs).
func (b *Backend) syncCtx() status {
	return watchdog.Wait("cuCtxSynchronize", b.idle(0, b.stream), func() status { return b.d.cuCtxSynchronize() })
}

// idle is the watchdog's query of streams, run on the watchdog's own
// thread: the rank's context is made current there once (contexts are per
// thread), then each stream is asked without waiting.
func (b *Backend) idle(streams ...uintptr) watchdog.Done {
	return func() (bool, string) {
		if !b.watchCtx {
			if r := b.d.cuCtxSetCurrent(b.ctx); r.Code != cudaSuccess {
				return false, fmt.Sprintf("cuCtxSetCurrent on the watchdog's thread: %s", b.d.errorName(int(r.Code)))
			}
			b.watchCtx = true
		}
		how := ""
		for _, s := range streams {
			r := b.d.cuStreamQuery(s)
			if how != "" {
				how += ", "
			}
			how += fmt.Sprintf("cuStreamQuery(%#x): %s", s, b.d.errorName(int(r)))
			if r != cudaSuccess {
				return false, how
			}
		}
		return true, how
	}
}
