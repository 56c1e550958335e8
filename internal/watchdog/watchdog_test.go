package watchdog

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"p2patomics/trace"
)

func wedgeRecords() []trace.Record {
	var out []trace.Record
	for _, r := range trace.Snapshot() {
		if r.Name == trace.WedgeName {
			out = append(out, r)
		}
	}
	return out
}

// One test, in order, because the watchdog is the process's: a wait whose
// work is still running is never reported however long it lasts; a wait
// whose work is done is, once, naming the call and the query; a wait that
// returns is forgotten.
func TestWatchdog(t *testing.T) {
	trace.Reset()
	Start()

	// Busy device: 20 looks at work that is not done, no report.
	var looks atomic.Int32
	Wait("busy_sync", func() (bool, string) { looks.Add(1); return false, "busy" }, func() int {
		for looks.Load() < 20 {
			time.Sleep(Tick)
		}
		return 0
	})
	if w := wedgeRecords(); len(w) != 0 {
		t.Fatalf("a wait on unfinished work was reported wedged: %v", w)
	}

	// Wedged: the work is done and the call does not return until the
	// report is in the ring (bounded by a count of looks, not a clock).
	release := make(chan struct{})
	looks.Store(0)
	go func() {
		for range 100000 {
			if len(wedgeRecords()) > 0 {
				break
			}
			time.Sleep(Tick)
		}
		close(release)
	}()
	Wait("stuck_sync", func() (bool, string) { looks.Add(1); return true, "query: idle" }, func() int { <-release; return 0 })
	w := wedgeRecords()
	if len(w) != 1 || !strings.Contains(w[0].Args, "stuck_sync wedged") || !strings.Contains(w[0].Args, "query: idle") {
		t.Fatalf("want one report naming stuck_sync and its query, got %v", w)
	}
	if n := looks.Load(); n < minProbes {
		t.Errorf("reported after %d looks, want at least %d", n, minProbes)
	}
	// A later short wait on done work is not reported (it returned before
	// the grace).
	Wait("quick_sync", func() (bool, string) { return true, "idle" }, func() int { return 0 })
	time.Sleep(Grace + 5*Tick)
	if w := wedgeRecords(); len(w) != 1 {
		t.Errorf("a returned wait was reported: %v", w)
	}
}
