package harness

import (
	"p2patomics/harness/backends"
	"p2patomics/internal/device"
	"strings"
	"testing"
)

// h200 is what a lent H200's rank reports (rank/cuda ceilings: NVML max
// memory clock 3201 MHz, 6144-bit bus, NV18, PCIe 5 x16).
func h200(uuid string, nvlink bool) device.Info {
	cs := device.Ceilings{HBM: device.Bandwidth{GBps: 4916.7, Basis: "hbm"}, PCIe: device.Bandwidth{GBps: 63, Basis: "pcie"}}
	if nvlink {
		cs.NVLink = device.Bandwidth{GBps: 478.1, Basis: "nv18"}
	}
	return device.Info{Vendor: "nvidia", UUID: uuid, Ceilings: cs, Caps: device.Caps{HostAtomics: device.No("PCIe H200")}}
}

func world(kind string, infos ...device.Info) *Ctx {
	w := &World{Infos: infos, N: len(infos)}
	for r := range infos {
		w.Procs = append(w.Procs, &Proc{Device: r})
	}
	return &Ctx{W: w, Kind: kind}
}

func TestCopyCeiling(t *testing.T) {
	two := world("vmm", h200("GPU-a", true), h200("GPU-b", true))
	one := world("vmm", h200("GPU-a", false), h200("GPU-a", false))
	pcie := world("vmm", h200("GPU-a", false), h200("GPU-b", false))
	host := world("vmm-host", h200("GPU-a", true), h200("GPU-b", true))
	oneWay := func(c *Ctx) Flow { return Flow{Exec: 0, Src: c.MemLoc(0), Dst: c.MemLoc(1)} }
	back := func(c *Ctx) Flow { return Flow{Exec: 1, Src: c.MemLoc(1), Dst: c.MemLoc(0)} }
	for _, tc := range []struct {
		name  string
		c     *Ctx
		flows []Flow
		want  float64
		basis string
	}{
		// One way over NV18: the link per direction binds.
		{"nvlink one way", two, []Flow{oneWay(two)}, 478.1, "nvlink"},
		// Both ways: each direction has its own 478 GB/s.
		{"nvlink bidir", two, []Flow{oneWay(two), back(two)}, 956.2, "nvlink"},
		// One GPU: every byte is read and written in its HBM.
		{"shared one way", one, []Flow{oneWay(one)}, 2458.4, "hbm of GPU-a"},
		// Both copies on one GPU: still half its HBM in total (the 4.26
		// TB/s the old per-side sum read is far above it).
		{"shared bidir", one, []Flow{oneWay(one), back(one)}, 2458.4, "hbm of GPU-a"},
		{"pcie peers", pcie, []Flow{oneWay(pcie)}, 63, "pcie"},
		// Host memory on both ends: in and out over the GPU's PCIe.
		{"vmm-host", host, []Flow{oneWay(host)}, 63, "pcie"},
	} {
		got := tc.c.CopyCeiling(tc.flows...)
		if got == nil || got.Value != tc.want || !strings.HasPrefix(got.Basis, tc.basis) {
			t.Errorf("%s: ceiling %+v, want %.1f GB/s from %s", tc.name, got, tc.want, tc.basis)
		}
	}
	hostBackend := world("memfd", device.Info{Vendor: backends.HostName}, device.Info{Vendor: backends.HostName})
	if got := hostBackend.CopyCeiling(oneWay(hostBackend)); got != nil {
		t.Errorf("host backend: no capacity is known, got ceiling %+v", got)
	}
}

// A sample above the ceiling is a measurement error: the case errs and
// the metric is not kept; below it, the metric carries the ceiling.
func TestBandwidthAboveCeiling(t *testing.T) {
	c := world("vmm", h200("GPU-a", false), h200("GPU-a", false))
	ceil := c.CopyCeiling(Flow{Exec: 0, Src: c.MemLoc(0), Dst: c.MemLoc(1)}, Flow{Exec: 1, Src: c.MemLoc(1), Dst: c.MemLoc(0)})
	if err := c.Bandwidth("bw_ce_bidir_gbps", "m", ceil, 2000); err != nil {
		t.Fatalf("2000 GB/s under a %v ceiling: %v", ceil.Value, err)
	}
	if m := c.Metrics["bw_ce_bidir_gbps"]; m.Ceiling == nil || m.Ceiling.Value != ceil.Value {
		t.Fatalf("metric lacks its ceiling: %+v", m)
	}
	err := c.Bandwidth("bw_ce_bidir_gbps", "m", ceil, 4260)
	if err == nil || !strings.Contains(err.Error(), "measurement error") || !strings.Contains(err.Error(), "4260.0 GB/s") {
		t.Fatalf("4260 GB/s on one H200 must be a measurement error, got %v", err)
	}
	if _, ok := c.Metrics["bw_ce_bidir_gbps"]; ok {
		t.Fatal("a metric above its ceiling stays in the case's metrics")
	}
	if err := c.Bandwidth("x", "m", nil, 1e9); err != nil {
		t.Fatalf("no ceiling, no check: %v", err)
	}
}

// Span is the last end minus the first start: two copies that ran one
// after the other take the sum of their times, not the longer one.
func TestSpan(t *testing.T) {
	if d, ok := Span(Window{100, 200}, Window{200, 300}); !ok || d != 200 {
		t.Errorf("back to back: %v %v, want 200ns", d, ok)
	}
	if d, ok := Span(Window{100, 300}, Window{150, 250}); !ok || d != 200 {
		t.Errorf("overlapping: %v %v, want 200ns", d, ok)
	}
	if _, ok := Span(Window{100, 300}, Window{}); ok {
		t.Error("a missing window must not give a span")
	}
	if _, ok := Span(); ok {
		t.Error("no windows, no span")
	}
}

func TestSharedGPU(t *testing.T) {
	c := world("vmm", h200("GPU-a", false), h200("GPU-b", false), h200("GPU-a", false))
	if !c.W.SharedGPU(0, 2) || c.W.SharedGPU(0, 1) || c.W.SharedGPU(1, 2) || c.W.SharedGPU(0, 0) {
		t.Errorf("by UUID: 0,2 share; 0,1 and 1,2 do not; a rank with itself is not a pair")
	}
	if !c.W.AnySharedGPU() {
		t.Error("AnySharedGPU missed ranks 0 and 2")
	}
	noUUID := world("vmm", device.Info{Vendor: "amd"}, device.Info{Vendor: "amd"})
	noUUID.W.Procs[1].Device = 0
	if !noUUID.W.SharedGPU(0, 1) {
		t.Error("without UUIDs the ordinal decides: both on device 0 share")
	}
	host := world("memfd", device.Info{Vendor: backends.HostName}, device.Info{Vendor: backends.HostName})
	host.W.Procs[1].Device = 0
	if host.W.SharedGPU(0, 1) || host.W.AnySharedGPU() {
		t.Error("host ranks are processes on a CPU, never a shared GPU")
	}
	if !strings.Contains(c.W.SharedGPUNote(0, 2), "not supported") {
		t.Error("the shared-GPU skip reason must say not supported")
	}
}
