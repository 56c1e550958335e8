package trace

// Wrap0 … Wrap8 put a bound C function value behind the trace point: each
// replaces *fn with a function that opens a span under name, records the
// inputs its ArgSpec names (formatted only while tracing is on), calls the
// original, and hands the result and the outputs to end, which names the
// result the vendor's way (CUresult, hsa_status_t, hipError_t). Every vendor
// binding wraps its symbol table with these right after dlsym, so no call
// site can bypass the trace.

// When tracing is off a wrapped call is one atomic load and a branch more
// than the bare call: no span, no closure, no allocation.

// Ender closes a span with a vendor result.
type Ender[R any] func(sp Span, r R, out func() string)

func Wrap0[R any](fn *func() R, name string, end Ender[R]) {
	f := *fn
	*fn = func() R {
		if !enabled.Load() {
			return f()
		}
		sp := Begin(name, nil)
		r := f()
		end(sp, r, nil)
		return r
	}
}

func Wrap1[A, R any](fn *func(A) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A) R {
		if !enabled.Load() {
			return f(a)
		}
		sp := Begin(name, func() string { return p.Format(false, a) })
		r := f(a)
		end(sp, r, func() string { return p.Format(true, a) })
		return r
	}
}

func Wrap2[A, B, R any](fn *func(A, B) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B) R {
		if !enabled.Load() {
			return f(a, b)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b) })
		r := f(a, b)
		end(sp, r, func() string { return p.Format(true, a, b) })
		return r
	}
}

func Wrap3[A, B, C, R any](fn *func(A, B, C) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B, c C) R {
		if !enabled.Load() {
			return f(a, b, c)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b, c) })
		r := f(a, b, c)
		end(sp, r, func() string { return p.Format(true, a, b, c) })
		return r
	}
}

func Wrap4[A, B, C, D, R any](fn *func(A, B, C, D) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B, c C, d D) R {
		if !enabled.Load() {
			return f(a, b, c, d)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b, c, d) })
		r := f(a, b, c, d)
		end(sp, r, func() string { return p.Format(true, a, b, c, d) })
		return r
	}
}

func Wrap5[A, B, C, D, E, R any](fn *func(A, B, C, D, E) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B, c C, d D, e E) R {
		if !enabled.Load() {
			return f(a, b, c, d, e)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b, c, d, e) })
		r := f(a, b, c, d, e)
		end(sp, r, func() string { return p.Format(true, a, b, c, d, e) })
		return r
	}
}

func Wrap8[A, B, C, D, E, F, G, H, R any](fn *func(A, B, C, D, E, F, G, H) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B, c C, d D, e E, f6 F, g G, h H) R {
		if !enabled.Load() {
			return f(a, b, c, d, e, f6, g, h)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b, c, d, e, f6, g, h) })
		r := f(a, b, c, d, e, f6, g, h)
		end(sp, r, func() string { return p.Format(true, a, b, c, d, e, f6, g, h) })
		return r
	}
}

// Wrap10 is Wrap8 for ten arguments (hsa_amd_memory_async_copy_on_engine).
func Wrap10[A, B, C, D, E, F, G, H, I, J, R any](fn *func(A, B, C, D, E, F, G, H, I, J) R, name string, p ArgSpec, end Ender[R]) {
	f := *fn
	*fn = func(a A, b B, c C, d D, e E, f6 F, g G, h H, i I, j J) R {
		if !enabled.Load() {
			return f(a, b, c, d, e, f6, g, h, i, j)
		}
		sp := Begin(name, func() string { return p.Format(false, a, b, c, d, e, f6, g, h, i, j) })
		r := f(a, b, c, d, e, f6, g, h, i, j)
		end(sp, r, func() string { return p.Format(true, a, b, c, d, e, f6, g, h, i, j) })
		return r
	}
}
