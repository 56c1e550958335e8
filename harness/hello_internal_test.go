package harness

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// Issue 52: a world start after the pool's first sends every rank its
// hello before it waits for any reply, so the ranks open their devices
// side by side (a CUDA rank's open is most of a 0.4-0.6 s start on one
// H100); the first world, with nothing known, greets rank 0 first. Counts,
// on the host backend: the hellos out when the start first waited.
// Planted: the pool starting worlds without what it knows (NewWorld), and
// a handshake that ignores it, each fail the second world's count.
// A world of a process that started one before (the suite's probe) knows
// the placement from that one: TestTheProbesWorldPlacesTheFirst.
func TestLaterWorldsGreetEveryRankAtOnce(t *testing.T) {
	firstHellos.Delete(helloKey(backends.HostName, wire.DefaultSettings)) // as in a fresh process
	p := &pool{backend: backends.HostName, settings: &wire.DefaultSettings, log: &eventLog{}, book: &faultBook{}, worlds: map[int]*World{}, startFloor: 30 * time.Second}
	defer p.close()
	w1, err := p.world(3, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w1.helloSent != 1 {
		t.Errorf("first world: %d hellos out at the first wait, want 1 (rank 0 first)", w1.helloSent)
	}
	w1.Kill(200*time.Millisecond, errors.New("test: respawn"))
	w2, err := p.world(3, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w2 == w1 || w2.helloSent != 3 {
		t.Errorf("second world: %d hellos out at the first wait, want 3 (every rank's)", w2.helloSent)
	}
	for r, pr := range w2.Procs {
		if pr.Device != w1.Procs[r].Device || w2.Infos[r].Ordinal != w1.Infos[r].Ordinal {
			t.Errorf("rank %d: device %d (%d), the first world's %d (%d)", r, pr.Device, w2.Infos[r].Ordinal, w1.Procs[r].Device, w1.Infos[r].Ordinal)
		}
	}
}

// A known rank 0 whose devices would place the ranks otherwise than this
// world's rank 0 does is the start's protocol error, not a world on the
// wrong devices. Planted: dropping the comparison starts the world.
func TestAKnownPlacementMustHold(t *testing.T) {
	known := &device.Info{Count: 2} // host ranks see one device: ranks on 0, 0
	w, err := newWorld(backends.HostName, 2, wire.DefaultSettings, time.Now().Add(30*time.Second), known)
	if err == nil {
		w.Close()
		t.Fatal("a world started on a placement its rank 0 does not give")
	}
	CloseStart(err)
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Rank != 0 {
		t.Errorf("got %v, want rank 0's protocol error", err)
	}
}

// The suite's backend probe starts a world (harness.NewWorld, one rank)
// before any runner: the runner's first world then greets every rank at
// once too; a world loading another vendor library (an A/B run's stack B)
// does not take it. Planted: no process-wide record (firstHello nil), and
// a record keyed by the backend alone, each fail it.
func TestTheProbesWorldPlacesTheFirst(t *testing.T) {
	firstHellos.Delete(helloKey(backends.HostName, wire.DefaultSettings))
	probe, err := NewWorld(backends.HostName, 1, wire.DefaultSettings, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	probe.Kill(200*time.Millisecond, errors.New("test: probe done"))
	probe.Close()
	p := &pool{backend: backends.HostName, settings: &wire.DefaultSettings, log: &eventLog{}, book: &faultBook{}, worlds: map[int]*World{}, startFloor: 30 * time.Second}
	defer p.close()
	w, err := p.world(2, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w.helloSent != 2 {
		t.Errorf("the runner's first world: %d hellos out at the first wait, want 2", w.helloSent)
	}
	// An A/B run's stack B loads another vendor library: the probe's
	// record is not its.
	b := wire.DefaultSettings
	b.Library = "/opt/stack-b/libcuda.so.1"
	if firstHello(backends.HostName, b) != nil {
		t.Error("a world loading another library takes the default stack's record")
	}
}

// With a known rank 0 (the Ryzen host's first world), three fake hsa
// ranks are greeted at once on the devices placement gives (rank 0 still
// asked for any device and resolving its own), and the devices left out
// are recorded as in the first world. Planted: placing every rank on
// devs[r] including rank 0 (its own resolution skipped) fails the asked
// devices.
func TestKnownPlacementGreetsTheRyzenRanksAtOnce(t *testing.T) {
	var mu sync.Mutex
	asked := make([]int, 3)
	w := &World{Backend: "hsa", N: 3, known: &device.Info{Vendor: "amd", Ordinal: 1, Count: 3, Devices: ryzenR9700}}
	for r := range 3 {
		p := fakeRank(t, func(m wire.Msg) (any, []int) {
			var h wire.Hello
			if err := m.Decode(&h); err != nil {
				t.Error(err)
			}
			mu.Lock()
			asked[r] = h.Device
			mu.Unlock()
			info := device.Info{Vendor: "amd", Ordinal: h.Device, Count: 3, Devices: ryzenR9700}
			if h.Device == device.AnyDevice {
				info.Ordinal = 1
			}
			info.Arch = ryzenR9700[info.Ordinal].Arch
			b, _ := json.Marshal(wire.HelloReply{Version: wire.Version, Kinds: Matrix["hsa"], Info: info})
			return wire.Reply{OK: true, Result: b}, nil
		})
		p.Rank = r
		w.Procs = append(w.Procs, p)
		w.Infos = append(w.Infos, device.Info{})
	}
	if err := w.handshake(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if w.helloSent != 3 {
		t.Errorf("%d hellos out at the first wait, want 3", w.helloSent)
	}
	if want := []int{device.AnyDevice, 2, 1}; !slices.Equal(asked, want) {
		t.Errorf("hellos asked for devices %v, want %v", asked, want)
	}
	for r, want := range []int{1, 2, 1} {
		if w.Procs[r].Device != want || len(w.Infos[r].LeftOut) != 1 {
			t.Errorf("rank %d on device %d, left out %q; want %d and the iGPU", r, w.Procs[r].Device, w.Infos[r].LeftOut, want)
		}
	}
}
