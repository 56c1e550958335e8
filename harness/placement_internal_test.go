package harness

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"p2patomics/internal/device"
	"p2patomics/wire"
)

// A Ryzen host with the iGPU enabled: HIP and HSA list the gfx1036 first,
// then the two R9700 dGPUs.
var ryzenR9700 = []device.Visible{
	{Ordinal: 0, Arch: "gfx1036", Name: "AMD Radeon Graphics"},
	{Ordinal: 1, Arch: "gfx1201", Name: "AMD Radeon AI PRO R9700"},
	{Ordinal: 2, Arch: "gfx1201", Name: "AMD Radeon AI PRO R9700"},
}

// Issue 40, review 3 P10: ranks go only on devices whose architecture has
// a code object, in order, and the devices left out are named with why;
// the host (no device list) and an all-sm_90 CUDA host place as before
// (rank r on device r mod count). Planted: the old placement (r mod
// count, whatever the architecture) puts rank 0 on the iGPU (red).
func TestPlacementSkipsDevicesWithoutCode(t *testing.T) {
	devs, left, err := placement(3, device.Info{Ordinal: 1, Count: 3, Devices: ryzenR9700})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 1}; !slices.Equal(devs, want) {
		t.Errorf("iGPU first: ranks on %v, want %v", devs, want)
	}
	if len(left) != 1 || !strings.HasPrefix(left[0], "device 0 (gfx1036, AMD Radeon Graphics): ") || !strings.Contains(left[0], "gfx1201") {
		t.Errorf("left out: %q, want the iGPU named with the targets shipped", left)
	}

	var h200 []device.Visible
	for i := range 8 {
		h200 = append(h200, device.Visible{Ordinal: i, Arch: "sm_90", Name: "NVIDIA H200"})
	}
	devs, left, err = placement(2, device.Info{Ordinal: 0, Count: 8, Devices: h200})
	if err != nil || !slices.Equal(devs, []int{0, 1}) || len(left) != 0 {
		t.Errorf("8x H200: ranks on %v, left %q, err %v; want [0 1], none left, nil", devs, left, err)
	}
	devs, left, err = placement(3, device.Info{Ordinal: 0, Count: 1})
	if err != nil || !slices.Equal(devs, []int{0, 0, 0}) || len(left) != 0 {
		t.Errorf("host: ranks on %v, left %q, err %v; want [0 0 0], none left, nil", devs, left, err)
	}

	_, _, err = placement(2, device.Info{Ordinal: 0, Count: 1, Devices: ryzenR9700[:1]})
	var se *SkipError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "found device 0 (gfx1036, AMD Radeon Graphics)") || !strings.Contains(se.Reason, "gfx942") {
		t.Errorf("iGPU alone: want a skip naming gfx1036 and the targets shipped, got %v", err)
	}
	_, _, err = placement(2, device.Info{Ordinal: 0, Count: 3, Devices: ryzenR9700})
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Rank != 0 {
		t.Errorf("rank 0 on the iGPU: want rank 0's protocol error, got %v", err)
	}
}

// The handshake asks rank 0 of a GPU backend for the first usable device
// (device.AnyDevice), places the others from its list and records the
// devices left out in every rank's Info. Three fake hsa ranks answer as
// the backend would on the Ryzen host. Red on the old NewWorld, which
// asked for devices 0, 1 and 2.
func TestHandshakePlacesByCodeObject(t *testing.T) {
	var mu sync.Mutex
	asked := make([]int, 3)
	w := &World{Backend: "hsa", N: 3}
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
				info.Ordinal = 1 // the backend's choice: the first with a code object
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
	if want := []int{device.AnyDevice, 2, 1}; !slices.Equal(asked, want) {
		t.Errorf("hellos asked for devices %v, want %v", asked, want)
	}
	for r, want := range []int{1, 2, 1} {
		if w.Procs[r].Device != want || w.Infos[r].Ordinal != want {
			t.Errorf("rank %d on device %d (info %d), want %d", r, w.Procs[r].Device, w.Infos[r].Ordinal, want)
		}
		if l := w.Infos[r].LeftOut; len(l) != 1 || !strings.Contains(l[0], "gfx1036") {
			t.Errorf("rank %d's info: left out %q, want the gfx1036 named", r, l)
		}
	}
}
