package hip

import (
	"fmt"

	"p2patomics/trace"
)

// Every entry point bound in lib.go goes through the project's one trace
// point (package trace): the table's entries are internal/binding's SymN,
// which open binds and wraps, so no call site can bypass it. The record carries the HIP function name, the
// arguments its argSpec names (lib.symbols), the hipError_t with the name
// hipGetErrorName gives it, and the duration. Off, a wrapped call costs one
// atomic load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: hipGetErrorName and hipGetErrorString, which only name a
// result for the trace and for errors, and dlsym. The optional
// hipGetDevicePropertiesR0600 stays nil where the runtime lacks it.

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
