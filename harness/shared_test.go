package harness

import (
	"testing"

	"p2patomics/internal/device"
)

// TestMPSReadsTheCap: MPS is the rank's typed answer; a rank that answered
// nothing (AMD, the host, a failed query) is not an MPS client, and the
// raw attribute alone decides nothing.
func TestMPSReadsTheCap(t *testing.T) {
	on := device.Info{Vendor: "nvidia", Caps: device.Caps{MPS: device.Yes("MPS_ENABLED 1")}}
	rawOnly := device.Info{Vendor: "nvidia", Attrs: map[string]string{"mps_enabled": "1"}}
	off := device.Info{Vendor: "nvidia", Caps: device.Caps{MPS: device.No("MPS_ENABLED 0")}}
	c := world("vmm", on, rawOnly, off, device.Info{Vendor: "amd"})
	for r, want := range []bool{true, false, false, false} {
		if got := c.W.MPS(r); got != want {
			t.Errorf("rank %d (%+v): MPS %v, want %v", r, c.W.Infos[r].Caps.MPS, got, want)
		}
	}
}
