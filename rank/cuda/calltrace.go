package cuda

import (
	"fmt"

	"p2patomics/trace"
)

// Every entry point bound in driver.go goes through the project's one trace
// point (package trace): loadDriver wraps each bound function value, so no
// call site can bypass it. The record carries the symbol name as bound
// (cuMemCreate, cuDeviceTotalMem_v2), the arguments its argSpec names, the
// CUresult with its name, and the duration. Off, a wrapped call costs one
// atomic load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: cuGetErrorName and cuGetErrorString, which only name a result
// for the trace and for errors (tracing them would put a lookup after every
// failure), and dlsym. cuIpcOpenMemHandle_v2 is traced in ipcOpenMemHandle,
// its one caller, where the handle is still one 64-byte value.

// symN builds the table entry of an entry point with N arguments: what to
// bind (fn), the names to try, and wrap, which puts the bound function
// behind the trace point under the name actually bound.

func sym0(d *driver, fn *func() cuResult, names ...string) symbol {
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap0(fn, name, d.end) }}
}

func sym1[A any](d *driver, fn *func(A) cuResult, spec string, names ...string) symbol {
	p := parseSpec(spec)
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap1(fn, name, p, d.end) }}
}

func sym2[A, B any](d *driver, fn *func(A, B) cuResult, spec string, names ...string) symbol {
	p := parseSpec(spec)
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap2(fn, name, p, d.end) }}
}

func sym3[A, B, C any](d *driver, fn *func(A, B, C) cuResult, spec string, names ...string) symbol {
	p := parseSpec(spec)
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap3(fn, name, p, d.end) }}
}

func sym4[A, B, C, D any](d *driver, fn *func(A, B, C, D) cuResult, spec string, names ...string) symbol {
	p := parseSpec(spec)
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap4(fn, name, p, d.end) }}
}

func sym5[A, B, C, D, E any](d *driver, fn *func(A, B, C, D, E) cuResult, spec string, names ...string) symbol {
	p := parseSpec(spec)
	return symbol{names: names, fn: fn, wrap: func(name string) { trace.Wrap5(fn, name, p, d.end) }}
}

// symLaunch is cuLaunchKernel's entry (11 arguments): grid and block as
// triples.
func symLaunch(d *driver, fn *func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params, extra uintptr) cuResult, names ...string) symbol {
	return symbol{names: names, fn: fn, wrap: func(name string) {
		f := *fn
		*fn = func(fu uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params, extra uintptr) cuResult {
			sp := trace.Begin(name, func() string {
				return trace.KV("f", trace.Hex(fu), "grid", dim3(gx, gy, gz), "block", dim3(bx, by, bz),
					"shmem", shmem, "stream", trace.Hex(stream), "params", trace.Hex(params), "extra", trace.Hex(extra))
			})
			r := f(fu, gx, gy, gz, bx, by, bz, shmem, stream, params, extra)
			d.end(sp, r, nil)
			return r
		}
	}}
}

func dim3(x, y, z uint32) string {
	return fmt.Sprintf("(%d,%d,%d)", x, y, z)
}

// symUntraced binds an entry point without the trace point (the error-name
// lookups, see above).
func symUntraced(fn any, names ...string) symbol { return symbol{names: names, fn: fn} }

// end closes a traced call: the CUresult and its name, and the outputs after
// a success. A failure inside a probe (d.probing) is recorded but not
// marked as an error. With tracing off sp is zero and end returns at once.
func (d *driver) end(sp trace.Span, r cuResult, out func() string) {
	if sp == (trace.Span{}) {
		return
	}
	if r == cudaSuccess {
		sp.End(0, "CUDA_SUCCESS", out)
		return
	}
	name := "symbol missing"
	if r != resultSymbolMissing {
		name = d.errorName(int(r))
	}
	sp.EndStatus(int64(r), name, d.probing.Load() == 0, nil)
}

// beginProbe marks the calls made until endProbe as probes: their failure
// is an answer (an attribute an older driver lacks, a peer grant that falls
// back to one device), so the trace records it without marking it as the
// failing call.
func (d *driver) beginProbe() { d.probing.Add(1) }

func (d *driver) endProbe() { d.probing.Add(-1) }
