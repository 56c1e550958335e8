package cuda

import (
	"strings"
	"testing"

	"p2patomics/internal/device"
)

// TestMPSCap: MPS_ENABLED 1 is a yes, 0 a no naming the attribute, and a
// failed query stays unknown (the parent never reads "error: ..." as off).
func TestMPSCap(t *testing.T) {
	on := capsFrom(0, 1, map[string]string{"mps_enabled": "1"}).MPS
	off := capsFrom(0, 1, map[string]string{"mps_enabled": "0"}).MPS
	failed := capsFrom(0, 1, map[string]string{"mps_enabled": "error: CUDA_ERROR_INVALID_VALUE"}).MPS
	if !on.OK || !strings.Contains(on.Reason, "CU_DEVICE_ATTRIBUTE_MPS_ENABLED is 1") {
		t.Errorf("mps 1: %+v", on)
	}
	if off.OK || !off.Known() || !strings.Contains(off.Reason, "CU_DEVICE_ATTRIBUTE_MPS_ENABLED is 0") {
		t.Errorf("mps 0: %+v", off)
	}
	if failed.Known() {
		t.Errorf("a failed query is an answer: %+v", failed)
	}
}

// TestCeilingsTyped: what ceilings records for the lent H200 reaches the
// parent as numbers with their basis; what it could not read is zero.
func TestCeilingsTyped(t *testing.T) {
	h200 := ceilingsFrom(ceilings(fakeCeil{clk: 3201, bits: 6144, links: 18, mbps: 26562, gen: 5, width: 16}))
	if h200.HBM.GBps != 4916.7 || h200.NVLink.GBps != 478.1 || h200.PCIe.GBps != 63 {
		t.Errorf("H200 ceilings %+v", h200)
	}
	if !strings.Contains(h200.NVLink.Basis, "18 active NVLinks") || !strings.Contains(h200.PCIe.Basis, "PCIe gen 5 x16") {
		t.Errorf("a ceiling lost its basis: %+v", h200)
	}
	partial := ceilingsFrom(ceilings(fakeCeil{clk: 0, bits: 0, gen: 4, width: 8}))
	if partial.HBM != (device.Bandwidth{}) || partial.NVLink != (device.Bandwidth{}) || partial.PCIe.GBps != 15.8 {
		t.Errorf("no HBM reading and no NVLink must be zero: %+v", partial)
	}
	if got := ceilingsFrom(map[string]string{"hbm_gbps": "-1", "pcie_gbps": "x"}); got != (device.Ceilings{}) {
		t.Errorf("nonsense is not a ceiling: %+v", got)
	}
}
