package harness_test

import (
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/report"
)

// TestParseROCrFaultForms (issue 17, defect 8): the forms ROCr's default
// VM-fault handler prints besides the precise one: an imprecise fault
// ("%p%s" with "(may not be exact address)"), a NULL address or agent
// handle as glibc prints it ("(nil)"), and older ROCr without the handle.
func TestParseROCrFaultForms(t *testing.T) {
	// The hsa backend's own line for a HW exception, as its formatter writes it.
	hw := report.Fault{Vendor: "amd", Kind: "gpu", Code: 1, Name: "HSA_AMD_GPU_HW_EXCEPTION_EVENT", Node: "3", Reason: "HW exception, reset type 0x1: GPU Hang"}
	for _, c := range []struct {
		line string
		want report.Fault
	}{
		{"Memory access fault by GPU node-2 (Agent handle: 0x5581a0f0e2c0) on address 0x7f3a00001000(may not be exact address). Reason: Page not present or supervisor privilege.",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: "2", Address: "0x7f3a00001000",
				Reason: "Page not present or supervisor privilege (may not be exact address)"}},
		{"Memory access fault by GPU node-4 (Agent handle: 0x5581a0f0e2c0) on address (nil). Reason: Unknown.",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: "4", Address: "(nil)", Reason: "Unknown"}},
		{"Memory access fault by GPU node-1 on address (nil)(may not be exact address). Reason: Unknown.",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: "1", Address: "(nil)", Reason: "Unknown (may not be exact address)"}},
		{hw.Line(), hw},
		// Issue 30, N8: ROCr's and CLR's other abort lines (a44624c: nil).
		{"HW Exception by GPU node-3 (Agent handle: 0x55d1c0a3b2f0) reason :GPU Hang",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "hw-exception", Node: "3", Reason: "GPU Hang"}},
		{"Memory critical error by agent node-0 (Agent handle: 0x7fc7f1d9a5e0) on address 0x7fc846a02000. Reason: Memory in use.",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-critical-error", Node: "0", Address: "0x7fc846a02000", Reason: "Memory in use"}},
		{":0:rocdevice.cpp            :2984: 6545699276902 us: [pid:196431 tid:0x7f2301dff640] Callback: Queue 0x7f2301400000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. code: 0x29",
			report.Fault{Vendor: "amd", Kind: "gpu", Code: 0x29, Name: "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
				Reason: "The agent attempted to access memory beyond the largest legal address (queue 0x7f2301400000)"}},
		// Issue 40, P8: CLR's out-of-resources variant (clr rocvirtual.cpp:2889),
		// capitalised and with the free memory after the code (ce5f99b: nil).
		{":1:rocvirtual.cpp           :2889: 991 us: [pid:7 tid:0x7f] Callback: Queue 0x7f5e2c000000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events. Code: 0x1008 Available Free mem : 12 MB",
			report.Fault{Vendor: "amd", Kind: "gpu", Code: 0x1008, Name: "HSA_STATUS_ERROR_OUT_OF_RESOURCES",
				Reason: "The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events (queue 0x7f5e2c000000; available free mem: 12 MB)"}},
	} {
		got := harness.ParseFault("junk\n" + c.line + "\nAborted (core dumped)\n")
		if got == nil || *got != c.want {
			t.Errorf("ParseFault(%q)\n got %+v\nwant %+v", c.line, got, c.want)
		}
	}
}
