package hsa

import (
	"fmt"

	"p2patomics/trace"
)

// Every entry point bound in lib.go goes through the project's one trace
// point (package trace): open wraps each bound function value, so no call
// site can bypass it. The record carries the HSA function name, the
// arguments its argSpec names (lib.symbols), the hsa_status_t with its name
// (or, for the signal and queue-index functions, which return a value, that
// value after "; "), and the duration. Off, a wrapped call costs one atomic
// load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: hsa_status_string, which only words a status for errors, and
// dlsym. Optional symbols the runtime lacks stay nil (needVmem gates them).

// symN builds the table entry of a status-returning entry point with N
// arguments: the name, the function variable to bind, and wrap, which puts
// the bound function behind the trace point.

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

// value1, value2 and value5 are for the functions that return a value, not
// a status (signal loads and waits, queue indices): the record's code is 0
// and the value follows the inputs as "; returned=N".

func value1[A any, R int64 | uint64](fn *func(A) R, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() {
		f := *fn
		*fn = func(a A) R {
			sp := trace.Begin(name, func() string { return p.Format(false, a) })
			v := f(a)
			sp.End(0, "", func() string { return "returned=" + itoa(v) })
			return v
		}
	}}
}

func value2[A, B any, R int64 | uint64](fn *func(A, B) R, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() {
		f := *fn
		*fn = func(a A, b B) R {
			sp := trace.Begin(name, func() string { return p.Format(false, a, b) })
			v := f(a, b)
			sp.End(0, "", func() string { return "returned=" + itoa(v) })
			return v
		}
	}}
}

func value5[A, B, C, D, E any, R int64 | uint64](fn *func(A, B, C, D, E) R, spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() {
		f := *fn
		*fn = func(a A, b B, c C, d D, e E) R {
			sp := trace.Begin(name, func() string { return p.Format(false, a, b, c, d, e) })
			v := f(a, b, c, d, e)
			sp.End(0, "", func() string { return "returned=" + itoa(v) })
			return v
		}
	}}
}

// void2 is for hsa_signal_store_* (no result).
func void2[A, B any](fn *func(A, B), spec, name string) symbol {
	p := parseSpec(spec)
	return symbol{name: name, fn: fn, wrap: func() {
		f := *fn
		*fn = func(a A, b B) {
			sp := trace.Begin(name, func() string { return p.Format(false, a, b) })
			f(a, b)
			sp.End(0, "", nil)
		}
	}}
}

// untraced binds an entry point without the trace point.
func untraced(fn any, name string) symbol { return symbol{name: name, fn: fn} }

func itoa[R int64 | uint64](v R) string { return fmt.Sprint(v) }

// end closes a traced call: the status and its name, and the outputs after
// a success. HSA_STATUS_INFO_BREAK (an iteration stopped by its callback) is
// not a failure; neither is a failure inside a probe (l.probing). With
// tracing off sp is zero and end returns at once.
func (l *lib) end(sp trace.Span, st uint32, out func() string) {
	if sp == (trace.Span{}) {
		return
	}
	ok := st == statusSuccess || st == statusInfoBreak
	if !ok {
		out = nil
	}
	sp.EndStatus(int64(st), statusName(st), !ok && l.probing.Load() == 0, out)
}

// beginProbe marks the calls made until endProbe as probes: their failure is
// an answer (an attribute this runtime does not report), so the trace
// records it without marking it as the failing call.
func (l *lib) beginProbe() { l.probing.Add(1) }

func (l *lib) endProbe() { l.probing.Add(-1) }
