// Package trace records every call a rank makes into a vendor library or the
// kernel (CUDA, HSA, HIP bindings; memfd, mmap, sendmsg and kernel launches on
// the host backend) into one bounded ring, so that a failing case arrives with
// the exact call sequence, arguments, result codes and durations.
//
// A vendor binding never writes a call site: it wraps each function value
// it binds once, at load (WrapN with the symbol's ArgSpec and an Ender that
// names the result), so no call can bypass the trace. Calls that are not a
// bound symbol trace themselves, as rank/cuda's dlopen does:
//
//	sp := trace.Begin("dlopen", func() string { return trace.KV("path", path, "flags", "RTLD_NOW|RTLD_GLOBAL") })
//	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
//	sp.EndErr(err, func() string { return "handle=" + trace.Hex(h) })
//
// When tracing is off, Begin is one atomic load and returns a zero Span, End
// is one compare, neither allocates, and neither calls time.Now or the
// argument closures. When it is on, the input arguments are formatted at
// Begin (so a call that never returns, a crash or a hang, is still in the
// ring with its arguments, marked in flight) and the outputs at End.
//
// The ring has a fixed number of fixed-size slots (Slots × SlotSize bytes) and
// overwrites the oldest record. By default it lives in process memory; a rank
// that was handed a memfd from CreateShared calls AttachShared so that the
// ring lives in memory the parent can still read (ReadShared) after the rank
// was killed or crashed.
package trace

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Record is one traced call.
type Record struct {
	Seq      uint64        `json:"seq"`   // 1, 2, ... per process; gaps mean overwritten records
	Start    time.Time     `json:"start"` // wall clock at Begin
	Dur      time.Duration `json:"dur"`   // Begin to End; for an in-flight call, Begin to the snapshot
	Name     string        `json:"name"`
	Args     string        `json:"args,omitempty"` // "k=v, k=v" inputs, then "; " and outputs
	Code     int64         `json:"code"`
	CodeName string        `json:"code_name,omitempty"`
	Err      bool          `json:"err,omitempty"`
	InFlight bool          `json:"in_flight,omitempty"` // Begin without End: crashed, hung, or still running
}

var enabled atomic.Bool

// On turns tracing on for this process.
func On() { enabled.Store(true) }

// Off turns tracing off; records already in the ring stay.
func Off() { enabled.Store(false) }

// Span is an open call. The zero Span (tracing off) makes End a no-op.
type Span struct {
	seq   uint64
	name  string
	start time.Time
}

// Begin opens a call record. args formats the input arguments and is called
// only when tracing is on; it may be nil.
func Begin(name string, args func() string) Span {
	if !enabled.Load() {
		return Span{}
	}
	return begin(name, args)
}

// End closes the call with a result code and its name; a non-zero code is
// an error. out formats output arguments (returned handles, pointers) and is
// called only when tracing is on; it may be nil.
func (s Span) End(code int64, codeName string, out func() string) {
	if s.seq == 0 {
		return
	}
	s.end(code, codeName, code != 0, out)
}

// EndStatus is End with an explicit error flag, for APIs where a non-zero
// code is not a failure (HSA_STATUS_INFO_BREAK) or where a failure is
// expected and should not be marked (a version probe).
func (s Span) EndStatus(code int64, codeName string, failed bool, out func() string) {
	if s.seq == 0 {
		return
	}
	s.end(code, codeName, failed, out)
}

// EndErr closes a call that reports a Go error (host backend syscalls): nil
// is code 0 "OK"; a syscall.Errno keeps its number and name (EBADF); any
// other error is code -1 with the error text as the name.
func (s Span) EndErr(err error, out func() string) {
	if s.seq == 0 {
		return
	}
	code, name := errCode(err)
	s.end(code, name, err != nil, out)
}

// ring is the process's single ring; its storage is either a heap slice or
// a shared mapping (AttachShared).
var ring struct {
	mu      sync.Mutex
	mem     []byte // headerSize + Slots*SlotSize
	next    uint64 // last sequence number handed out
	resetAt uint64 // spans begun at or before this were dropped by Reset
}

func init() {
	ring.mem = make([]byte, SharedSize)
	initHeader(ring.mem)
}

func begin(name string, args func() string) Span {
	var a string
	if args != nil {
		a = args()
	}
	start := time.Now()
	ring.mu.Lock()
	ring.next++
	seq := ring.next
	writeSlot(ring.mem, seq, start.UnixNano(), 0, 0, name, a, "", flagInFlight)
	putSeq(ring.mem, seq)
	ring.mu.Unlock()
	return Span{seq: seq, name: name, start: start}
}

func (s Span) end(code int64, codeName string, failed bool, out func() string) {
	d := time.Since(s.start)
	var o string
	if out != nil {
		o = out()
	}
	var flags uint8
	if failed {
		flags |= flagErr
	}
	ring.mu.Lock()
	defer ring.mu.Unlock()
	if s.seq <= ring.resetAt {
		return
	}
	slot := slotOf(ring.mem, s.seq)
	if slotSeq(slot) == s.seq {
		finishSlot(slot, int64(d), code, codeName, o, flags)
		return
	}
	// The ring wrapped while this call was in flight (a long blocking call
	// while other goroutines traced thousands of calls): append its result
	// as a new record that names the original one.
	ring.next++
	a := "begun as #" + strconv.FormatUint(s.seq, 10)
	if o != "" {
		a += "; " + o
	}
	writeSlot(ring.mem, ring.next, s.start.UnixNano(), int64(d), code, s.name, a, codeName, flags)
	putSeq(ring.mem, ring.next)
}

// Wedge records that a call is wedged: a record named WedgeName holding
// what (which call, since when, what showed its work done), marked as an
// error, and its sequence number in the ring's header, where the parent
// polls for it (SharedWedged). It writes whether tracing is on or not: it
// is the watchdog's report, not a trace of a call.
func Wedge(what string) uint64 {
	now := time.Now()
	ring.mu.Lock()
	defer ring.mu.Unlock()
	ring.next++
	seq := ring.next
	writeSlot(ring.mem, seq, now.UnixNano(), 0, 0, WedgeName, what, "wedged", flagErr)
	putSeq(ring.mem, seq)
	le.PutUint64(ring.mem[hdrWedged:], seq)
	return seq
}

// WedgeName names the watchdog's record (Wedge) in the ring.
const WedgeName = "watchdog"

// Seq returns the last sequence number handed out: records with a larger
// Seq were begun later. A rank notes it when a case starts and later calls
// Since with it.
func Seq() uint64 {
	ring.mu.Lock()
	defer ring.mu.Unlock()
	return ring.next
}

// Snapshot returns every record the ring still holds, oldest first. Records
// still in flight have InFlight set and Dur measured up to now.
func Snapshot() []Record { return Since(0) }

// Since returns the kept records with Seq > seq, oldest first.
func Since(seq uint64) []Record {
	ring.mu.Lock()
	defer ring.mu.Unlock()
	return decode(ring.mem, seq, time.Now())
}

// Reset empties the ring. Sequence numbers keep counting; calls in flight
// at that moment are dropped when they end.
func Reset() {
	ring.mu.Lock()
	defer ring.mu.Unlock()
	clear(ring.mem[headerSize:])
	ring.resetAt = ring.next
}
