package backends

import (
	"regexp"

	"p2patomics/internal/device"
)

// HSAName is the AMD HSA (ROCr) backend's name (rank/hsa).
const HSAName = "hsa"

// HSA's kinds (rank/hsa/hsa.go).
const (
	Fine   Kind = "fine"
	Coarse Kind = "coarse"
)

// amdEnv are the variables ROCr and its thunk read, under HSA and under HIP
// alike: ROCM_PATH is where the AMD backends look for their libraries when
// the loader path lacks them; LOADER_ENABLE_LOGGING (ROCr's code-object
// loader) and HSAKMT_* (the thunk's HSAKMT_DEBUG_LEVEL) are the switches
// docs/AMD.md tells a user to set.
var (
	// P2PAT_AMD_PCIE_P2P_ATOMICS=1 runs P2P atomics on a PCIe link that
	// KFD's root-port bits allow (rank/hsa link, rank/hip peer).
	amdEnvVars     = []string{"ROCM_PATH", "LOADER_ENABLE_LOGGING", "P2PAT_AMD_PCIE_P2P_ATOMICS"}
	amdEnvPrefixes = []string{"HSA_", "ROCR_", "AMD_", "GPU_", "HSAKMT_"}
)

// HSA is libhsa-runtime64.so.1's row.
var HSA = Backend{
	Name: HSAName, GPU: true, Probe: 2, Vendor: "amd",
	Kinds: []KindSpec{
		{Name: Fine, DeviceMemory: true},
		{Name: Coarse, DeviceMemory: true},
	},
	EnvVars:      amdEnvVars,
	EnvPrefixes:  amdEnvPrefixes,
	DeviceNodes:  []string{"/dev/kfd"},
	LoadHint:     "libhsa-runtime64.so.1 must load and /dev/kfd be usable: check rocminfo and LD_LIBRARY_PATH",
	FaultParsers: []FaultParser{rocrFaults},
	Library: &DriverLibrary{
		Soname: regexp.MustCompile(`^libhsa-runtime64\.so\.1$`), InitSymbol: "hsa_init",
		InRoot: []string{"libhsa-runtime64.so.1", "lib/libhsa-runtime64.so.1"},
	},
}

var (
	// ROCr's default VM-fault handler (ROCR runtime.cpp), before abort():
	// "… node-%u (Agent handle: %p) on address %p%s. Reason: %s." where %s
	// is "(may not be exact address)" for an imprecise fault, glibc prints
	// a NULL %p as "(nil)", and older ROCr omits the agent handle.
	reAMDFault = regexp.MustCompile(`Memory access fault by GPU node-(\d+)(?: \(Agent handle: (0x[0-9a-fA-F]+|\(nil\))\))? on address (0x[0-9a-fA-F]+|\(nil\))( ?\(may not be exact address\))?\. Reason: ([^\n]*?)\.?\s*$`)
	// ROCr's other abort lines (core/runtime/runtime.cpp): a HW exception
	// with no handler that returned SUCCESS, and a memory error event.
	reAMDHWException = regexp.MustCompile(`HW Exception by GPU node-(\d+)(?: \(Agent handle: (?:0x[0-9a-fA-F]+|\(nil\))\))? reason ?: ?([^\n]*?)\s*$`)
	reAMDMemCritical = regexp.MustCompile(`Memory critical error by agent node-(\d+)(?: \(Agent handle: (?:0x[0-9a-fA-F]+|\(nil\))\))?(?: on address (0x[0-9a-fA-F]+|\(nil\)))?\. Reason: ([^\n]*?)\.?\s*$`)
)

// rocrFaults reads ROCr's abort lines; HIP runs on ROCr, so its row lists
// the same parser.
var rocrFaults = FaultParser{Name: "rocr", Line: parseROCrLine}

func parseROCrLine(line string) *device.Fault {
	if m := reAMDFault.FindStringSubmatch(line); m != nil {
		reason := m[5]
		if m[4] != "" {
			reason += " (may not be exact address)"
		}
		return &device.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: m[1], Address: m[3], Reason: reason}
	}
	if m := reAMDHWException.FindStringSubmatch(line); m != nil {
		return &device.Fault{Vendor: "amd", Kind: "gpu", Name: "hw-exception", Node: m[1], Reason: m[2]}
	}
	if m := reAMDMemCritical.FindStringSubmatch(line); m != nil {
		return &device.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-critical-error", Node: m[1], Address: m[2], Reason: m[3]}
	}
	return nil
}

func init() { register(&HSA) }
