package cuda

import "p2patomics/trace"

// Every entry point bound in driver.go goes through the project's one trace
// point (package trace): the table's entries are internal/binding's SymN,
// which loadDriver binds and wraps, so no call site can bypass it. The record carries the symbol name as bound
// (cuMemCreate, cuDeviceTotalMem_v2), the arguments its argSpec names, the
// CUresult with its name, and the duration. Off, a wrapped call costs one
// atomic load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: cuGetErrorName and cuGetErrorString, which only name a result
// for the trace and for errors (tracing them would put a lookup after every
// failure), cuStreamQuery, the watchdog's look at a stream every 20 ms of a
// long wait (watch.go: an observer no planted fault may perturb), and dlsym. cuIpcOpenMemHandle_v2 is traced in ipcOpenMemHandle,
// its one caller, where the handle is still one 64-byte value.

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
