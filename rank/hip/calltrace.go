package hip

import (
	"fmt"

	"p2patomics/trace"
)

// Every entry point bound in lib.go goes through the project's one trace
// point (package trace): open wraps each bound function value, so no call
// site can bypass it. The record carries the HIP function name, the
// arguments its argSpec names (lib.symbols), the hipError_t with the name
// hipGetErrorName gives it, and the duration. Off, a wrapped call costs one
// atomic load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: hipGetErrorName and hipGetErrorString, which only name a
// result for the trace and for errors, and dlsym. The optional
// hipGetDevicePropertiesR0600 stays nil where the runtime lacks it.

// symN builds the table entry of an entry point with N arguments: the name,
// the function variable to bind, and wrap, which puts the bound function
// behind the trace point.

func sym0(l *lib, fn *func() uint32, name string) symbol {
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap0(fn, name, l.end) }}
}

func sym1[A any](l *lib, fn *func(A) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap1(fn, name, p, l.end) }}
}

func sym2[A, B any](l *lib, fn *func(A, B) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap2(fn, name, p, l.end) }}
}

func sym3[A, B, C any](l *lib, fn *func(A, B, C) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap3(fn, name, p, l.end) }}
}

func sym4[A, B, C, D any](l *lib, fn *func(A, B, C, D) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap4(fn, name, p, l.end) }}
}

func sym5[A, B, C, D, E any](l *lib, fn *func(A, B, C, D, E) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap5(fn, name, p, l.end) }}
}

func sym8[A, B, C, D, E, F, G, H any](l *lib, fn *func(A, B, C, D, E, F, G, H) uint32, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() { trace.Wrap8(fn, name, p, l.end) }}
}

// symLaunch is hipModuleLaunchKernel's entry (11 arguments): grid and block
// as triples.
func symLaunch(l *lib, fn *func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params uintptr, extra uintptr) uint32, name string) symbol {
	return symbol{name: name, fn: fn, wrap: func() {
		f := *fn
		*fn = func(fu uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params uintptr, extra uintptr) uint32 {
			sp := trace.Begin(name, func() string {
				return trace.KV("f", trace.Hex(fu), "grid", fmt.Sprintf("(%d,%d,%d)", gx, gy, gz),
					"block", fmt.Sprintf("(%d,%d,%d)", bx, by, bz), "sharedMemBytes", shared,
					"stream", trace.Hex(stream), "kernelParams", trace.Hex(params), "extra", trace.Hex(extra))
			})
			st := f(fu, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
			l.end(sp, st, nil)
			return st
		}
	}}
}

// untraced binds an entry point without the trace point.
func untraced(fn any, name string) symbol { return symbol{name: name, fn: fn} }

// end closes a traced call: the hipError_t and its name, and the outputs
// after a success. A failure inside a probe (l.probing) is recorded but not
// marked as an error. With tracing off sp is zero and end returns at once.
func (l *lib) end(sp trace.Span, code uint32, out func() string) {
	if sp == (trace.Span{}) {
		return
	}
	if code == errSuccess {
		sp.End(0, "hipSuccess", out)
		return
	}
	sp.EndStatus(int64(code), l.errorName(code), l.probing.Load() == 0, nil)
}

// errorName is hipGetErrorName's text (an untraced call), else a number.
func (l *lib) errorName(code uint32) string {
	if l.getErrorName != nil {
		if n := cString(l.getErrorName(code)); n != "" {
			return n
		}
	}
	return fmt.Sprintf("hipError %d", code)
}

// beginProbe marks the calls made until endProbe as probes: their failure is
// an answer (a convention or a struct revision this runtime does not have),
// so the trace records it without marking it as the failing call.
func (l *lib) beginProbe() { l.probing.Add(1) }

func (l *lib) endProbe() { l.probing.Add(-1) }
