package backends

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRows: every row is well formed: a name, kinds, exactly one non-GPU
// backend (host) and it last, GPU backends in Probe order with distinct
// Probe values, at least one DeviceMemory kind (ScratchKind), and device
// node patterns that parse. Kind names are unique across backends, which
// KindSpecOf relies on for a world built without a backend name.
func TestRows(t *testing.T) {
	if len(All) < 2 || All[len(All)-1] != &Host {
		t.Fatalf("All = %v: want the GPU backends, then host last", names())
	}
	kinds := map[Kind]string{}
	probes := map[int]string{}
	for i, b := range All {
		if b.Name == "" || len(b.Kinds) == 0 || b.Vendor == "" {
			t.Errorf("row %d (%q): a name, a vendor and kinds are required", i, b.Name)
		}
		if Lookup(b.Name) != b {
			t.Errorf("Lookup(%q) does not find its row", b.Name)
		}
		if b.ScratchKind() == "" {
			t.Errorf("%s: no DeviceMemory kind for ScratchWords", b.Name)
		}
		if b.GPU {
			if other, ok := probes[b.Probe]; ok || b.Probe <= 0 {
				t.Errorf("%s: Probe %d (taken by %q, or not positive)", b.Name, b.Probe, other)
			}
			probes[b.Probe] = b.Name
			if len(b.DeviceNodes) == 0 || b.LoadHint == "" {
				t.Errorf("%s: a GPU backend names its device nodes and a load hint", b.Name)
			}
		} else if i != len(All)-1 {
			t.Errorf("%s: the backend without a GPU comes last", b.Name)
		}
		if i > 0 && All[i-1].GPU && b.GPU && All[i-1].Probe > b.Probe {
			t.Errorf("%s probes before %s against their Probe values", All[i-1].Name, b.Name)
		}
		for _, k := range b.Kinds {
			if other, ok := kinds[k.Name]; ok {
				t.Errorf("kind %s is both %s's and %s's", k.Name, other, b.Name)
			}
			kinds[k.Name] = b.Name
			if k.DeviceMemory && k.HostMemory {
				t.Errorf("%s/%s: device memory and host memory at once", b.Name, k.Name)
			}
		}
		for _, p := range b.DeviceNodes {
			if _, err := filepath.Match(p, "/dev/x"); err != nil || !strings.HasPrefix(p, "/dev/") {
				t.Errorf("%s: device node pattern %q: %v", b.Name, p, err)
			}
		}
	}
	if got := names(); !slices.Equal(got, []string{CUDAName, HSAName, HIPName, HostName}) {
		t.Errorf("probe order %v", got)
	}
}

func names() []string {
	var ns []string
	for _, b := range All {
		ns = append(ns, b.Name)
	}
	return ns
}

// TestKindProperties: the properties the parent used to spell as kind-name
// compares answer as they did ("vmm-host" meant host memory, "ipc" has no
// ungranted mapping, "dmabuf" is export-only, the first kind is the
// scratch kind) and a world built without a backend name still finds its
// kind; an unknown kind has no property.
func TestKindProperties(t *testing.T) {
	for _, b := range All {
		for _, k := range b.Kinds {
			want := KindSpec{Name: k.Name}
			switch k.Name {
			case VMMHost:
				want.HostMemory = true
			case IPC:
				want.DeviceMemory, want.AlwaysGranted = true, true
			case DmaBuf:
				want.DeviceMemory, want.ExportOnly = true, true
			default:
				want.DeviceMemory = true
			}
			if got := KindSpecOf(b.Name, string(k.Name)); got != want {
				t.Errorf("%s/%s: %+v, want %+v", b.Name, k.Name, got, want)
			}
			if got := KindSpecOf("", string(k.Name)); got != want {
				t.Errorf("no backend, %s: %+v, want %+v", k.Name, got, want)
			}
		}
		if b.ScratchKind() != string(b.Kinds[0].Name) {
			t.Errorf("%s: scratch kind %s, the first kind is %s", b.Name, b.ScratchKind(), b.Kinds[0].Name)
		}
	}
	if got := KindSpecOf(HostName, string(VMM)); got.DeviceMemory || got.HostMemory {
		t.Errorf("host has no vmm kind, got %+v", got)
	}
	if IsGPU(HostName) || !IsGPU(CUDAName) || IsGPU("level-zero") {
		t.Error("IsGPU: host and unknown names are not GPU backends; cuda is")
	}
	if LoadHint("level-zero") != "see docs/FLAGS.md" || !strings.Contains(LoadHint(CUDAName), "libcuda.so.1") {
		t.Error("LoadHint")
	}
}

// TestEnvAllowed: a rank inherits each runtime's variables, by name and by
// prefix, and nothing else.
func TestEnvAllowed(t *testing.T) {
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "HSA_XNACK", "ROCR_VISIBLE_DEVICES",
		"HSAKMT_DEBUG_LEVEL", "HIP_VISIBLE_DEVICES", "ROCM_PATH", "LOADER_ENABLE_LOGGING", "P2PAT_HIP_IMPORT", "__GL_SYNC_TO_VBLANK"} {
		if !EnvAllowed(k) {
			t.Errorf("%s dropped", k)
		}
	}
	for _, k := range []string{"LD_PRELOAD", "P2PAT_OUT", "GOFLAGS", "XCUDA_X", "ROCM"} {
		if EnvAllowed(k) {
			t.Errorf("%s passed to ranks", k)
		}
	}
}

// TestParseFaultOrder: the first line any backend parses wins (ROCr's line
// before CLR's on a HIP rank, as they were printed), and CUDA's whole-text
// parser reads a name and its code across the text.
func TestParseFaultOrder(t *testing.T) {
	clr := "Callback: Queue 0x7f00 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. code: 0x29"
	rocr := "Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x7f0000. Reason: Page not present or supervisor privilege."
	if f := ParseFault("x\n" + clr + "\n" + rocr + "\n"); f == nil || f.Name != "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION" || f.Code != 0x29 {
		t.Errorf("CLR line first: %+v", f)
	}
	if f := ParseFault(rocr + "\n" + clr); f == nil || f.Name != "memory-access-fault" || f.Node != "2" {
		t.Errorf("ROCr line first: %+v", f)
	}
	if f := ParseFault("error: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS\n(700)"); f == nil || f.Code != 700 || f.Vendor != "nvidia" {
		t.Errorf("CUDA across lines: %+v", f)
	}
	if f := ParseFault("SIGSEGV: segmentation violation"); f != nil {
		t.Errorf("a Go fault is no runtime's: %+v", f)
	}
}
