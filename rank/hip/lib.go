package hip

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/binding"
	"p2patomics/rank/backend"
)

// libNames are tried in order: HIP's SOVERSION is its major version.
var libNames = []string{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"}

// requiredSymbols exist in every libamdhip64 this backend can meet,
// bookworm's 5.2 included (the VMem entry points exist there but
// hipMemExportToShareableHandle only works from 6.2: a version gate).
var requiredSymbols = []string{
	"hipInit", "hipGetDeviceCount", "hipSetDevice", "hipGetErrorName", "hipGetErrorString",
	"hipRuntimeGetVersion", "hipDriverGetVersion", "hipDeviceGetAttribute", "hipGetDeviceProperties",
	"hipMemGetAllocationGranularity", "hipMemCreate", "hipMemRelease", "hipMemAddressReserve",
	"hipMemAddressFree", "hipMemMap", "hipMemUnmap", "hipMemSetAccess",
	"hipMemExportToShareableHandle", "hipMemImportFromShareableHandle",
	"hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel", "hipModuleUnload",
	"hipEventCreate", "hipEventRecord", "hipEventSynchronize", "hipEventElapsedTime", "hipEventDestroy",
	"hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyDtoDAsync", "hipDeviceSynchronize", "hipMemGetInfo",
	"hipDeviceGetP2PAttribute", "hipMalloc", "hipFree", "hipEventQuery", "hipStreamQuery",
}

// optionalSymbols: symbol -> the HIP release that added it.
var optionalSymbols = map[string]string{
	"hipGetDevicePropertiesR0600": "6.0",
	// The link type of a peer pair (PCIe or xGMI, an
	// hsa_amd_link_info_type_t): in the 6.4.3 and 7.2.4 headers; absent,
	// the P2P atomics cap is not held back for PCIe (Backend.peer).
	"hipExtGetLinkTypeAndHopCount": "6.4",
}

// lib is the one choke point into libamdhip64. HIP keeps a per-thread
// current device (hipSetDevice): every call must come from the OS thread
// that called Open, which the rank server guarantees (LockOSThread).
type lib struct {
	name    string // the candidate that loaded (a soname or a path)
	path    string // the file the process mapped for it (/proc/self/maps)
	missing map[string]string
	others  []string     // other runtimes on disk (binding.OtherOnDisk)
	probing atomic.Int32 // > 0 inside beginProbe/endProbe

	init_            func(flags uint32) status
	getDeviceCount   func(n *int32) status
	setDevice        func(dev int32) status
	getErrorName     func(e uint32) uintptr
	getErrorString   func(e uint32) uintptr
	runtimeVersion   func(v *int32) status
	driverVersion    func(v *int32) status
	deviceAttribute  func(v *int32, attr uint32, dev int32) status
	p2pAttribute     func(v *int32, attr uint32, src, dst int32) status
	linkType         func(dev1, dev2 int32, linkType, hops *uint32) status
	propsOld         func(p unsafe.Pointer, dev int32) status
	propsR0600       func(p unsafe.Pointer, dev int32) status
	granularity      func(g *uint64, prop *allocProp, option uint32) status
	memCreate        func(h *uintptr, size uint64, prop *allocProp, flags uint64) status
	memRelease       func(h uintptr) status
	addressReserve   func(p *uintptr, size, align uint64, addr uintptr, flags uint64) status
	addressFree      func(p uintptr, size uint64) status
	memMap           func(p uintptr, size, offset uint64, h uintptr, flags uint64) status
	memUnmap         func(p uintptr, size uint64) status
	memSetAccess     func(p uintptr, size uint64, desc *accessDesc, n uint64) status
	memExport        func(out unsafe.Pointer, h uintptr, typ uint32, flags uint64) status
	memImport        func(h *uintptr, osHandle uintptr, typ uint32) status
	moduleLoadData   func(m *uintptr, image uintptr) status
	moduleGetFunc    func(f *uintptr, m uintptr, name *byte) status
	moduleLaunch     func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params uintptr, extra uintptr) status
	moduleUnload     func(m uintptr) status
	eventCreate      func(e *uintptr) status
	eventRecord      func(e uintptr, stream uintptr) status
	eventSynchronize func(e uintptr) status
	eventElapsed     func(ms *float32, start, stop uintptr) status
	eventDestroy     func(e uintptr) status
	memcpyDtoH       func(dst unsafe.Pointer, src uintptr, n uint64) status
	memcpyHtoD       func(dst uintptr, src unsafe.Pointer, n uint64) status
	memcpyDtoDAsync  func(dst, src uintptr, n uint64, stream uintptr) status
	deviceSync       func() status
	memGetInfo       func(free, total *uint64) status
	malloc           func(p *uintptr, size uint64) status
	free             func(p uintptr) status
	// eventQuery and streamQuery are the watchdog's looks at the work a
	// wait waits for (watch.go), bound untraced: observers every 20 ms
	// of a long wait, outside the trace and the injector (as CUDA's
	// cuStreamQuery).
	eventQuery  func(e uintptr) uint32
	streamQuery func(s uintptr) uint32
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// shadowed names the other runtimes on disk, for a too-old loaded one's
// skip ("" when there are none).
func (l *lib) shadowed() string { return binding.Shadowed(l.others) }

func load() (*lib, error) {
	loadOnce.Do(func() {
		var errs []string
		cands := binding.Candidates(libNames, binding.ROCmPathDir(), binding.ROCmLibDirs())
		for i, n := range cands {
			l, err := open(n, i == len(cands)-1)
			if err == nil {
				l.others = binding.OtherOnDisk(cands, l.path)
				loaded = l
				return
			}
			errs = append(errs, err.Error())
		}
		loadErr = backend.NotSupportedf("no loadable libamdhip64 (no ROCm HIP runtime installed? searched the loader path, $ROCM_PATH/lib and /opt/rocm/lib): %s", strings.Join(errs, "; "))
	})
	return loaded, loadErr
}

// status is what a bound entry point returns: the hipError_t and the name of
// the symbol that returned it, so call sites name a symbol only in the table.
type status = binding.Status[uint32]

// symbols is the binding table. The string before the name is the argSpec:
// what the trace records of each argument (trace.ArgSpec).
func (l *lib) symbols() []binding.Symbol {
	return []binding.Symbol{
		binding.Sym1(&l.init_, l.end, "flags:x", "hipInit"),
		binding.Sym1(&l.getDeviceCount, l.end, ">count", "hipGetDeviceCount"),
		binding.Sym1(&l.setDevice, l.end, "deviceId", "hipSetDevice"),
		binding.Untraced(&l.getErrorName, "hipGetErrorName"),
		binding.Untraced(&l.getErrorString, "hipGetErrorString"),
		binding.Sym1(&l.runtimeVersion, l.end, ">runtimeVersion", "hipRuntimeGetVersion"),
		binding.Sym1(&l.driverVersion, l.end, ">driverVersion", "hipDriverGetVersion"),
		binding.Sym3(&l.deviceAttribute, l.end, ">pi attr deviceId", "hipDeviceGetAttribute"),
		binding.Sym4(&l.p2pAttribute, l.end, ">value attr srcDevice dstDevice", "hipDeviceGetP2PAttribute"),
		binding.Sym4(&l.linkType, l.end, "device1 device2 >linktype >hopcount", "hipExtGetLinkTypeAndHopCount"),
		binding.Sym2(&l.propsOld, l.end, "prop deviceId", "hipGetDeviceProperties"),
		binding.Sym2(&l.propsR0600, l.end, "prop deviceId", "hipGetDevicePropertiesR0600"),
		binding.Sym3(&l.granularity, l.end, ">granularity prop option", "hipMemGetAllocationGranularity"),
		binding.Sym4(&l.memCreate, l.end, ">handle:x size prop flags:x", "hipMemCreate"),
		binding.Sym1(&l.memRelease, l.end, "handle:x", "hipMemRelease"),
		binding.Sym5(&l.addressReserve, l.end, ">ptr:x size alignment addr:x flags:x", "hipMemAddressReserve"),
		binding.Sym2(&l.addressFree, l.end, "devPtr:x size", "hipMemAddressFree"),
		binding.Sym5(&l.memMap, l.end, "ptr:x size offset handle:x flags:x", "hipMemMap"),
		binding.Sym2(&l.memUnmap, l.end, "ptr:x size", "hipMemUnmap"),
		binding.Sym4(&l.memSetAccess, l.end, "ptr:x size desc count", "hipMemSetAccess"),
		binding.Sym4(&l.memExport, l.end, ">shareableHandle:i32 handle:x handleType flags:x", "hipMemExportToShareableHandle"),
		binding.Sym3(&l.memImport, l.end, ">handle:x osHandle:x shHandleType", "hipMemImportFromShareableHandle"),
		binding.Sym2(&l.moduleLoadData, l.end, ">module:x image:x", "hipModuleLoadData"),
		binding.Sym3(&l.moduleGetFunc, l.end, ">function:x module:x kname:s", "hipModuleGetFunction"),
		binding.Launch(&l.moduleLaunch, l.end, "sharedMemBytes", "kernelParams", "hipModuleLaunchKernel"),
		binding.Sym1(&l.moduleUnload, l.end, "module:x", "hipModuleUnload"),
		binding.Sym1(&l.eventCreate, l.end, ">event:x", "hipEventCreate"),
		binding.Sym2(&l.eventRecord, l.end, "event:x stream:x", "hipEventRecord"),
		binding.Sym1(&l.eventSynchronize, l.end, "event:x", "hipEventSynchronize"),
		binding.Sym3(&l.eventElapsed, l.end, ">ms start:x stop:x", "hipEventElapsedTime"),
		binding.Sym1(&l.eventDestroy, l.end, "event:x", "hipEventDestroy"),
		binding.Sym3(&l.memcpyDtoH, l.end, "dst src:x sizeBytes", "hipMemcpyDtoH"),
		binding.Sym3(&l.memcpyHtoD, l.end, "dst:x src sizeBytes", "hipMemcpyHtoD"),
		binding.Sym4(&l.memcpyDtoDAsync, l.end, "dst:x src:x sizeBytes stream:x", "hipMemcpyDtoDAsync"),
		binding.Sym0(&l.deviceSync, l.end, "hipDeviceSynchronize"),
		binding.Sym2(&l.memGetInfo, l.end, ">free >total", "hipMemGetInfo"),
		binding.Sym2(&l.malloc, l.end, ">ptr:x size", "hipMalloc"),
		binding.Sym1(&l.free, l.end, "ptr:x", "hipFree"),
		binding.Untraced(&l.eventQuery, "hipEventQuery"),
		binding.Untraced(&l.streamQuery, "hipStreamQuery"),
	}
}

// open loads one candidate library; lastTry says whether a failure ends the
// search (earlier candidates are probes: their failure is not marked).
func open(name string, lastTry bool) (*lib, error) {
	h, err := binding.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL, "RTLD_NOW|RTLD_LOCAL", lastTry)
	if err != nil {
		return nil, err
	}
	l := &lib{name: name, path: binding.Loaded("libamdhip64.so"), missing: map[string]string{}}
	if l.path == "" {
		l.path = name
	}
	_, absent := binding.Bind(h, l.symbols())
	var bad []string
	for _, n := range absent {
		if v, ok := optionalSymbols[n]; ok {
			l.missing[n] = v // an absent optional symbol stays nil
		} else {
			bad = append(bad, n)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s lacks required symbols %v", name, bad)
	}
	return l, nil
}

// Error is a failed HIP call with hipGetErrorName's text.
type Error struct {
	Call string
	Code uint32
	Name string
	Text string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Text)
}

// check turns a call's status into an error (nil for hipSuccess).
func (l *lib) check(st status) error {
	if st.Code == errSuccess {
		return nil
	}
	return &Error{Call: st.Call, Code: st.Code, Name: cString(l.getErrorName(st.Code)), Text: cString(l.getErrorString(st.Code))}
}

// checkFor is check with what the call was about after its name, e.g.
// hipModuleGetFunction(p2p_add_sys); the name is built only on failure.
func (l *lib) checkFor(what string, st status) error {
	if st.Code == errSuccess {
		return nil
	}
	st.Call += "(" + what + ")"
	return l.check(st)
}

func cString(p uintptr) string {
	if p == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(ptr(p)), 1024)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// ptr turns a C-owned address into an unsafe.Pointer.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// cmem is memory outside the Go heap (mmap): for kernel parameter arrays
// and code-object bytes the runtime may keep pointing at.
type cmem []byte

func newCmem(n int) (cmem, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	return cmem(b), err
}

func (m cmem) addr() uintptr { return uintptr(unsafe.Pointer(&m[0])) }
func (m cmem) free()         { syscall.Munmap(m) }
