package e2e

import (
	"errors"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// Issue 40, review 3 P9: the local atomic perf cases (rank 0 on its own
// memory) need nothing of a link; the peer and all cases need P2P atomics.
// A real 2-rank host world is told, as a PCIe pair without P2P would say,
// that its ranks sit on two devices that reach each other with neither
// access nor atomics; the cases then run as the suite runs them. Planted:
// with runAtomicRate's NeedPeer(true) before the local branch (the code
// before the fix) the local cases skip with the peer's reason (red).
func TestLocalAtomicRateNeedsNoPeer(t *testing.T) {
	const why = "device 0 cannot reach device 1 (no P2P here)"
	w, err := harness.NewWorld(backends.HostName, 2, wire.DefaultSettings, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Procs[1].Device = 1
	for r := range w.Infos {
		no := device.No("%s", why)
		w.Infos[r].Caps.Peers = device.AllPeers(r, 2, no, no)
	}
	for _, tc := range []struct {
		id   string
		skip bool
	}{
		{"host.memfd.perf.atomic_contended_local_sys", false},
		{"host.memfd.perf.atomic_spread_local_dev", false},
		{"host.memfd.perf.atomic_contended_peer_sys", true},
		{"host.memfd.perf.atomic_contended_all_sys", true},
		{"host.memfd.perf.atomic_contended_all_dev", true},
	} {
		c := hostCase(t, tc.id)
		ctx := &harness.Ctx{W: w, Kind: c.Kind, Deadline: time.Now().Add(60 * time.Second)}
		err := c.Run(ctx)
		var se *harness.SkipError
		switch {
		case tc.skip && (!errors.As(err, &se) || se.Reason != why):
			t.Errorf("%s without P2P: want a skip naming %q, got %v", tc.id, why, err)
		case !tc.skip && err != nil:
			t.Errorf("%s without P2P: rank 0 on its own memory must run, got %v", tc.id, err)
		case !tc.skip && len(ctx.Metrics["atomic_rate"].Samples) == 0:
			t.Errorf("%s without P2P: no atomic_rate samples recorded", tc.id)
		}
	}
}
