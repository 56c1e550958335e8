package cuda

// Go mirrors of the CUDA structs this backend hands to the driver, laid out
// exactly as x86-64 gcc lays out CUDA 13.0's cuda.h (asserted field by field in structs_test.go). purego never sees these by
// value: they are always passed by pointer, and the one API that takes a
// struct by value (cuIpcOpenMemHandle_v2) is spelled out in words, see
// ipcOpenMemHandle in driver.go.

// memLocation is CUmemLocation: 8 bytes.
type memLocation struct {
	Type int32 // CUmemLocationType
	ID   int32 // device ordinal or NUMA node
}

// memAllocationProp is CUmemAllocationProp: 32 bytes, align 8.
type memAllocationProp struct {
	Type                 int32 // CUmemAllocationType
	RequestedHandleTypes int32 // CUmemAllocationHandleType bit mask
	Location             memLocation
	Win32HandleMetaData  uintptr // must be 0 on Linux
	// allocFlags
	CompressionType      uint8
	GPUDirectRDMACapable uint8
	Usage                uint16
	Reserved             [4]uint8
}

// memAccessDesc is CUmemAccessDesc: 12 bytes, align 4 (arrays are 12-byte
// strided).
type memAccessDesc struct {
	Location memLocation
	Flags    int32 // CUmemAccess_flags
}

// ipcMemHandle is CUipcMemHandle (and CUipcEventHandle): 64 opaque bytes.
type ipcMemHandle [ipcHandleSize]byte

// cuUUID is CUuuid: 16 bytes.
type cuUUID [16]byte

// ctxCreateParams is CUctxCreateParams (cuCtxCreate_v4): 24 bytes. Unused by
// the backend (it retains the primary context) and kept so the layout test
// documents it next to the others.
type ctxCreateParams struct {
	ExecAffinityParams    uintptr
	NumExecAffinityParams int32
	_                     int32
	CigParams             uintptr
}
