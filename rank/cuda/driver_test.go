package cuda

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"p2patomics/rank/backend"
)

// Values from CUDA 13.0's cuda.h.
func TestEnumValues(t *testing.T) {
	checks := []struct {
		name      string
		got, want int
	}{
		{"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", attrMultiprocessorCount, 16},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_MODE", attrComputeMode, 20},
		{"CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING", attrUnifiedAddressing, 41},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", attrComputeCapabilityMajor, 75},
		{"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", attrComputeCapabilityMinor, 76},
		{"CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED", attrHostNativeAtomicSupported, 86},
		{"CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS", attrPageableMemoryAccess, 88},
		{"CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", attrVirtualMemoryManagementSupported, 102},
		{"CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", attrHandleTypePosixFileDescriptorSupported, 103},
		{"CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED", attrDmaBufSupported, 124},
		{"CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID", attrHostNumaID, 134},
		{"CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", attrHostNumaVirtualMemoryManagementSupp, 141},
		{"CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED", attrOnlyPartialHostNativeAtomicSupported, 147},
		{"CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK", p2pPerformanceRank, 1},
		{"CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED", p2pAccessSupported, 2},
		{"CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED", p2pNativeAtomicSupported, 3},
		{"CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED", p2pOnlyPartialNativeAtomicSupported, 5},
		{"CU_MEM_ALLOCATION_TYPE_PINNED", memAllocationTypePinned, 1},
		{"CU_MEM_LOCATION_TYPE_DEVICE", memLocationTypeDevice, 1},
		{"CU_MEM_LOCATION_TYPE_HOST_NUMA", memLocationTypeHostNuma, 3},
		{"CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", memHandleTypePosixFileDescriptor, 1},
		{"CU_MEM_HANDLE_TYPE_FABRIC", memHandleTypeFabric, 8},
		{"CU_MEM_ACCESS_FLAGS_PROT_READWRITE", memAccessFlagsProtReadWrite, 3},
		{"CU_MEM_ALLOC_GRANULARITY_MINIMUM", memAllocGranularityMinimum, 0},
		{"CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD", memRangeHandleTypeDmaBufFD, 1},
		{"CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS", ipcMemLazyEnablePeerAccess, 1},
		{"CU_IPC_HANDLE_SIZE", ipcHandleSize, 64},
		{"CU_STREAM_NON_BLOCKING", streamNonBlocking, 1},
		{"CU_EVENT_DISABLE_TIMING", eventDisableTiming, 2},
		{"CU_JIT_INFO_LOG_BUFFER", jitInfoLogBuffer, 3},
		{"CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES", jitInfoLogBufferSizeBytes, 4},
		{"CU_JIT_ERROR_LOG_BUFFER", jitErrorLogBuffer, 5},
		{"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES", jitErrorLogBufferSizeBytes, 6},
		{"CUDA_ERROR_ILLEGAL_ADDRESS", cudaErrorIllegalAddress, 700},
		{"CUDA_ERROR_LAUNCH_FAILED", cudaErrorLaunchFailed, 719},
		{"CUDA_ERROR_NOT_SUPPORTED", cudaErrorNotSupported, 801},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for code, name := range errorNames {
		if !strings.HasPrefix(name, "CUDA_") {
			t.Errorf("errorNames[%d] = %q", code, name)
		}
	}
	for a, name := range attrNames {
		if !strings.HasPrefix(name, "CU_DEVICE_ATTRIBUTE_") {
			t.Errorf("attrNames[%d] = %q", a, name)
		}
	}
}

// A driver with no library: check uses the built-in name table.
func offlineDriver() *driver {
	return &driver{path: libName, bound: map[string]string{}, missing: map[string]error{}}
}

func TestCheckMapsResults(t *testing.T) {
	d := offlineDriver()
	if err := d.check(status{Call: "cuInit", Code: 0}); err != nil {
		t.Fatalf("CUDA_SUCCESS: %v", err)
	}

	err := d.check(status{Call: "cuMemGetHandleForAddressRange", Code: cudaErrorNotSupported})
	var e *Error
	if !errors.As(err, &e) || e.Code != 801 || e.Name != "CUDA_ERROR_NOT_SUPPORTED" || e.Call != "cuMemGetHandleForAddressRange" {
		t.Fatalf("801: got %#v", err)
	}
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("801 must match backend.ErrNotSupported")
	}
	if got, want := err.Error(), "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED (801)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}

	err = d.check(status{Call: "cuMemCreate", Code: cudaErrorInvalidValue})
	if !errors.As(err, &e) || e.Name != "CUDA_ERROR_INVALID_VALUE" || errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("1: got %v (ErrNotSupported=%v)", err, errors.Is(err, backend.ErrNotSupported))
	}

	err = d.check(status{Call: "cuMemMap", Code: 12345})
	if !errors.As(err, &e) || e.Name != "CUDA_ERROR_12345" {
		t.Errorf("unknown code: got %v", err)
	}

	for code, name := range map[int]string{
		700: "CUDA_ERROR_ILLEGAL_ADDRESS", 710: "CUDA_ERROR_ASSERT",
		714: "CUDA_ERROR_HARDWARE_STACK_ERROR", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
		716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
		718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED",
		214: "CUDA_ERROR_ECC_UNCORRECTABLE", 220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	} {
		err := d.check(status{Call: "cuStreamSynchronize", Code: cuResult(code)})
		var f *backend.Fault
		if !errors.As(err, &f) {
			t.Errorf("%d: want *backend.Fault, got %T %v", code, err, err)
			continue
		}
		if f.Vendor != "nvidia" || f.Kind != "gpu" || f.Code != int64(code) || f.Name != name ||
			!strings.HasPrefix(f.Reason, "cuStreamSynchronize: ") {
			t.Errorf("%d: fault %+v", code, *f)
		}
	}
	// Not sticky: out of resources, not ready, peer access already enabled.
	for _, code := range []int{2, 600, 701, 704, 999} {
		if isFault(d.check(status{Call: "cuLaunchKernel", Code: cuResult(code)})) {
			t.Errorf("%d must not be a fault", code)
		}
	}

	err = d.check(status{Call: "cuMemGetHandleForAddressRange", Code: resultSymbolMissing})
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "cuMemGetHandleForAddressRange") {
		t.Errorf("missing symbol: %v", err)
	}
}

func TestLibraryAbsent(t *testing.T) {
	const bogus = "libcuda-p2patomics-absent.so.1"
	_, err := loadDriver(bogus)
	if err == nil {
		t.Fatal("loading a library that does not exist succeeded")
	}
	if !errors.Is(err, backend.ErrNotSupported) || !strings.HasPrefix(err.Error(), bogus+": ") {
		t.Errorf("got %q (ErrNotSupported=%v)", err, errors.Is(err, backend.ErrNotSupported))
	}
	t.Log(err)
}

// TestOpenWithoutDriver is the CI case: no libcuda.so.1, so Open is a skip
// naming the library.
func TestOpenWithoutDriver(t *testing.T) {
	if _, err := openDriver(); err == nil {
		t.Skip("libcuda.so.1 loads here; the device tests cover Open")
	}
	b, err := backend.New("cuda")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Open(backend.Config{Rank: 0, Ranks: 2, Device: 0})
	if err == nil {
		t.Fatal("Open succeeded without libcuda.so.1")
	}
	if !errors.Is(err, backend.ErrNotSupported) || !strings.HasPrefix(err.Error(), "libcuda.so.1: ") {
		t.Errorf("got %q (ErrNotSupported=%v)", err, errors.Is(err, backend.ErrNotSupported))
	}
	t.Log(err)
	if err := b.Close(); err != nil {
		t.Errorf("Close after a failed Open: %v", err)
	}
	if _, _, err := b.Alloc(KindVMM, 1<<20); err == nil {
		t.Error("Alloc on a closed backend succeeded")
	}
}

// TestMissingSymbols binds against a library that has none of CUDA's
// symbols: every call must become ErrNotSupported naming the symbol, never a
// panic.
func TestMissingSymbols(t *testing.T) {
	d, err := loadDriver("libc.so.6")
	if err != nil {
		t.Skipf("libc.so.6: %v", err)
	}
	if len(d.bound) != 0 {
		t.Errorf("libc.so.6 exported CUDA symbols? %v", d.bound)
	}
	err = d.check(d.cuInit(0))
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("cuInit: %v", err)
	}
	var ms float32
	err = d.check(d.cuEventElapsedTime(&ms, 0, 0))
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "cuEventElapsedTime_v2 or cuEventElapsedTime") {
		t.Errorf("cuEventElapsedTime: %v", err)
	}
	_, err = d.ipcOpenMemHandle(ipcMemHandle{}, 1)
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "cuIpcOpenMemHandle_v2") {
		t.Errorf("cuIpcOpenMemHandle_v2: %v", err)
	}
	for name := range d.missing {
		if d.has(name) {
			t.Errorf("%s both missing and bound", name)
		}
	}
}

// The 64-byte handle must reach the stand-in as eight little-endian words in
// struct order, after pdptr, flags and four pads.
func TestIPCOpenPacking(t *testing.T) {
	var h ipcMemHandle
	for i := range h {
		h[i] = byte(i*7 + 1)
	}
	w := ipcHandleWords(h)
	for i := range w {
		if want := binary.LittleEndian.Uint64(h[8*i : 8*i+8]); w[i] != want {
			t.Errorf("word %d = %#x, want %#x", i, w[i], want)
		}
	}
	// The bytes the words make, laid out as they are on the stack.
	var back [64]byte
	for i := range w {
		binary.LittleEndian.PutUint64(back[8*i:], w[i])
	}
	if back != h {
		t.Errorf("round trip: %x != %x", back, h)
	}

	d := offlineDriver()
	var got []uint64
	var gotFlags uint32
	d.cuIpcOpenMemHandleRaw = func(pdptr *uint64, flags uint32, pad1, pad2, pad3, pad4 uint64,
		h0, h1, h2, h3, h4, h5, h6, h7 uint64) cuResult {
		gotFlags = flags
		got = []uint64{pad1, pad2, pad3, pad4, h0, h1, h2, h3, h4, h5, h6, h7}
		*pdptr = 0x7f0000200000
		return 0
	}
	p, err := d.ipcOpenMemHandle(h, ipcMemLazyEnablePeerAccess)
	if err != nil {
		t.Skip(err) // not amd64
	}
	if p != 0x7f0000200000 || gotFlags != 1 {
		t.Errorf("p=%#x flags=%d", p, gotFlags)
	}
	want := append([]uint64{0, 0, 0, 0}, w[:]...)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("argument %d = %#x, want %#x", i+2, got[i], want[i])
		}
	}
}

func TestFormatting(t *testing.T) {
	if got := driverVersionString(13000); got != "13.0" {
		t.Errorf("13000 -> %q", got)
	}
	if got := driverVersionString(12080); got != "12.8" {
		t.Errorf("12080 -> %q", got)
	}
	u := cuUUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if got, want := formatUUID(u), "GPU-12345678-9abc-def0-0123-456789abcdef"; got != want {
		t.Errorf("uuid %q, want %q", got, want)
	}
	if roundUp(1, 2<<20) != 2<<20 || roundUp(2<<20, 2<<20) != 2<<20 || roundUp((2<<20)+1, 2<<20) != 4<<20 {
		t.Error("roundUp")
	}
}

func TestKinds(t *testing.T) {
	b, err := backend.New("cuda")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cuda" {
		t.Errorf("Name() = %q", b.Name())
	}
	// The kinds are allocKinds' rows (kinds.go), each whole: a new kind is
	// one row, so this test lists none of them (TestMatrixMatchesBackends
	// holds the rows equal to harness/backends'), and checks what a row
	// must hold.
	if got, want := strings.Join(b.Kinds(), ","), strings.Join(kindNames(), ","); got != want || len(b.Kinds()) < 4 {
		t.Errorf("Kinds() = %s, the rows %s", got, want)
	}
	seen := map[string]bool{}
	for _, k := range allocKinds {
		if k.name == "" || seen[k.name] || k.alloc == nil || k.imp == nil || k.free == nil || (k.hostNUMA && !k.vmm) {
			t.Errorf("row %+v: want a unique name, alloc, imp and free, and host-NUMA only for vmm memory", k)
		}
		seen[k.name] = true
		if r, err := kindOf(k.name); err != nil || r.name != k.name || hostNUMA(k.name) != k.hostNUMA {
			t.Errorf("kindOf(%s) = %+v, %v", k.name, r, err)
		}
	}
	if _, err := kindOf("vmm-nope"); !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), strings.Join(kindNames(), ", ")) {
		t.Errorf("an unknown kind: %v, want not supported naming the kinds", err)
	}
}

// isFault reports whether err is (or wraps) a GPU fault.
func isFault(err error) bool {
	var f *backend.Fault
	return errors.As(err, &f)
}
