package hsa

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/internal/watchdog"
	"p2patomics/trace"
)

// wedged is a waiting call that does not return although its work is done:
// it returns once the watchdog has reported it, or after a bounded count of
// watchdog ticks (then the test fails: nothing was reported).
func wedged() {
	for range 400 {
		if len(wedges()) > 0 {
			return
		}
		time.Sleep(watchdog.Tick)
	}
}

func wedges() []trace.Record {
	var out []trace.Record
	for _, r := range trace.Snapshot() {
		if r.Name == trace.WedgeName {
			out = append(out, r)
		}
	}
	return out
}

// TestWedgedSignalWaitIsReported (issue 50, Q6): an
// hsa_signal_wait_scacquire that stays in flight while
// hsa_signal_load_relaxed reads the copy's signal as done is reported by
// the rank's watchdog in the trace ring (the parent then ends the case as
// a timeout at once, not at its deadline), naming the call and the load.
// Planted: the wait called directly, outside watchdog.Wait (the code
// before the fix), is never reported (red).
func TestWedgedSignalWaitIsReported(t *testing.T) {
	trace.Reset()
	watchdog.Start()
	f := mi300(t)
	b, _ := openFake(t, f, 0)
	local, exp, err := b.Alloc(kindFine, 1<<21)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(exp.Fd)
	f.waitHook = wedged
	if _, err := b.Copy(local, 0, local, 1<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	f.waitHook = nil
	w := wedges()
	if len(w) != 1 || !strings.Contains(w[0].Args, "hsa_signal_wait_scacquire wedged") || !strings.Contains(w[0].Args, "hsa_signal_load_relaxed(0x5000): 0") {
		t.Fatalf("want one report naming the wait and its load, got %v", w)
	}
}
