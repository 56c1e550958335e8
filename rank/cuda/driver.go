package cuda

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
	"p2patomics/trace"
)

// This file is the one choke point between Go and libcuda.so.1: it opens the
// library, binds every entry point at the versioned name CUDA 13.0's cuda.h
// maps it to (nvidia-cuda.md §2.2–§2.3), and turns every CUresult into a Go
// error. Nothing else in the package calls purego.

// libName is the driver library. Never "libcuda.so": toolkits ship a link-time
// stub of that name whose every call fails with CUDA_ERROR_STUB_LIBRARY (34).
const libName = "libcuda.so.1"

// cuResult is CUresult, a C enum (int-sized).
type cuResult int32

// resultSymbolMissing is what the stand-in for an absent symbol returns. It
// is not a CUresult; check turns it into an ErrNotSupported naming the symbol.
const resultSymbolMissing cuResult = -0x7ffffff0

// Error is a CUresult other than CUDA_SUCCESS, with the call that returned it
// and the name cuGetErrorName gives it.
type Error struct {
	Call   string // the entry point, e.g. "cuMemCreate"
	Code   int    // the CUresult
	Name   string // e.g. "CUDA_ERROR_INVALID_VALUE"
	Detail string // optional: cuGetErrorString text, a JIT log, an argument
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is makes errors.Is(err, backend.ErrNotSupported) true for
// CUDA_ERROR_NOT_SUPPORTED, so the harness turns it into a skip.
func (e *Error) Is(target error) bool {
	return target == backend.ErrNotSupported && e.Code == cudaErrorNotSupported
}

// driver holds the library handle and one Go function per entry point.
// Every field is non-nil after load: a symbol the library lacks is bound to
// a stand-in that returns resultSymbolMissing, so a call to it becomes an
// ErrNotSupported error naming the symbol instead of a panic.
type driver struct {
	path    string
	handle  uintptr
	probing atomic.Int32      // > 0 inside beginProbe/endProbe
	bound   map[string]string // wanted name -> symbol actually bound
	missing map[string]error  // wanted name -> why it is absent

	cuGetErrorName   func(code int32, pstr **byte) cuResult
	cuGetErrorString func(code int32, pstr **byte) cuResult

	cuInit             func(flags uint32) cuResult
	cuDriverGetVersion func(v *int32) cuResult

	cuDeviceGetCount          func(n *int32) cuResult
	cuDeviceGet               func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) cuResult
	cuDeviceGetUuid           func(u *cuUUID, dev int32) cuResult
	cuDeviceTotalMem          func(b *uint64, dev int32) cuResult
	cuDeviceCanAccessPeer     func(v *int32, dev, peer int32) cuResult
	cuDeviceGetP2PAttribute   func(v *int32, attr int32, src, dst int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease func(dev int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuCtxSynchronize          func() cuResult

	cuMemGetInfo func(free, total *uint64) cuResult
	cuMemAlloc   func(p *uint64, size uint64) cuResult
	cuMemFree    func(p uint64) cuResult

	cuMemGetAllocationGranularity  func(g *uint64, prop *memAllocationProp, option int32) cuResult
	cuMemCreate                    func(h *uint64, size uint64, prop *memAllocationProp, flags uint64) cuResult
	cuMemRelease                   func(h uint64) cuResult
	cuMemAddressReserve            func(p *uint64, size, align, addr, flags uint64) cuResult
	cuMemAddressFree               func(p, size uint64) cuResult
	cuMemMap                       func(p, size, offset, h, flags uint64) cuResult
	cuMemUnmap                     func(p, size uint64) cuResult
	cuMemSetAccess                 func(p, size uint64, desc *memAccessDesc, count uint64) cuResult
	cuMemExportToShareableHandle   func(fd *int32, h uint64, typ int32, flags uint64) cuResult
	cuMemImportFromShareableHandle func(h *uint64, osHandle uintptr, typ int32) cuResult
	cuMemGetHandleForAddressRange  func(fd *int32, p, size uint64, typ int32, flags uint64) cuResult

	cuIpcGetMemHandle func(h *ipcMemHandle, p uint64) cuResult
	// cuIpcOpenMemHandleRaw is cuIpcOpenMemHandle_v2 declared word by word;
	// call it only through ipcOpenMemHandle.
	cuIpcOpenMemHandleRaw func(pdptr *uint64, flags uint32, pad1, pad2, pad3, pad4 uint64,
		h0, h1, h2, h3, h4, h5, h6, h7 uint64) cuResult
	cuIpcCloseMemHandle func(p uint64) cuResult

	cuModuleLoadDataEx  func(mod *uintptr, image unsafe.Pointer, n uint32, opts, vals uintptr) cuResult
	cuModuleGetFunction func(f *uintptr, mod uintptr, name string) cuResult
	cuModuleUnload      func(mod uintptr) cuResult
	cuLaunchKernel      func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params, extra uintptr) cuResult

	cuStreamCreate      func(s *uintptr, flags uint32) cuResult
	cuStreamSynchronize func(s uintptr) cuResult
	cuStreamDestroy     func(s uintptr) cuResult
	cuEventCreate       func(e *uintptr, flags uint32) cuResult
	cuEventRecord       func(e, s uintptr) cuResult
	cuEventDestroy      func(e uintptr) cuResult
	cuEventElapsedTime  func(ms *float32, start, end uintptr) cuResult

	cuMemcpyDtoH      func(dst unsafe.Pointer, src, n uint64) cuResult
	cuMemcpyHtoD      func(dst uint64, src unsafe.Pointer, n uint64) cuResult
	cuMemcpyDtoDAsync func(dst, src, n uint64, stream uintptr) cuResult
}

// symbol is one entry point: the names to try in order (the versioned one
// first; checked calls use the first), the Go function variable to bind, and
// wrap, which puts the bound function behind the trace point (calltrace.go;
// nil for the few lookups left untraced).
type symbol struct {
	names []string
	fn    any
	wrap  func(boundName string)
}

// symbols is the binding table. The string before the names is the argSpec:
// what the trace records of each argument (argspec.go).
func (d *driver) symbols() []symbol {
	return []symbol{
		symUntraced(&d.cuGetErrorName, "cuGetErrorName"),
		symUntraced(&d.cuGetErrorString, "cuGetErrorString"),
		sym1(d, &d.cuInit, "flags:x", "cuInit"),
		sym1(d, &d.cuDriverGetVersion, ">version", "cuDriverGetVersion"),
		sym1(d, &d.cuDeviceGetCount, ">count", "cuDeviceGetCount"),
		sym2(d, &d.cuDeviceGet, ">device ordinal", "cuDeviceGet"),
		sym3(d, &d.cuDeviceGetName, ">name:s len dev", "cuDeviceGetName"),
		sym3(d, &d.cuDeviceGetAttribute, ">value attrib dev", "cuDeviceGetAttribute"),
		sym2(d, &d.cuDeviceGetUuid, ">uuid dev", "cuDeviceGetUuid_v2"),
		sym2(d, &d.cuDeviceTotalMem, ">bytes dev", "cuDeviceTotalMem_v2"),
		sym3(d, &d.cuDeviceCanAccessPeer, ">canAccessPeer dev peerDev", "cuDeviceCanAccessPeer"),
		sym4(d, &d.cuDeviceGetP2PAttribute, ">value attrib srcDevice dstDevice", "cuDeviceGetP2PAttribute"),
		sym2(d, &d.cuDevicePrimaryCtxRetain, ">pctx:x dev", "cuDevicePrimaryCtxRetain"),
		sym1(d, &d.cuDevicePrimaryCtxRelease, "dev", "cuDevicePrimaryCtxRelease_v2"),
		sym1(d, &d.cuCtxSetCurrent, "ctx:x", "cuCtxSetCurrent"),
		sym0(d, &d.cuCtxSynchronize, "cuCtxSynchronize"),
		sym2(d, &d.cuMemGetInfo, ">free >total", "cuMemGetInfo_v2"),
		sym2(d, &d.cuMemAlloc, ">dptr:x bytesize", "cuMemAlloc_v2"),
		sym1(d, &d.cuMemFree, "dptr:x", "cuMemFree_v2"),
		sym3(d, &d.cuMemGetAllocationGranularity, ">granularity prop option", "cuMemGetAllocationGranularity"),
		sym4(d, &d.cuMemCreate, ">handle:x size prop flags:x", "cuMemCreate"),
		sym1(d, &d.cuMemRelease, "handle:x", "cuMemRelease"),
		sym5(d, &d.cuMemAddressReserve, ">ptr:x size alignment addr:x flags:x", "cuMemAddressReserve"),
		sym2(d, &d.cuMemAddressFree, "ptr:x size", "cuMemAddressFree"),
		sym5(d, &d.cuMemMap, "ptr:x size offset handle:x flags:x", "cuMemMap"),
		sym2(d, &d.cuMemUnmap, "ptr:x size", "cuMemUnmap"),
		sym4(d, &d.cuMemSetAccess, "ptr:x size desc count", "cuMemSetAccess"),
		sym4(d, &d.cuMemExportToShareableHandle, ">fd handle:x handleType flags:x", "cuMemExportToShareableHandle"),
		sym3(d, &d.cuMemImportFromShareableHandle, ">handle:x osHandle shHandleType", "cuMemImportFromShareableHandle"),
		sym5(d, &d.cuMemGetHandleForAddressRange, ">fd dptr:x size handleType flags:x", "cuMemGetHandleForAddressRange"),
		sym2(d, &d.cuIpcGetMemHandle, ">handle dptr:x", "cuIpcGetMemHandle"),
		symUntraced(&d.cuIpcOpenMemHandleRaw, "cuIpcOpenMemHandle_v2"), // traced in ipcOpenMemHandle
		sym1(d, &d.cuIpcCloseMemHandle, "dptr:x", "cuIpcCloseMemHandle"),
		sym5(d, &d.cuModuleLoadDataEx, ">module:x image numOptions options:x optionValues:x", "cuModuleLoadDataEx"),
		sym3(d, &d.cuModuleGetFunction, ">hfunc:x hmod:x name", "cuModuleGetFunction"),
		sym1(d, &d.cuModuleUnload, "hmod:x", "cuModuleUnload"),
		symLaunch(d, &d.cuLaunchKernel, "cuLaunchKernel"),
		sym2(d, &d.cuStreamCreate, ">stream:x flags:x", "cuStreamCreate"),
		sym1(d, &d.cuStreamSynchronize, "stream:x", "cuStreamSynchronize"),
		sym1(d, &d.cuStreamDestroy, "stream:x", "cuStreamDestroy_v2"),
		sym2(d, &d.cuEventCreate, ">event:x flags:x", "cuEventCreate"),
		sym2(d, &d.cuEventRecord, "event:x stream:x", "cuEventRecord"),
		sym1(d, &d.cuEventDestroy, "event:x", "cuEventDestroy_v2"),
		// 13.0 headers map cuEventElapsedTime to _v2; older drivers only
		// have the plain name, with the same signature.
		sym3(d, &d.cuEventElapsedTime, ">ms start:x end:x", "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		sym3(d, &d.cuMemcpyDtoH, "dst srcDevice:x bytes", "cuMemcpyDtoH_v2"),
		sym3(d, &d.cuMemcpyHtoD, "dstDevice:x src bytes", "cuMemcpyHtoD_v2"),
		sym4(d, &d.cuMemcpyDtoDAsync, "dst:x src:x bytes stream:x", "cuMemcpyDtoDAsync_v2"),
	}
}

var (
	defaultOnce   sync.Once
	defaultDriver *driver
	defaultErr    error
)

// openDriver loads libcuda.so.1 once per process.
func openDriver() (*driver, error) {
	defaultOnce.Do(func() { defaultDriver, defaultErr = loadDriver(libName) })
	return defaultDriver, defaultErr
}

// loadDriver dlopens path and binds every symbol. A library that does not
// load is an ErrNotSupported error whose text starts with the library name
// and carries dlerror's text; absent symbols are recorded, not fatal.
func loadDriver(path string) (*driver, error) {
	// dlerror is per thread: keep dlopen and its dlerror on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sp := trace.Begin("dlopen", func() string { return trace.KV("path", path, "flags", "RTLD_NOW|RTLD_GLOBAL") })
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	sp.EndErr(err, func() string { return "handle=" + trace.Hex(h) })
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, path) {
			msg = path + ": " + msg
		}
		return nil, fmt.Errorf("%s: %w", msg, backend.ErrNotSupported)
	}
	d := &driver{path: path, handle: h, bound: map[string]string{}, missing: map[string]error{}}
	for _, s := range d.symbols() {
		var lastErr error
		for _, name := range s.names {
			addr, err := purego.Dlsym(h, name)
			if err != nil || addr == 0 {
				lastErr = err
				continue
			}
			purego.RegisterFunc(s.fn, addr)
			d.bound[s.names[0]] = name
			lastErr = nil
			break
		}
		if lastErr != nil || d.bound[s.names[0]] == "" {
			d.missing[s.names[0]] = fmt.Errorf("%s has no symbol %s (%v): %w",
				path, strings.Join(s.names, " or "), lastErr, backend.ErrNotSupported)
			bindMissing(s.fn)
		}
		if s.wrap != nil {
			name := d.bound[s.names[0]]
			if name == "" {
				name = s.names[0]
			}
			s.wrap(name)
		}
	}
	return d, nil
}

// bindMissing points fn (a *func(...) cuResult) at a stand-in returning
// resultSymbolMissing.
func bindMissing(fn any) {
	v := reflect.ValueOf(fn).Elem()
	ret := []reflect.Value{reflect.ValueOf(resultSymbolMissing)}
	v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return ret }))
}

// has reports whether the library exports the entry point.
func (d *driver) has(name string) bool { return d.bound[name] != "" }

// check turns the result of call into an error: nil for CUDA_SUCCESS, an
// ErrNotSupported naming the symbol for an absent one, a *backend.Fault for
// a sticky error (the context is gone; the rank reports a GPU fault), and
// an *Error otherwise.
func (d *driver) check(call string, r cuResult) error {
	switch {
	case r == cudaSuccess:
		return nil
	case r == resultSymbolMissing:
		if err := d.missing[call]; err != nil {
			return err
		}
		return backend.NotSupportedf("%s has no symbol %s", d.path, call)
	}
	code := int(r)
	name := d.errorName(code)
	if stickyCodes[code] {
		return &backend.Fault{Vendor: "nvidia", Kind: "gpu", Code: int64(code), Name: name,
			Reason: call + ": " + d.errorString(code)}
	}
	return &Error{Call: call, Code: code, Name: name}
}

// errorName is cuGetErrorName's text, else the built-in table's.
func (d *driver) errorName(code int) string {
	if d != nil {
		var p *byte
		if d.cuGetErrorName != nil && d.cuGetErrorName(int32(code), &p) == cudaSuccess && p != nil {
			return cString(p)
		}
	}
	return fallbackErrorName(code)
}

func (d *driver) errorString(code int) string {
	if d != nil {
		var p *byte
		if d.cuGetErrorString != nil && d.cuGetErrorString(int32(code), &p) == cudaSuccess && p != nil {
			return cString(p)
		}
	}
	return fallbackErrorName(code)
}

func fallbackErrorName(code int) string {
	if n, ok := errorNames[code]; ok {
		return n
	}
	return fmt.Sprintf("CUDA_ERROR_%d", code)
}

// cString copies a NUL-terminated C string owned by the driver.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 && n < 1<<16 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// ipcHandleWords splits a 64-byte CUipcMemHandle into the eight
// little-endian words the SysV ABI puts on the stack when the struct is
// passed by value.
func ipcHandleWords(h ipcMemHandle) [8]uint64 {
	var w [8]uint64
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(h[8*i:])
	}
	return w
}

// ipcOpenMemHandle calls
//
//	CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
//
// whose second argument is a 64-byte struct passed BY VALUE. purego is not
// trusted with structs by value, so the call is spelled in words. Under the
// x86-64 SysV ABI a struct larger than 16 bytes is class MEMORY: it does not
// take an integer register, and the caller copies it onto the stack in the
// argument area, in field order. The remaining INTEGER arguments fill
// registers left to right, so pdptr goes in RDI and Flags in RSI. The Go
// declaration therefore reads (pdptr, flags, pad1..pad4, h0..h7): pdptr→RDI,
// flags→RSI, four zero pads occupy RDX, RCX, R8, R9 (the callee never reads
// them), and h0..h7 spill to the stack at 0(RSP+8)…56 — exactly where the
// struct copy would be. This is amd64-only (the package builds on linux/amd64
// in practice; arm64 passes large structs by reference instead).
func (d *driver) ipcOpenMemHandle(h ipcMemHandle, flags uint32) (uint64, error) {
	if runtime.GOARCH != "amd64" {
		return 0, backend.NotSupportedf("cuIpcOpenMemHandle_v2 by-value handle packing is implemented for amd64 only, not %s", runtime.GOARCH)
	}
	w := ipcHandleWords(h)
	var p uint64
	sp := trace.Begin("cuIpcOpenMemHandle_v2", func() string {
		return trace.KV("handle", fmt.Sprintf("%x", h[:]), "flags", trace.Hex(flags))
	})
	r := d.cuIpcOpenMemHandleRaw(&p, flags, 0, 0, 0, 0, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
	d.end(sp, r, func() string { return "pdptr=" + trace.Hex(p) })
	return p, d.check("cuIpcOpenMemHandle_v2", r)
}
