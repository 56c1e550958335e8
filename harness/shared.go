package harness

import (
	"fmt"
	"time"

	"p2patomics/harness/backends"
)

// Window is the interval a rank's launch or copy ran inside, in
// nanoseconds of CLOCK_MONOTONIC: read by the rank just before it issued
// the work and just after its synchronise returned. Every rank of a
// machine reads the same clock, so windows of different ranks compare.
type Window struct{ Start, End int64 }

// Span is the time work that ran "at once" on several ranks took: the
// last end minus the first start. Summing each rank's own rate instead
// credits two copies that ran one after the other (kernels of processes
// sharing a GPU are time-sliced) as if they overlapped. ok is false when
// some window is missing (a rank that reports none).
func Span(ws ...Window) (d time.Duration, ok bool) {
	if len(ws) == 0 {
		return 0, false
	}
	first, last := ws[0].Start, ws[0].End
	for _, w := range ws {
		if w.Start <= 0 || w.End < w.Start {
			return 0, false
		}
		first, last = min(first, w.Start), max(last, w.End)
	}
	return time.Duration(last - first), true
}

// DeviceKey names rank r's device: its UUID, else its ordinal (backends
// that report no UUID, such as host, have one device per ordinal).
func (w *World) DeviceKey(r int) string {
	if id := w.Infos[r].UUID; id != "" {
		return id
	}
	return fmt.Sprintf("ordinal %d", w.Procs[r].Device)
}

// SharedGPU reports whether ranks a and b (a != b) run on one GPU, so
// their kernels are time-sliced rather than resident together unless MPS
// runs (see MPS). The host backend's "device" is the CPU, where ranks are
// ordinary processes scheduled on many cores: never shared in this sense.
func (w *World) SharedGPU(a, b int) bool {
	if a == b {
		return false
	}
	if v := w.Infos[a].Vendor; v == "" || backends.Driverless(v) {
		return false
	}
	return w.DeviceKey(a) == w.DeviceKey(b)
}

// AnySharedGPU reports whether some two ranks of the world share a GPU.
func (w *World) AnySharedGPU() bool {
	for a := 0; a < w.N; a++ {
		for b := a + 1; b < w.N; b++ {
			if w.SharedGPU(a, b) {
				return true
			}
		}
	}
	return false
}

// MPS reports whether rank r's context is a client of a running CUDA MPS
// server (device.Caps.MPS, answered by the rank; the suite never starts or
// stops MPS). Only then can kernels of ranks sharing a GPU be resident
// together; not known is not a client.
func (w *World) MPS(r int) bool { return w.Infos[r].Caps.MPS.OK }

// Units returns the rank's parallel units (SMs, CUs, CPUs).
func (w *World) Units(r int) int { return max(w.Infos[r].Units, 1) }

// SharedGPUNote is the one-line reason a spec gives when two ranks on one
// GPU cannot do what it needs; it names the missing capability so the
// skip counts as not-supported.
func (w *World) SharedGPUNote(a, b int) string {
	return fmt.Sprintf("ranks %d and %d share GPU %s without MPS: concurrent residency of their kernels is not supported (kernels of two processes on one GPU are time-sliced)", a, b, w.DeviceKey(a))
}
