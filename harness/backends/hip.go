package backends

import (
	"regexp"
	"strconv"
	"strings"

	"p2patomics/internal/device"
)

// HIPName is the AMD HIP backend's name (rank/hip).
const HIPName = "hip"

// HIP's kinds (rank/hip/hip.go): HIP VMem with hipMemAllocationTypePinned
// or Uncached, both device memory.
const (
	Pinned   Kind = "pinned"
	Uncached Kind = "uncached"
)

// HIP is libamdhip64's row. It runs on ROCr: ROCr's variables and fault
// lines are its too. P2PAT_HIP_IMPORT overrides the HIP 7.0/7.1 import
// convention probe where it cannot run.
var HIP = Backend{
	Name: HIPName, GPU: true, Probe: 3, Vendor: "amd", HSAVmemCase: true,
	Kinds: []KindSpec{
		{Name: Pinned, DeviceMemory: true},
		{Name: Uncached, DeviceMemory: true},
	},
	EnvVars:      append([]string{"P2PAT_HIP_IMPORT"}, amdEnvVars...),
	EnvPrefixes:  append([]string{"HIP_"}, amdEnvPrefixes...),
	DeviceNodes:  []string{"/dev/kfd"},
	LoadHint:     "libamdhip64 must load and see a GPU: check rocminfo and LD_LIBRARY_PATH",
	FaultParsers: []FaultParser{rocrFaults, {Name: "clr-queue", Line: parseCLRLine}},
	Library: &DriverLibrary{
		Soname: regexp.MustCompile(`^libamdhip64\.so\.\d+$`), InitSymbol: "hipInit",
		InRoot: []string{"libamdhip64.so", "lib/libamdhip64.so"},
	},
}

// reCLRQueue is CLR's queue error callback (rocclr/device/rocm/rocvirtual.cpp
// and rocdevice.cpp): every aperture violation, illegal instruction and
// queue exception a HIP rank meets. CLR prints no node; the queue is kept
// in the reason. Its out-of-resources variant (clr rocvirtual.cpp:2889)
// spells "Aborting" and "Code" capitalised and appends "Available Free
// mem : N MB", kept in the reason too (issue 40, review 3 P8).
var reCLRQueue = regexp.MustCompile(`Callback: Queue (0x[0-9a-fA-F]+|\(nil\)) [Aa]borting with error : (HSA_STATUS_[A-Z_]+): ?([^\n]*?)\s*[Cc]ode: 0x([0-9a-fA-F]+)(?: Available Free mem : ([0-9]+) MB)?`)

func parseCLRLine(line string) *device.Fault {
	m := reCLRQueue.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	code, _ := strconv.ParseInt(m[4], 16, 64) // the regexp admits hex digits only
	where := "queue " + m[1]
	if m[5] != "" {
		where += "; available free mem: " + m[5] + " MB"
	}
	return &device.Fault{Vendor: "amd", Kind: "gpu", Code: code, Name: m[2], Reason: strings.TrimSuffix(m[3], ".") + " (" + where + ")"}
}

func init() { register(&HIP) }
