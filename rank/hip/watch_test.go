package hip

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"p2patomics/internal/watchdog"
	"p2patomics/kernels"
	"p2patomics/trace"
)

// wedged is a waiting call that does not return although its work is done:
// it returns once the watchdog has reported a new wedge (more than had
// been reported before), or after a bounded count of watchdog ticks (then
// the test fails: nothing was reported).
func wedged(before int) {
	for range 400 {
		if len(wedges()) > before {
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

// TestWedgedWaitsAreReported (issue 50, Q6): a hipEventSynchronize (a
// launch's) still in flight while hipEventQuery says the event is done, and
// a hipDeviceSynchronize (a Write's) still in flight while
// hipStreamQuery(0) says the null stream is idle, are each reported by the
// rank's watchdog in the trace ring, naming the call and the query, as
// CUDA's waits are (rank/cuda/watch.go). Planted: either call made
// directly, outside watchdog.Wait (the code before the fix), is never
// reported (red).
func TestWedgedWaitsAreReported(t *testing.T) {
	trace.Reset()
	watchdog.Start()
	ok := uint32(errSuccess)
	var setDev []int32
	l := fakeLib(t, map[string]any{
		"hipModuleGetFunction":  func(f *uintptr, m uintptr, name *byte) uint32 { *f = 0x61; return ok },
		"hipModuleLaunchKernel": func(f uintptr, gx, gy, gz, bx, by, bz, sh uint32, s, p, x uintptr) uint32 { return ok },
		"hipEventCreate":        func(e *uintptr) uint32 { *e = 0x51; return ok },
		"hipEventDestroy":       func(e uintptr) uint32 { return ok },
		"hipEventRecord":        func(e, s uintptr) uint32 { return ok },
		"hipEventElapsedTime":   func(ms *float32, a, b uintptr) uint32 { *ms = 1; return ok },
		"hipEventSynchronize":   func(e uintptr) uint32 { wedged(0); return ok },
		"hipEventQuery":         func(e uintptr) uint32 { return ok },
		"hipMemcpyHtoD":         func(dst uintptr, src unsafe.Pointer, n uint64) uint32 { return ok },
		"hipDeviceSynchronize":  func() uint32 { wedged(1); return ok },
		"hipStreamQuery":        func(s uintptr) uint32 { return ok },
		"hipSetDevice":          func(d int32) uint32 { setDev = append(setDev, d); return ok },
	})
	params, err := newCmem(maxParams * 16)
	if err != nil {
		t.Fatal(err)
	}
	defer params.free()
	b := &Backend{l: l, funcs: map[string]uintptr{}, params: params}
	b.cfg.Device = 3
	k := kernels.MustLookup("fill_u64_plain_dev")
	if _, err := b.Launch(k, 1, 1, make([]uint64, len(k.Args))); err != nil {
		t.Fatal(err)
	}
	w := wedges()
	if len(w) != 1 || !strings.Contains(w[0].Args, "hipEventSynchronize wedged") || !strings.Contains(w[0].Args, "hipEventQuery(0x51): ") {
		t.Fatalf("launch: want one report naming hipEventSynchronize and its query, got %v", w)
	}
	if err := b.Write(&buffer{va: 0x1000, size: 64}, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	w = wedges()
	if len(w) != 2 || !strings.Contains(w[1].Args, "hipDeviceSynchronize wedged") || !strings.Contains(w[1].Args, "hipStreamQuery(0): ") {
		t.Fatalf("write: want a second report naming hipDeviceSynchronize and its query, got %v", w)
	}
	if len(setDev) != 1 || setDev[0] != 3 {
		t.Errorf("the watchdog's thread made devices %v current, want [3] once", setDev)
	}
}
