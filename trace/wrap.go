package trace

// go generate ./trace runs the one generator that writes internal/binding's
// arities too, so Wrap and Sym change together.
//
//go:generate go run ../internal/binding/genarity -root ..

// Wrap0 … Wrap10 (generated into zz_wrap.go by internal/binding/genarity,
// one template for every arity) put a bound C function value behind the
// trace point: each replaces *fn with a function that opens a span under name, records the
// inputs its ArgSpec names (formatted only while tracing is on), calls the
// original, and hands the result and the outputs to end, which names the
// result the vendor's way (CUresult, hsa_status_t, hipError_t). Every vendor
// binding wraps its symbol table with these right after dlsym, so no call
// site can bypass the trace.

// When tracing is off a wrapped call is one atomic load and a branch more
// than the bare call: no span, no closure, no allocation.

// Ender closes a span with a vendor result.
type Ender[R any] func(sp Span, r R, out func() string)
