package cuda

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/binding"
	"p2patomics/rank/backend"
	"p2patomics/trace"
)

// This file is the one choke point between Go and libcuda.so.1: it opens the
// library, binds every entry point at the versioned name CUDA 13.0's cuda.h
// maps it to (its #define cuX cuX_v2 lines; docs/CUDA.md, Loading and errors), and turns every CUresult into a Go
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

	cuInit             func(flags uint32) status
	cuDriverGetVersion func(v *int32) status

	cuDeviceGetCount          func(n *int32) status
	cuDeviceGet               func(dev *int32, ordinal int32) status
	cuDeviceGetName           func(name *byte, n int32, dev int32) status
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) status
	cuDeviceGetUuid           func(u *cuUUID, dev int32) status
	cuDeviceTotalMem          func(b *uint64, dev int32) status
	cuDeviceCanAccessPeer     func(v *int32, dev, peer int32) status
	cuDeviceGetP2PAttribute   func(v *int32, attr int32, src, dst int32) status
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) status
	cuDevicePrimaryCtxRelease func(dev int32) status
	cuCtxSetCurrent           func(ctx uintptr) status
	cuCtxSynchronize          func() status

	cuMemGetInfo func(free, total *uint64) status
	cuMemAlloc   func(p *uint64, size uint64) status
	cuMemFree    func(p uint64) status

	cuMemGetAllocationGranularity  func(g *uint64, prop *memAllocationProp, option int32) status
	cuMemCreate                    func(h *uint64, size uint64, prop *memAllocationProp, flags uint64) status
	cuMemRelease                   func(h uint64) status
	cuMemAddressReserve            func(p *uint64, size, align, addr, flags uint64) status
	cuMemAddressFree               func(p, size uint64) status
	cuMemMap                       func(p, size, offset, h, flags uint64) status
	cuMemUnmap                     func(p, size uint64) status
	cuMemSetAccess                 func(p, size uint64, desc *memAccessDesc, count uint64) status
	cuMemExportToShareableHandle   func(fd *int32, h uint64, typ int32, flags uint64) status
	cuMemImportFromShareableHandle func(h *uint64, osHandle uintptr, typ int32) status
	cuMemGetHandleForAddressRange  func(fd *int32, p, size uint64, typ int32, flags uint64) status

	cuIpcGetMemHandle func(h *ipcMemHandle, p uint64) status
	// cuIpcOpenMemHandleRaw is cuIpcOpenMemHandle_v2 declared word by word;
	// call it only through ipcOpenMemHandle.
	cuIpcOpenMemHandleRaw func(pdptr *uint64, flags uint32, pad1, pad2, pad3, pad4 uint64,
		h0, h1, h2, h3, h4, h5, h6, h7 uint64) cuResult
	cuIpcCloseMemHandle func(p uint64) status

	cuModuleLoadDataEx  func(mod *uintptr, image unsafe.Pointer, n uint32, opts, vals uintptr) status
	cuModuleGetFunction func(f *uintptr, mod uintptr, name string) status
	cuModuleUnload      func(mod uintptr) status
	cuLaunchKernel      func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params, extra uintptr) status

	cuStreamCreate      func(s *uintptr, flags uint32) status
	cuStreamSynchronize func(s uintptr) status
	// cuStreamQuery is the watchdog's look at a stream (watch.go), bound
	// outside the trace and the injector: an observer, queried every 20 ms
	// of a long wait, that no planted fault may perturb.
	cuStreamQuery      func(s uintptr) cuResult
	cuStreamDestroy    func(s uintptr) status
	cuEventCreate      func(e *uintptr, flags uint32) status
	cuEventRecord      func(e, s uintptr) status
	cuEventDestroy     func(e uintptr) status
	cuEventElapsedTime func(ms *float32, start, end uintptr) status

	cuMemcpyDtoH      func(dst unsafe.Pointer, src, n uint64) status
	cuMemcpyHtoD      func(dst uint64, src unsafe.Pointer, n uint64) status
	cuMemcpyDtoDAsync func(dst, src, n uint64, stream uintptr) status
}

// status is what a bound entry point returns: the CUresult and the name of
// the symbol that returned it, so call sites name a symbol only in the table.
type status = binding.Status[cuResult]

// symbols is the binding table. The string before the names is the argSpec:
// what the trace records of each argument (trace.ArgSpec).
func (d *driver) symbols() []binding.Symbol {
	return []binding.Symbol{
		binding.Untraced(&d.cuGetErrorName, "cuGetErrorName"),
		binding.Untraced(&d.cuGetErrorString, "cuGetErrorString"),
		binding.Sym1(&d.cuInit, d.end, "flags:x", "cuInit"),
		binding.Sym1(&d.cuDriverGetVersion, d.end, ">version", "cuDriverGetVersion"),
		binding.Sym1(&d.cuDeviceGetCount, d.end, ">count", "cuDeviceGetCount"),
		binding.Sym2(&d.cuDeviceGet, d.end, ">device ordinal", "cuDeviceGet"),
		binding.Sym3(&d.cuDeviceGetName, d.end, ">name:s len dev", "cuDeviceGetName"),
		binding.Sym3(&d.cuDeviceGetAttribute, d.end, ">value attrib dev", "cuDeviceGetAttribute"),
		binding.Sym2(&d.cuDeviceGetUuid, d.end, ">uuid dev", "cuDeviceGetUuid_v2"),
		binding.Sym2(&d.cuDeviceTotalMem, d.end, ">bytes dev", "cuDeviceTotalMem_v2"),
		binding.Sym3(&d.cuDeviceCanAccessPeer, d.end, ">canAccessPeer dev peerDev", "cuDeviceCanAccessPeer"),
		binding.Sym4(&d.cuDeviceGetP2PAttribute, d.end, ">value attrib srcDevice dstDevice", "cuDeviceGetP2PAttribute"),
		binding.Sym2(&d.cuDevicePrimaryCtxRetain, d.end, ">pctx:x dev", "cuDevicePrimaryCtxRetain"),
		binding.Sym1(&d.cuDevicePrimaryCtxRelease, d.end, "dev", "cuDevicePrimaryCtxRelease_v2"),
		binding.Sym1(&d.cuCtxSetCurrent, d.end, "ctx:x", "cuCtxSetCurrent"),
		binding.Sym0(&d.cuCtxSynchronize, d.end, "cuCtxSynchronize"),
		binding.Sym2(&d.cuMemGetInfo, d.end, ">free >total", "cuMemGetInfo_v2"),
		binding.Sym2(&d.cuMemAlloc, d.end, ">dptr:x bytesize", "cuMemAlloc_v2"),
		binding.Sym1(&d.cuMemFree, d.end, "dptr:x", "cuMemFree_v2"),
		binding.Sym3(&d.cuMemGetAllocationGranularity, d.end, ">granularity prop option", "cuMemGetAllocationGranularity"),
		binding.Sym4(&d.cuMemCreate, d.end, ">handle:x size prop flags:x", "cuMemCreate"),
		binding.Sym1(&d.cuMemRelease, d.end, "handle:x", "cuMemRelease"),
		binding.Sym5(&d.cuMemAddressReserve, d.end, ">ptr:x size alignment addr:x flags:x", "cuMemAddressReserve"),
		binding.Sym2(&d.cuMemAddressFree, d.end, "ptr:x size", "cuMemAddressFree"),
		binding.Sym5(&d.cuMemMap, d.end, "ptr:x size offset handle:x flags:x", "cuMemMap"),
		binding.Sym2(&d.cuMemUnmap, d.end, "ptr:x size", "cuMemUnmap"),
		binding.Sym4(&d.cuMemSetAccess, d.end, "ptr:x size desc count", "cuMemSetAccess"),
		binding.Sym4(&d.cuMemExportToShareableHandle, d.end, ">fd handle:x handleType flags:x", "cuMemExportToShareableHandle"),
		binding.Sym3(&d.cuMemImportFromShareableHandle, d.end, ">handle:x osHandle shHandleType", "cuMemImportFromShareableHandle"),
		binding.Sym5(&d.cuMemGetHandleForAddressRange, d.end, ">fd dptr:x size handleType flags:x", "cuMemGetHandleForAddressRange"),
		binding.Sym2(&d.cuIpcGetMemHandle, d.end, ">handle dptr:x", "cuIpcGetMemHandle"),
		binding.Manual(&d.cuIpcOpenMemHandleRaw, "cuIpcOpenMemHandle_v2"), // traced and injected in ipcOpenMemHandle
		binding.Sym1(&d.cuIpcCloseMemHandle, d.end, "dptr:x", "cuIpcCloseMemHandle"),
		binding.Sym5(&d.cuModuleLoadDataEx, d.end, ">module:x image numOptions options:x optionValues:x", "cuModuleLoadDataEx"),
		binding.Sym3(&d.cuModuleGetFunction, d.end, ">hfunc:x hmod:x name", "cuModuleGetFunction"),
		binding.Sym1(&d.cuModuleUnload, d.end, "hmod:x", "cuModuleUnload"),
		binding.Launch(&d.cuLaunchKernel, d.end, "shmem", "params", "cuLaunchKernel"),
		binding.Sym2(&d.cuStreamCreate, d.end, ">stream:x flags:x", "cuStreamCreate"),
		binding.Sym1(&d.cuStreamSynchronize, d.end, "stream:x", "cuStreamSynchronize"),
		binding.Untraced(&d.cuStreamQuery, "cuStreamQuery"),
		binding.Sym1(&d.cuStreamDestroy, d.end, "stream:x", "cuStreamDestroy_v2"),
		binding.Sym2(&d.cuEventCreate, d.end, ">event:x flags:x", "cuEventCreate"),
		binding.Sym2(&d.cuEventRecord, d.end, "event:x stream:x", "cuEventRecord"),
		binding.Sym1(&d.cuEventDestroy, d.end, "event:x", "cuEventDestroy_v2"),
		// 13.0 headers map cuEventElapsedTime to _v2; older drivers only
		// have the plain name, with the same signature.
		binding.Sym3(&d.cuEventElapsedTime, d.end, ">ms start:x end:x", "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		binding.Sym3(&d.cuMemcpyDtoH, d.end, "dst srcDevice:x bytes", "cuMemcpyDtoH_v2"),
		binding.Sym3(&d.cuMemcpyHtoD, d.end, "dstDevice:x src bytes", "cuMemcpyHtoD_v2"),
		binding.Sym4(&d.cuMemcpyDtoDAsync, d.end, "dst:x src:x bytes stream:x", "cuMemcpyDtoDAsync_v2"),
	}
}

var (
	defaultOnce   sync.Once
	defaultDriver *driver
	defaultErr    error
)

// openDriver loads libcuda.so.1 once per process.
func openDriver() (*driver, error) {
	defaultOnce.Do(func() { defaultDriver, defaultErr = loadDriver(binding.Library(libName)) })
	return defaultDriver, defaultErr
}

// loadDriver dlopens path and binds every symbol. A library that does not
// load is an ErrNotSupported error whose text starts with the library name
// and carries dlerror's text; absent symbols are recorded, not fatal.
func loadDriver(path string) (*driver, error) {
	// dlerror is per thread: keep dlopen and its dlerror on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := binding.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL, "RTLD_NOW|RTLD_GLOBAL", true)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, path) {
			msg = path + ": " + msg
		}
		return nil, fmt.Errorf("%s: %w", msg, backend.ErrNotSupported)
	}
	d := &driver{path: path, handle: h, missing: map[string]error{}}
	table := d.symbols()
	var missing []string
	d.bound, missing = binding.Bind(h, table)
	for _, s := range table {
		if !slices.Contains(missing, s.Name()) {
			continue
		}
		d.missing[s.Name()] = fmt.Errorf("%s has no symbol %s: %w",
			path, strings.Join(s.Names, " or "), backend.ErrNotSupported)
		bindMissing(s.Raw)
		if s.Bind != nil {
			s.Bind(s.Name())
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
func (d *driver) check(st status) error {
	call, r := st.Call, st.Code
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
	const call = "cuIpcOpenMemHandle_v2"
	if st, skip := binding.Injected([]string{call}, call, d.end); skip {
		return 0, d.check(st)
	}
	sp := trace.Begin(call, func() string {
		return trace.KV("handle", fmt.Sprintf("%x", h[:]), "flags", trace.Hex(flags))
	})
	r := d.cuIpcOpenMemHandleRaw(&p, flags, 0, 0, 0, 0, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
	d.end(sp, r, func() string { return "pdptr=" + trace.Hex(p) })
	return p, d.check(status{Call: call, Code: r})
}
