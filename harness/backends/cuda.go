package backends

import (
	"regexp"
	"strconv"

	"p2patomics/internal/device"
	"p2patomics/internal/inject"
)

// CUDAName is the NVIDIA backend's name (rank/cuda).
const CUDAName = "cuda"

// CUDA's kinds (rank/cuda/kinds.go's Kind* constants and rows).
const (
	VMM     Kind = "vmm"
	VMMHost Kind = "vmm-host"
	IPC     Kind = "ipc"
	DmaBuf  Kind = "dmabuf"
)

// CUDA is libcuda.so.1's row.
var CUDA = Backend{
	Name: CUDAName, GPU: true, Probe: 1, SpeedRules: true, InjectSymbols: inject.CUDASymbols, Vendor: "nvidia", LargeMappings: true,
	HostAtomicsVary: true,
	Kinds: []KindSpec{
		{Name: VMM, DeviceMemory: true},
		{Name: VMMHost, HostMemory: true},
		{Name: IPC, DeviceMemory: true, AlwaysGranted: true},
		{Name: DmaBuf, DeviceMemory: true, ExportOnly: true},
	},
	// NCCL_NVLS_ENABLE=0 is how the device scripts keep NVLink multicast
	// off on shared machines (scripts/device-run.sh); __GL*: the driver's
	// own switches.
	EnvVars:      []string{"NCCL_NVLS_ENABLE"},
	EnvPrefixes:  []string{"CUDA_", "NVIDIA_", "__GL"},
	DeviceNodes:  []string{"/dev/nvidia[0-9]*"},
	LoadHint:     "libcuda.so.1 must load and see a GPU: check nvidia-smi and LD_LIBRARY_PATH; --backend=auto prints what each backend says",
	FaultParsers: []FaultParser{{Name: "cuda-sticky", Text: parseCUDASticky}},
	Library: &DriverLibrary{
		Soname: regexp.MustCompile(`^libcuda\.so\.1$`), InitSymbol: "cuInit",
		InRoot:            []string{"libcuda.so.1", "lib64/libcuda.so.1", "lib/libcuda.so.1"},
		ModuleVersionFile: "/proc/driver/nvidia/version",
	},
}

// reCUDASticky: CUDA's sticky errors as a Go error string names them, the
// code in parentheses after the name.
var reCUDASticky = regexp.MustCompile(`CUDA_ERROR_(ILLEGAL_ADDRESS|LAUNCH_FAILED|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE|INVALID_PC|HARDWARE_STACK_ERROR)\b(?:\D*\((\d+)\))?`)

func parseCUDASticky(stderr string) *device.Fault {
	m := reCUDASticky.FindStringSubmatch(stderr)
	if m == nil {
		return nil
	}
	code, _ := strconv.ParseInt(m[2], 10, 64) // absent: 0, as the line gave none
	return &device.Fault{Vendor: "nvidia", Kind: "gpu", Code: code, Name: "CUDA_ERROR_" + m[1]}
}

func init() { register(&CUDA) }
