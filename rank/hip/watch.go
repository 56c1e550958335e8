package hip

import (
	"fmt"
	"unsafe"

	"p2patomics/internal/watchdog"
)

// The rank's waits on the device run under the watchdog (internal/watchdog),
// as CUDA's do (rank/cuda/watch.go): a hipEventSynchronize, hipMemcpyDtoH/
// HtoD or hipDeviceSynchronize still in flight when a non-blocking query
// says its work is done is a wedged runtime call (CLR's blocked waits sit
// on a ROCr interrupt signal whose interrupt can be lost), reported in the
// trace ring within a third of a second instead of at the case's deadline
// (issue 50, Q6). A query only runs once a wait has lasted
// watchdog.Grace, so the short waits of a healthy run never query.

// eventSync is hipEventSynchronize(e) under the watchdog; its look is
// hipEventQuery(e), which returns hipSuccess once the event's work is done.
func (b *Backend) eventSync(e uintptr) status {
	return watchdog.Wait("hipEventSynchronize", b.eventDone(e), func() status { return b.l.eventSynchronize(e) })
}

// deviceSync is hipDeviceSynchronize under the watchdog: all this rank's
// work is on the null stream (launches, copies and events all pass stream
// 0), so its look is hipStreamQuery(0).
func (b *Backend) deviceSync() status {
	return watchdog.Wait("hipDeviceSynchronize", b.nullIdle(), func() status { return b.l.deviceSync() })
}

// memcpyDtoH and memcpyHtoD are the blocking copies under the watchdog:
// CLR runs them on the null stream and waits for them there.
func (b *Backend) memcpyDtoH(dst unsafe.Pointer, src uintptr, n uint64) status {
	return watchdog.Wait("hipMemcpyDtoH", b.nullIdle(), func() status { return b.l.memcpyDtoH(dst, src, n) })
}

func (b *Backend) memcpyHtoD(dst uintptr, src unsafe.Pointer, n uint64) status {
	return watchdog.Wait("hipMemcpyHtoD", b.nullIdle(), func() status { return b.l.memcpyHtoD(dst, src, n) })
}

func (b *Backend) eventDone(e uintptr) watchdog.Done {
	return func() (bool, string) {
		c := b.l.eventQuery(e)
		return c == errSuccess, fmt.Sprintf("hipEventQuery(%#x): %s", e, b.codeName(c))
	}
}

// nullIdle is the watchdog's look at the null stream, from the watchdog's
// own thread: HIP's current device is per thread, so the rank's device is
// made current there once, then hipStreamQuery(0) asks without waiting.
// CLR's query (hip_stream.cpp hipStreamQuery_common) may enqueue a marker
// behind the stream's last command when its fence is dirty and then asks
// whether the last command completed: an observer that runs nothing on the
// device. Open's warm-up (warmNullStream) has created the stream before
// any wait is watched.
func (b *Backend) nullIdle() watchdog.Done {
	return func() (bool, string) {
		if !b.watchDev {
			if st := b.l.setDevice(int32(b.cfg.Device)); st.Code != errSuccess {
				return false, fmt.Sprintf("hipSetDevice(%d) on the watchdog's thread: %s", b.cfg.Device, b.codeName(st.Code))
			}
			b.watchDev = true
		}
		c := b.l.streamQuery(0)
		return c == errSuccess, fmt.Sprintf("hipStreamQuery(0): %s", b.codeName(c))
	}
}

// codeName is hipGetErrorName's text for a code (the number where the
// runtime has none).
func (b *Backend) codeName(c uint32) string {
	if n := cString(b.l.getErrorName(c)); n != "" {
		return n
	}
	return fmt.Sprint(c)
}
