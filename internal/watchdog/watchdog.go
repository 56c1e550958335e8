// Package watchdog is a rank's watchdog on the vendor calls that wait for
// the device: cuStreamSynchronize, cuCtxSynchronize, the host backend's
// synchronize. A waiting call that has not returned although the work it
// waits for is done (a non-blocking query of the same stream says so) is
// wedged: the driver, not the device, is stuck. The watchdog says so in the
// rank's trace ring (trace.Wedge) within about Settle, and the parent,
// which polls the ring's header while it waits for a reply, ends the case
// as a timeout then, rather than when the case's deadline passes
// (issue 37 item 4: a hang gets its verdict fast).
//
// A device that is itself busy (a kernel spinning on a flag that never
// comes) is not a wedged call: its query says not done, and the case's
// deadline (harness: a multiple of the baseline's duration) judges it.
// A query that wedges too (a driver lock held by the stuck call) leaves
// the watchdog stuck in it; the deadline judges that as well.
package watchdog

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"p2patomics/trace"
)

// The timing. A wait is probed only once it has lasted Grace, so the
// thousands of short waits of a healthy run are never queried. It is
// wedged once its work has been seen done for Settle, by at least
// minProbes queries in a row: a healthy wait returns within microseconds
// of its work finishing, and the count keeps a watchdog thread that was
// itself starved (a loaded host) from taking one late look for Settle.
const (
	Tick      = 20 * time.Millisecond
	Grace     = 50 * time.Millisecond
	Settle    = 300 * time.Millisecond
	minProbes = 5
)

// Done reports, without waiting, whether the work a waiting call waits for
// has finished (cuStreamQuery == CUDA_SUCCESS), and what it asked
// ("cuStreamQuery(0x5): CUDA_SUCCESS") for the report.
type Done func() (done bool, how string)

type watch struct {
	name  string
	start time.Time
	done  Done
}

var (
	cur     atomic.Pointer[watch]
	running atomic.Bool
	once    sync.Once
)

// Start runs the process's watchdog; a rank calls it once its trace ring
// is shared with the parent (before that nobody could read the report).
// Until Start, Wait only calls.
func Start() {
	once.Do(func() {
		running.Store(true)
		go loop(Tick)
	})
}

// Wait makes call, a vendor call under name that waits for device work,
// under the watchdog; done queries that work.
func Wait[T any](name string, done Done, call func() T) T {
	if !running.Load() {
		return call()
	}
	w := &watch{name: name, start: time.Now(), done: done}
	cur.Store(w)
	r := call()
	cur.CompareAndSwap(w, nil)
	return r
}

// loop is the watchdog. Its goroutine keeps one OS thread, so a probe that
// needs a vendor context current (CUDA's is per thread) makes it current
// once and keeps it.
func loop(tick time.Duration) {
	runtime.LockOSThread()
	var (
		seen      *watch // the wait being probed
		doneSince time.Time
		probes    int
		reported  *watch
	)
	for {
		time.Sleep(tick)
		w := cur.Load()
		if w == nil || w == reported || time.Since(w.start) < Grace {
			continue
		}
		if w != seen {
			seen, doneSince, probes = w, time.Time{}, 0
		}
		done, how := w.done()
		if !done {
			doneSince, probes = time.Time{}, 0
			continue
		}
		now := time.Now()
		if doneSince.IsZero() {
			doneSince = now
		}
		probes++
		if probes < minProbes || now.Sub(doneSince) < Settle || cur.Load() != w {
			continue
		}
		trace.Wedge(fmt.Sprintf("%s wedged: in flight %.2f s, its work done for %.2f s (%s, %d queries)",
			w.name, now.Sub(w.start).Seconds(), now.Sub(doneSince).Seconds(), how, probes))
		reported = w
	}
}
