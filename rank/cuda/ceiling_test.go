package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

type fakeCeil struct {
	clk, bits   uint32
	links       int
	mbps        uint32
	gen, width  uint32
	memErr, lnk error
}

func (f fakeCeil) maxMemClockMHz() (uint32, error) { return f.clk, f.memErr }
func (f fakeCeil) busWidthBits() (uint32, error)   { return f.bits, nil }
func (f fakeCeil) activeNvlinks() (int, error)     { return f.links, f.lnk }
func (f fakeCeil) nvlinkMBps() (uint32, error)     { return f.mbps, nil }
func (f fakeCeil) pcie() (uint32, uint32, error)   { return f.gen, f.width, nil }

// The lent H200 (reference: nvidia-smi max memory clock 3201 MHz, 6144-bit
// bus, NV18 at 26.562 GB/s, PCIe 5 x16) gives 4.92 TB/s (4916.7 GB/s) of HBM traffic,
// 478 GB/s of NVLink and 63 GB/s of PCIe per direction.
func TestCeilingsH200(t *testing.T) {
	got := ceilings(fakeCeil{clk: 3201, bits: 6144, links: 18, mbps: 26562, gen: 5, width: 16})
	want := map[string]string{"hbm_gbps": "4916.7", "nvlink_gbps": "478.1", "nvlink_links": "18", "pcie_gbps": "63.0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if e, ok := got["ceiling_error"]; ok {
		t.Errorf("unexpected ceiling_error %q", e)
	}
}

// A GPU without NVLink says so (0 links) without an error; a failed query
// drops only its own ceiling and names why.
func TestCeilingsPartial(t *testing.T) {
	got := ceilings(fakeCeil{memErr: errors.New("boom"), gen: 4, width: 8})
	if _, ok := got["hbm_gbps"]; ok {
		t.Errorf("hbm ceiling despite a failed query: %v", got)
	}
	if !strings.Contains(got["ceiling_error"], "hbm: boom") {
		t.Errorf("ceiling_error %q does not name the hbm failure", got["ceiling_error"])
	}
	if got["nvlink_links"] != "0" || got["nvlink_gbps"] != "" {
		t.Errorf("no NVLink should read nvlink_links=0 and no nvlink_gbps: %v", got)
	}
	if got["pcie_gbps"] != "15.8" {
		t.Errorf("pcie gen 4 x8 = %q, want 15.8", got["pcie_gbps"])
	}
	if got := ceilings(fakeCeil{clk: 1, bits: 1, gen: 9, width: 16}); !strings.Contains(got["ceiling_error"], "generation 9") {
		t.Errorf("unknown PCIe generation not reported: %v", got)
	}
}

// nvmlFieldValue_t is 40 bytes with the value union at 32.
func TestFieldValueLayout(t *testing.T) {
	var fv nvmlFieldValue
	if s, o := unsafe.Sizeof(fv), unsafe.Offsetof(fv.Value); s != 40 || o != 32 {
		t.Fatalf("nvmlFieldValue: size %d, value at %d; want 40, 32", s, o)
	}
}
