package specs

import (
	"errors"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 52: a copy case's buffers in different ranks are allocated at
// once (atOnce), not one after the other: on one H100 each rank's 256 MiB
// of pinned host memory took 55-60 ms. Each function here can finish only
// once the other has started, so run one after the other they never
// finish (the bound below turns that into a failure, not a timing).
// Planted: atOnce calling fs in turn fails it.
func TestAtOnceStartsEveryAllocation(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	boom := errors.New("second")
	done := make(chan error, 1)
	go func() {
		done <- atOnce(func() error { close(a); <-b; return nil }, func() error { close(b); <-a; return boom })
	}()
	select {
	case err := <-done:
		if err != boom {
			t.Errorf("atOnce returned %v, want the second function's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("atOnce ran its functions one after the other: neither could finish")
	}
}

// The copy cases whose buffers atOnce allocates still pass end to end on
// the host backend, both directions and both at once.
func TestCopyCasesWithBuffersAtOnce(t *testing.T) {
	notInOwnTests(t)
	for _, id := range []string{"host.memfd.perf.copy_kernel_read.r0r1", "host.memfd.perf.copy_ce_bidir.r0r1"} {
		c := hostCase(t, id)
		r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
		res := r.Run(c)
		r.Close()
		if res.Outcome != report.Pass {
			t.Errorf("%s: %s (%s), want pass", id, res.Outcome, res.Detail)
		}
	}
}
