package hip

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
	"p2patomics/trace"
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
}

// optionalSymbols: symbol -> the HIP release that added it.
var optionalSymbols = map[string]string{
	"hipGetDevicePropertiesR0600": "6.0",
}

// lib is the one choke point into libamdhip64. HIP keeps a per-thread
// current device (hipSetDevice): every call must come from the OS thread
// that called Open, which the rank server guarantees (LockOSThread).
type lib struct {
	name    string
	missing map[string]string
	probing atomic.Int32 // > 0 inside beginProbe/endProbe

	init_            func(flags uint32) uint32
	getDeviceCount   func(n *int32) uint32
	setDevice        func(dev int32) uint32
	getErrorName     func(e uint32) uintptr
	getErrorString   func(e uint32) uintptr
	runtimeVersion   func(v *int32) uint32
	driverVersion    func(v *int32) uint32
	deviceAttribute  func(v *int32, attr uint32, dev int32) uint32
	propsOld         func(p unsafe.Pointer, dev int32) uint32
	propsR0600       func(p unsafe.Pointer, dev int32) uint32
	granularity      func(g *uint64, prop *allocProp, option uint32) uint32
	memCreate        func(h *uintptr, size uint64, prop *allocProp, flags uint64) uint32
	memRelease       func(h uintptr) uint32
	addressReserve   func(p *uintptr, size, align uint64, addr uintptr, flags uint64) uint32
	addressFree      func(p uintptr, size uint64) uint32
	memMap           func(p uintptr, size, offset uint64, h uintptr, flags uint64) uint32
	memUnmap         func(p uintptr, size uint64) uint32
	memSetAccess     func(p uintptr, size uint64, desc *accessDesc, n uint64) uint32
	memExport        func(out unsafe.Pointer, h uintptr, typ uint32, flags uint64) uint32
	memImport        func(h *uintptr, osHandle uintptr, typ uint32) uint32
	moduleLoadData   func(m *uintptr, image uintptr) uint32
	moduleGetFunc    func(f *uintptr, m uintptr, name *byte) uint32
	moduleLaunch     func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params uintptr, extra uintptr) uint32
	moduleUnload     func(m uintptr) uint32
	eventCreate      func(e *uintptr) uint32
	eventRecord      func(e uintptr, stream uintptr) uint32
	eventSynchronize func(e uintptr) uint32
	eventElapsed     func(ms *float32, start, stop uintptr) uint32
	eventDestroy     func(e uintptr) uint32
	memcpyDtoH       func(dst unsafe.Pointer, src uintptr, n uint64) uint32
	memcpyHtoD       func(dst uintptr, src unsafe.Pointer, n uint64) uint32
	memcpyDtoDAsync  func(dst, src uintptr, n uint64, stream uintptr) uint32
	deviceSync       func() uint32
	memGetInfo       func(free, total *uint64) uint32
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

func load() (*lib, error) {
	loadOnce.Do(func() {
		var errs []string
		for i, n := range libNames {
			l, err := open(n, i == len(libNames)-1)
			if err == nil {
				loaded = l
				return
			}
			errs = append(errs, err.Error())
		}
		loadErr = backend.NotSupportedf("no loadable libamdhip64 (no ROCm HIP runtime installed?): %s", strings.Join(errs, "; "))
	})
	return loaded, loadErr
}

// symbol is one entry point: its name, the Go function variable to bind,
// and wrap, which puts the bound function behind the trace point
// (calltrace.go; nil for the error-name lookups).
type symbol struct {
	name string
	fn   any
	wrap func()
}

// symbols is the binding table. The string before the name is the argSpec:
// what the trace records of each argument (argspec.go).
func (l *lib) symbols() []symbol {
	return []symbol{
		sym1(l, &l.init_, "flags:x", "hipInit"),
		sym1(l, &l.getDeviceCount, ">count", "hipGetDeviceCount"),
		sym1(l, &l.setDevice, "deviceId", "hipSetDevice"),
		untraced(&l.getErrorName, "hipGetErrorName"),
		untraced(&l.getErrorString, "hipGetErrorString"),
		sym1(l, &l.runtimeVersion, ">runtimeVersion", "hipRuntimeGetVersion"),
		sym1(l, &l.driverVersion, ">driverVersion", "hipDriverGetVersion"),
		sym3(l, &l.deviceAttribute, ">pi attr deviceId", "hipDeviceGetAttribute"),
		sym2(l, &l.propsOld, "prop deviceId", "hipGetDeviceProperties"),
		sym2(l, &l.propsR0600, "prop deviceId", "hipGetDevicePropertiesR0600"),
		sym3(l, &l.granularity, ">granularity prop option", "hipMemGetAllocationGranularity"),
		sym4(l, &l.memCreate, ">handle:x size prop flags:x", "hipMemCreate"),
		sym1(l, &l.memRelease, "handle:x", "hipMemRelease"),
		sym5(l, &l.addressReserve, ">ptr:x size alignment addr:x flags:x", "hipMemAddressReserve"),
		sym2(l, &l.addressFree, "devPtr:x size", "hipMemAddressFree"),
		sym5(l, &l.memMap, "ptr:x size offset handle:x flags:x", "hipMemMap"),
		sym2(l, &l.memUnmap, "ptr:x size", "hipMemUnmap"),
		sym4(l, &l.memSetAccess, "ptr:x size desc count", "hipMemSetAccess"),
		sym4(l, &l.memExport, ">shareableHandle:i32 handle:x handleType flags:x", "hipMemExportToShareableHandle"),
		sym3(l, &l.memImport, ">handle:x osHandle:x shHandleType", "hipMemImportFromShareableHandle"),
		sym2(l, &l.moduleLoadData, ">module:x image:x", "hipModuleLoadData"),
		sym3(l, &l.moduleGetFunc, ">function:x module:x kname:s", "hipModuleGetFunction"),
		symLaunch(l, &l.moduleLaunch, "hipModuleLaunchKernel"),
		sym1(l, &l.moduleUnload, "module:x", "hipModuleUnload"),
		sym1(l, &l.eventCreate, ">event:x", "hipEventCreate"),
		sym2(l, &l.eventRecord, "event:x stream:x", "hipEventRecord"),
		sym1(l, &l.eventSynchronize, "event:x", "hipEventSynchronize"),
		sym3(l, &l.eventElapsed, ">ms start:x stop:x", "hipEventElapsedTime"),
		sym1(l, &l.eventDestroy, "event:x", "hipEventDestroy"),
		sym3(l, &l.memcpyDtoH, "dst src:x sizeBytes", "hipMemcpyDtoH"),
		sym3(l, &l.memcpyHtoD, "dst:x src sizeBytes", "hipMemcpyHtoD"),
		sym4(l, &l.memcpyDtoDAsync, "dst:x src:x sizeBytes stream:x", "hipMemcpyDtoDAsync"),
		sym0(l, &l.deviceSync, "hipDeviceSynchronize"),
		sym2(l, &l.memGetInfo, ">free >total", "hipMemGetInfo"),
	}
}

// open loads one candidate library; lastTry says whether a failure ends the
// search (earlier candidates are probes: their failure is not marked).
func open(name string, lastTry bool) (*lib, error) {
	sp := trace.Begin("dlopen", func() string { return trace.KV("path", name, "flags", "RTLD_NOW|RTLD_LOCAL") })
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		sp.EndStatus(-1, err.Error(), lastTry, nil)
	} else {
		sp.End(0, "OK", func() string { return "handle=" + trace.Hex(h) })
	}
	if err != nil {
		return nil, err
	}
	l := &lib{name: name, missing: map[string]string{}}
	var bad []string
	for _, sym := range l.symbols() {
		addr, err := purego.Dlsym(h, sym.name)
		if err != nil || addr == 0 {
			if v, ok := optionalSymbols[sym.name]; ok {
				l.missing[sym.name] = v
			} else {
				bad = append(bad, sym.name)
			}
			continue // an absent optional symbol stays nil, untraced
		}
		purego.RegisterFunc(sym.fn, addr)
		if sym.wrap != nil {
			sym.wrap()
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
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

func (l *lib) check(call string, code uint32) error {
	if code == errSuccess {
		return nil
	}
	return &Error{Call: call, Code: code, Name: cString(l.getErrorName(code)), Text: cString(l.getErrorString(code))}
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
