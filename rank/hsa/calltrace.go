package hsa

import "p2patomics/trace"

// Every entry point bound in lib.go goes through the project's one trace
// point (package trace): the table's entries are internal/binding's SymN,
// ValueN and Void2, which open binds and wraps, so no call site can bypass
// it. The record carries the HSA function name, the
// arguments its argSpec names (lib.symbols), the hsa_status_t with its name
// (or, for the signal and queue-index functions, which return a value, that
// value after "; "), and the duration. Off, a wrapped call costs one atomic
// load and one compare more than the bare call and never allocates
// (TestTraceOffZeroAllocs).
//
// Not traced: hsa_status_string, which only words a status for errors, and
// dlsym. Optional symbols the runtime lacks stay nil (needVmem gates them).

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
