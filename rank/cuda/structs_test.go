package cuda

import (
	"testing"
	"unsafe"
)

// Layouts as gcc's offsetof/sizeof give them for CUDA 13.0's cuda.h on
// x86-64.
func TestStructLayouts(t *testing.T) {
	var prop memAllocationProp
	var loc memLocation
	var acc memAccessDesc
	var cp ctxCreateParams
	checks := []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(CUmemLocation)", unsafe.Sizeof(loc), 8},
		{"offsetof(CUmemLocation.type)", unsafe.Offsetof(loc.Type), 0},
		{"offsetof(CUmemLocation.id)", unsafe.Offsetof(loc.ID), 4},

		{"sizeof(CUmemAllocationProp)", unsafe.Sizeof(prop), 32},
		{"alignof(CUmemAllocationProp)", unsafe.Alignof(prop), 8},
		{"offsetof(CUmemAllocationProp.type)", unsafe.Offsetof(prop.Type), 0},
		{"offsetof(CUmemAllocationProp.requestedHandleTypes)", unsafe.Offsetof(prop.RequestedHandleTypes), 4},
		{"offsetof(CUmemAllocationProp.location)", unsafe.Offsetof(prop.Location), 8},
		{"offsetof(CUmemAllocationProp.location.type)", unsafe.Offsetof(prop.Location) + unsafe.Offsetof(prop.Location.Type), 8},
		{"offsetof(CUmemAllocationProp.location.id)", unsafe.Offsetof(prop.Location) + unsafe.Offsetof(prop.Location.ID), 12},
		{"offsetof(CUmemAllocationProp.win32HandleMetaData)", unsafe.Offsetof(prop.Win32HandleMetaData), 16},
		{"offsetof(CUmemAllocationProp.allocFlags.compressionType)", unsafe.Offsetof(prop.CompressionType), 24},
		{"offsetof(CUmemAllocationProp.allocFlags.gpuDirectRDMACapable)", unsafe.Offsetof(prop.GPUDirectRDMACapable), 25},
		{"offsetof(CUmemAllocationProp.allocFlags.usage)", unsafe.Offsetof(prop.Usage), 26},
		{"offsetof(CUmemAllocationProp.allocFlags.reserved)", unsafe.Offsetof(prop.Reserved), 28},

		{"sizeof(CUmemAccessDesc)", unsafe.Sizeof(acc), 12},
		{"alignof(CUmemAccessDesc)", unsafe.Alignof(acc), 4},
		{"offsetof(CUmemAccessDesc.location)", unsafe.Offsetof(acc.Location), 0},
		{"offsetof(CUmemAccessDesc.flags)", unsafe.Offsetof(acc.Flags), 8},
		{"stride of CUmemAccessDesc[]", unsafe.Sizeof([2]memAccessDesc{}) / 2, 12},

		{"sizeof(CUipcMemHandle)", unsafe.Sizeof(ipcMemHandle{}), 64},
		{"sizeof(CUuuid)", unsafe.Sizeof(cuUUID{}), 16},

		{"sizeof(CUctxCreateParams)", unsafe.Sizeof(cp), 24},
		{"offsetof(CUctxCreateParams.execAffinityParams)", unsafe.Offsetof(cp.ExecAffinityParams), 0},
		{"offsetof(CUctxCreateParams.numExecAffinityParams)", unsafe.Offsetof(cp.NumExecAffinityParams), 8},
		{"offsetof(CUctxCreateParams.cigParams)", unsafe.Offsetof(cp.CigParams), 16},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}
