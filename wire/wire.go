// Package wire is the protocol between the suite and its ranks: typed
// messages on a SOCK_SEQPACKET socket, one message per packet, file
// descriptors riding as SCM_RIGHTS on the message that names them.
//
// A packet is a 16-byte header (magic "P2PA", version, type, sequence number,
// body length) and a JSON body. SEQPACKET keeps message boundaries, so a
// short or long packet is detected, not resynchronised; any malformed packet
// becomes an error that describes the bytes, never a panic.
package wire

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/internal/device"
)

// How the suite starts a rank: its own binary re-executed with argv[0]
// RankArgv0 (so ps shows what it is), RankEnv set to the rank's index and
// ParentEnv to the suite's pid (the rank checks it is still its parent;
// the soak finds a suite's ranks by it);
// the socket is at fd RankSockFd and the shared trace ring at RankTraceFd
// (the spawner's ExtraFiles, in that order). Both sides read these names
// from here.
const (
	RankEnv     = "P2PAT_RANK"
	ParentEnv   = "P2PAT_PARENT"
	RankArgv0   = "p2patomics-rank"
	RankSockFd  = 3
	RankTraceFd = 4
)

// Version is the protocol version exchanged in the handshake.
const Version = 1

const (
	magic     = 0x41503250 // "P2PA" little-endian
	headerLen = 16
	// MaxPacket bounds one message. Bulk data moves in chunks of MaxData.
	MaxPacket = 1 << 20
	MaxData   = 256 << 10
	maxFds    = 4
)

// Type names a message.
type Type uint16

// Requests (suite → rank) and replies (rank → suite).
const (
	THello Type = iota + 1
	TAlloc
	TImport
	TLaunch
	TRead
	TWrite
	TSum
	TFree
	TCopy
	TMemInfo
	TFdInfo
	TCanary
	TExit
	TTrace
	TReply Type = 100
)

var typeNames = map[Type]string{THello: "hello", TAlloc: "alloc", TImport: "import", TLaunch: "launch",
	TRead: "read", TWrite: "write", TSum: "sum", TFree: "free", TCopy: "copy", TMemInfo: "meminfo",
	TFdInfo: "fdinfo", TCanary: "canary", TExit: "exit", TTrace: "trace", TReply: "reply"}

// Requests are the request types (suite → rank): every named type but the
// reply, in protocol order. The rank's handler table is checked against it.
func Requests() []Type {
	var ts []Type
	for t := range typeNames {
		if t != TReply {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint16(t))
}

// ErrMalformed marks a packet that does not parse.
var ErrMalformed = errors.New("malformed message")

// ErrClosed is returned when the peer closed the socket (EOF).
var ErrClosed = errors.New("peer closed the connection")

// ErrDeadline is returned when a wait passes its deadline.
var ErrDeadline = errors.New("deadline passed")

// Msg is one received message.
type Msg struct {
	Type Type
	Seq  uint32
	Body []byte
	Fds  []int
}

// Decode unmarshals the body, describing the bytes on failure.
func (m *Msg) Decode(v any) error {
	if err := json.Unmarshal(m.Body, v); err != nil {
		return fmt.Errorf("%w: %s body: %v; bytes: %s", ErrMalformed, m.Type, err, describe(m.Body))
	}
	return nil
}

// CloseFds closes any fds the message carried that nobody took.
func (m *Msg) CloseFds() {
	for _, fd := range m.Fds {
		unix.Close(fd)
	}
	m.Fds = nil
}

func describe(b []byte) string {
	n := len(b)
	if len(b) > 32 {
		b = b[:32]
	}
	return fmt.Sprintf("%d bytes, starting %s", n, hex.EncodeToString(b))
}

// Send writes one message with optional fds.
func Send(fd int, t Type, seq uint32, body any, fds ...int) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("wire: encode %s: %w", t, err)
		}
	}
	if headerLen+len(payload) > MaxPacket {
		return fmt.Errorf("wire: %s message of %d bytes exceeds %d", t, len(payload), MaxPacket)
	}
	buf := make([]byte, headerLen+len(payload))
	binary.LittleEndian.PutUint32(buf[0:], magic)
	binary.LittleEndian.PutUint16(buf[4:], Version)
	binary.LittleEndian.PutUint16(buf[6:], uint16(t))
	binary.LittleEndian.PutUint32(buf[8:], seq)
	binary.LittleEndian.PutUint32(buf[12:], uint32(len(payload)))
	copy(buf[headerLen:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for {
		err := unix.Sendmsg(fd, buf, oob, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EPIPE || err == unix.ECONNRESET {
			return fmt.Errorf("wire: send %s: %w", t, ErrClosed)
		}
		if err != nil {
			return fmt.Errorf("wire: send %s: %w", t, err)
		}
		return nil
	}
}

// SendRaw writes bytes as one packet, bypassing framing (canaries use it to
// plant a malformed message).
func SendRaw(fd int, b []byte) error {
	return unix.Sendmsg(fd, b, nil, nil, unix.MSG_NOSIGNAL)
}

// Recv reads one message, waiting until deadline (zero = forever). A
// message already queued is read whatever the deadline: the socket is
// polled at least once (timeout 0) before the deadline is judged, so a
// suite that was stopped (SIGSTOP, a long GC or scheduling gap) past its
// deadline while the rank's reply arrived reads the reply, never "did not
// answer" (issue 48).
func Recv(fd int, deadline time.Time) (Msg, error) {
	polled := false // a poll that returned, not one a signal interrupted
	for {
		timeout := -1
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 && polled {
				return Msg{}, ErrDeadline
			}
			timeout = max(0, int((d+time.Millisecond-1)/time.Millisecond))
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, timeout)
		if err == unix.EINTR {
			continue
		}
		polled = true
		if err != nil {
			return Msg{}, fmt.Errorf("wire: poll: %w", err)
		}
		if n == 0 {
			continue // loop re-checks the deadline
		}
		return recvOne(fd)
	}
}

// bufs recycles receive buffers: zeroing a fresh MaxPacket buffer per
// message cost more than the rest of a round trip.
var bufs = sync.Pool{New: func() any { b := make([]byte, MaxPacket); return &b }}

func recvOne(fd int) (Msg, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	oob := make([]byte, unix.CmsgSpace(maxFds*4))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if err == unix.ECONNRESET {
			return Msg{}, ErrClosed
		}
		return Msg{}, fmt.Errorf("wire: recvmsg: %w", err)
	}
	var fds []int
	if oobn > 0 {
		cms, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr != nil {
			return Msg{}, fmt.Errorf("%w: control data: %v", ErrMalformed, perr)
		}
		for _, cm := range cms {
			if got, rerr := unix.ParseUnixRights(&cm); rerr == nil {
				fds = append(fds, got...)
			}
		}
	}
	closeAll := func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}
	if n == 0 && oobn == 0 {
		// On SOCK_SEQPACKET a zero-length packet and the peer's close both
		// read as 0 bytes: only a hung-up socket is the close. Taking a
		// zero-length packet for it made a rank exit 0 in silence.
		if !hungUp(fd) {
			return Msg{}, fmt.Errorf("%w: zero-length packet", ErrMalformed)
		}
		return Msg{}, ErrClosed
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeAll()
		return Msg{}, fmt.Errorf("%w: packet truncated (flags %#x); %s", ErrMalformed, flags, describe(buf[:n]))
	}
	b := buf[:n]
	if n < headerLen {
		closeAll()
		return Msg{}, fmt.Errorf("%w: %s, shorter than the %d-byte header", ErrMalformed, describe(b), headerLen)
	}
	if m := binary.LittleEndian.Uint32(b); m != magic {
		closeAll()
		return Msg{}, fmt.Errorf("%w: bad magic %#08x; %s", ErrMalformed, m, describe(b))
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != Version {
		closeAll()
		return Msg{}, fmt.Errorf("%w: protocol version %d, want %d", ErrMalformed, v, Version)
	}
	ln := binary.LittleEndian.Uint32(b[12:])
	if int(ln) != n-headerLen {
		closeAll()
		return Msg{}, fmt.Errorf("%w: header says %d body bytes, packet has %d; %s", ErrMalformed, ln, n-headerLen, describe(b))
	}
	return Msg{
		Type: Type(binary.LittleEndian.Uint16(b[6:])),
		Seq:  binary.LittleEndian.Uint32(b[8:]),
		Body: append([]byte(nil), b[headerLen:]...),
		Fds:  fds,
	}, nil
}

// hungUp reports whether the peer has closed its end of fd.
func hungUp(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(pfd, 0)
	return err != nil || (n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLRDHUP) != 0)
}

// Socketpair returns a connected SEQPACKET pair with buffers large enough
// for MaxPacket.
func Socketpair() (parent, child int, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("wire: socketpair: %w", err)
	}
	for _, fd := range fds {
		// Best effort: unprivileged users are capped at wmem_max, and
		// messages stay far below MaxPacket in practice.
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	}
	return fds[0], fds[1], nil
}

// Message bodies. Replies carry either the documented result or Error.

// Hello is the handshake request. It is the one channel for what a rank
// needs to know: a rank reads no settings from its environment.
type Hello struct {
	Version  int      `json:"version"`
	Backend  string   `json:"backend"`
	Rank     int      `json:"rank"`
	Ranks    int      `json:"ranks"`
	Device   int      `json:"device"`
	Settings Settings `json:"settings"`
}

// Settings are what the suite's flags (and tests) tell every rank.
type Settings struct {
	// NoTrace leaves the rank's API trace off; by default every call is
	// recorded (about 0.1 µs a call). Only used to measure that cost.
	NoTrace bool `json:"no_trace,omitempty"`
	// ClockPeriod is how often a launch or copy that asks for clocks
	// (Launch.Clocks, perf cases) samples the device clock; 0 is off.
	ClockPeriod time.Duration `json:"clock_period_ns"`
	// Inject is the driver-fault injector's rules (internal/inject, as
	// Rule.String writes them), installed before the backend opens; empty
	// in every run but the injector's own.
	Inject []string `json:"inject,omitempty"`
	// InjectCounters is the run's injector counters (inject.NewCounters),
	// attached to the hello as an fd, not sent in its body: every rank of
	// the run counts fail-every's calls, drop-every's launches and each
	// rule's fires in the one memfd, which the suite reads at the end. Nil
	// without rules, and in a test's world (each rank then counts alone).
	InjectCounters *os.File `json:"-"`
	// Library is the vendor library file the rank loads instead of its
	// own search (binding.Pin): an A/B run's stack B (--ab, harness/ab),
	// resolved and checked by the parent. Empty: the rank's own search,
	// as in every other run.
	Library string `json:"library,omitempty"`
}

// DefaultSettings are a rank's settings when the suite's flags say nothing.
var DefaultSettings = Settings{ClockPeriod: time.Millisecond}

// ParseClockPeriod parses --clocks: "off", or a positive duration ("" is
// the default).
func ParseClockPeriod(v string) (time.Duration, error) {
	switch v {
	case "":
		return DefaultSettings.ClockPeriod, nil
	case "off":
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is neither off nor a positive duration such as 1ms", v)
	}
	return d, nil
}

// HelloReply answers Hello.
type HelloReply struct {
	Version int         `json:"version"`
	Pid     int         `json:"pid"`
	Kinds   []string    `json:"kinds"`
	Info    device.Info `json:"info"`
}

// Alloc asks a rank to allocate and export.
type Alloc struct {
	Kind string `json:"kind"`
	Size uint64 `json:"size"`
}

// AllocReply carries the export; its fd rides as SCM_RIGHTS.
type AllocReply struct {
	Buf    int               `json:"buf"`
	Size   uint64            `json:"size"`
	HasFd  bool              `json:"has_fd"`
	Handle []byte            `json:"handle,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// Import asks a rank to map a peer's export (fd attached if HasFd).
type Import struct {
	Kind   string            `json:"kind"`
	Peer   int               `json:"peer"`
	Size   uint64            `json:"size"`
	HasFd  bool              `json:"has_fd"`
	Handle []byte            `json:"handle,omitempty"`
	Meta   map[string]string `json:"meta,omitempty"`
	Grant  bool              `json:"grant"`
}

// BufReply names a buffer.
type BufReply struct {
	Buf  int    `json:"buf"`
	Addr uint64 `json:"addr"`
}

// Arg is a kernel argument: a buffer address plus offset, or a value.
type Arg struct {
	Buf int    `json:"buf"` // -1: Val is the argument
	Off uint64 `json:"off,omitempty"`
	Val uint64 `json:"val,omitempty"`
}

// Launch runs a kernel.
type Launch struct {
	Kernel string      `json:"kernel"`
	Grid   uint32      `json:"grid"`
	Block  uint32      `json:"block"`
	Args   []Arg       `json:"args"`
	CPU    *CPUAtomics `json:"cpu,omitempty"`
	// Clocks asks the rank to sample its device's clock while the kernel
	// runs (perf cases), returned in Timing.Clock.
	Clocks bool `json:"clocks,omitempty"`
}

// CPUAtomics asks the rank's CPU to take part while the kernel runs:
// Threads goroutines each apply Iters fetch-adds of Operand to the 8-byte
// word at Target (LOCK XADD on amd64: system scope as far as the CPU can
// say it). Racy replaces each add with a load and a store (the planted
// bug the verification must catch).
type CPUAtomics struct {
	Target  Arg    `json:"target"`
	Threads int    `json:"threads"`
	Iters   uint64 `json:"iters"`
	Operand uint64 `json:"operand"`
	Racy    bool   `json:"racy,omitempty"`
}

// Timing reports a device-side duration.
type Timing struct {
	ElapsedNs int64       `json:"elapsed_ns"`
	Method    string      `json:"method"`
	Clock     *ClockStats `json:"clock,omitempty"`
	// StartNs and EndNs are CLOCK_MONOTONIC (one clock for every process
	// of the machine) read just before the launch or copy is issued and
	// just after the rank's synchronise returned: the window the work
	// certainly ran inside, comparable across ranks, so work that must run
	// "at once" is timed from the first start to the last end.
	StartNs int64 `json:"start_ns,omitempty"`
	EndNs   int64 `json:"end_ns,omitempty"`
	// Dropped is the injector's rule that dropped this launch (nothing
	// ran; the rank knows it did not launch): the harness's witness that a
	// control's kernel never ran, so the control's outcome shows nothing.
	Dropped string `json:"dropped,omitempty"`
}

// ClockStats is what a rank saw of its device's core clock while a timed
// launch or copy ran: the range over N samples (about one per ms, plus one
// at each end) and every clock-event reason seen (names as the vendor
// library spells them; idle at the window's edges is left out).
type ClockStats struct {
	MinMHz  uint32   `json:"min_mhz"`
	MaxMHz  uint32   `json:"max_mhz"`
	N       int      `json:"n"`
	Reasons []string `json:"reasons,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Read asks for bytes; Write sends them.
type Read struct {
	Buf int    `json:"buf"`
	Off uint64 `json:"off"`
	Len uint64 `json:"len"`
}

type Write struct {
	Buf  int    `json:"buf"`
	Off  uint64 `json:"off"`
	Data []byte `json:"data"`
}

// Data answers Read.
type Data struct {
	Data []byte `json:"data"`
}

// Sum asks for the wrapping 64-bit sum of N words of Width bits.
type Sum struct {
	Buf   int    `json:"buf"`
	Off   uint64 `json:"off"`
	N     uint64 `json:"n"`
	Width int    `json:"width"`
}

type SumReply struct {
	Sum uint64 `json:"sum"`
}

// Free releases a buffer.
type Free struct {
	Buf int `json:"buf"`
}

// Copy uses the backend's copy engine.
type Copy struct {
	Dst    int    `json:"dst"`
	DstOff uint64 `json:"dst_off"`
	Src    int    `json:"src"`
	SrcOff uint64 `json:"src_off"`
	N      uint64 `json:"n"`
	Clocks bool   `json:"clocks,omitempty"` // as Launch.Clocks
}

// MemInfo reports device memory.
type MemInfo struct {
	Free  uint64 `json:"free"`
	Total uint64 `json:"total"`
	Fds   int    `json:"fds"` // open fds in the rank (leak check)
	Bufs  int    `json:"bufs"`
}

// FdInfo carries an fd (attached) to be inspected through /proc/self/fdinfo.
type FdInfoReply struct {
	Info map[string]string `json:"info"`
}

// Canary asks a rank to misbehave in a named way.
type Canary struct {
	How string `json:"how"`
}

// TraceReply carries a rank's formatted API trace.
type TraceReply struct {
	Text string `json:"text"`
}

// Fault is the GPU fault a rank reports before it exits.
type Fault = device.Fault

// Reply wraps every answer.
type Reply struct {
	OK           bool            `json:"ok"`
	Error        string          `json:"error,omitempty"`
	NotSupported bool            `json:"not_supported,omitempty"`
	Fault        *Fault          `json:"fault,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
}
