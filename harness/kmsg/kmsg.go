// Package kmsg reads the kernel log through /dev/kmsg from a point in time
// ("from now") and keeps the lines that matter to GPUs: NVIDIA Xid and NVRM
// errors, amdgpu VM faults, resets and ring timeouts, IOMMU faults and kfd
// messages. The suite process uses it around each case; it loads no GPU
// library.
package kmsg

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Path is the kernel log device.
const Path = "/dev/kmsg"

// MaxLines bounds what a Reader keeps between two Marks; later lines are
// counted in Dropped, except GPU-relevant ones (Filter), which are always
// kept.
const MaxLines = 16384

// ErrNoAccess is wrapped by Open when the log cannot be read (no
// permission, kernel.dmesg_restrict, no /dev/kmsg in a container). The
// caller says once "kernel log unreadable: <err>" and carries on.
var ErrNoAccess = errors.New("kernel log unreadable")

// Line is one kernel log record.
type Line struct {
	Seq  uint64 `json:"seq"`
	Usec uint64 `json:"usec"` // microseconds since boot (CLOCK_MONOTONIC)
	Prio int    `json:"prio"` // syslog level 0 (emerg) .. 7 (debug)
	Text string `json:"text"` // the message, with printable \xNN escapes decoded
}

// String formats the line as dmesg does: "[ 1234.567890] text".
func (l Line) String() string {
	return fmt.Sprintf("[%5d.%06d] %s", l.Usec/1e6, l.Usec%1e6, l.Text)
}

// Reader reads /dev/kmsg without blocking.
type Reader struct {
	fd      int
	buf     []byte
	pending []byte // a record not yet whole (a regular file read in chunks)
	lines   []Line
	dropped int // lines not kept (MaxLines) plus records the kernel overwrote, since Mark
	lost    int // EPIPE events since Mark
}

// Open opens the kernel log positioned at its end: Since returns only
// records logged after Open (or the latest Mark).
func Open() (*Reader, error) { return OpenPath(Path) }

// OpenPath is Open on another file with /dev/kmsg semantics (tests).
func OpenPath(path string) (*Reader, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: open %s: %v", ErrNoAccess, path, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r := &Reader{fd: fd, buf: make([]byte, 16384)}
	if err := r.Mark(); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return r, nil
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := syscall.Close(r.fd)
	r.fd = -1
	return err
}

// Mark sets the position to now and forgets lines read so far.
func (r *Reader) Mark() error {
	if _, err := syscall.Seek(r.fd, 0, 2 /* SEEK_END */); err != nil {
		return fmt.Errorf("seek %s: %w", Path, err)
	}
	r.lines = r.lines[:0]
	r.pending = r.pending[:0]
	r.dropped, r.lost = 0, 0
	return nil
}

// Since returns every line logged since the last Mark (or Open), oldest
// first; it never blocks. Calling it again returns the same lines plus any
// new ones. The slice is the caller's.
func (r *Reader) Since() ([]Line, error) {
	for {
		n, err := syscall.Read(r.fd, r.buf)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err == syscall.EPIPE {
			// The ring buffer overwrote records we had not read; the
			// next read returns the oldest record still there.
			r.lost++
			r.pending = r.pending[:0]
			continue
		}
		if err == syscall.EPERM || err == syscall.EACCES {
			return r.copyLines(), fmt.Errorf("%w: read %s: %v", ErrNoAccess, Path, err)
		}
		if err != nil {
			return r.copyLines(), fmt.Errorf("read %s: %w", Path, err)
		}
		if n == 0 {
			break
		}
		r.keep(r.buf[:n])
	}
	return r.copyLines(), nil
}

// keep parses what one read returned. /dev/kmsg returns one whole record
// per read (its dictionary lines, which start with a space, after it); a
// regular file with the same records (OpenPath, for tests) returns as many
// as fit, the last perhaps cut: whole lines are parsed, the rest waits for
// the next read.
func (r *Reader) keep(b []byte) {
	r.pending = append(r.pending, b...)
	for {
		i := bytes.IndexByte(r.pending, '\n')
		if i < 0 {
			return
		}
		rec := r.pending[:i+1]
		r.pending = r.pending[i+1:]
		if rec[0] == ' ' {
			continue // a dictionary line (KEY=value) of the record before
		}
		l, err := ParseRecord(rec)
		if err != nil {
			continue
		}
		if len(r.lines) >= MaxLines && !Relevant(l) {
			r.dropped++
			continue
		}
		r.lines = append(r.lines, l)
	}
}

func (r *Reader) copyLines() []Line { return append([]Line(nil), r.lines...) }

// Dropped reports, since the last Mark, how many lines were not kept
// (beyond MaxLines, not GPU-relevant) and how many times the kernel's ring
// overwrote records before they were read.
func (r *Reader) Dropped() (notKept, overwritten int) { return r.dropped, r.lost }

// ParseRecord parses one /dev/kmsg record:
//
//	prio,seq,usec,flags[,...];message\n
//	 KEY=value\n   (continuation/dictionary lines, ignored)
func ParseRecord(b []byte) (Line, error) {
	s := string(b)
	semi := strings.IndexByte(s, ';')
	if semi < 0 {
		return Line{}, fmt.Errorf("kmsg record without ';': %q", trunc(s))
	}
	hdr := strings.Split(s[:semi], ",")
	if len(hdr) < 3 {
		return Line{}, fmt.Errorf("kmsg record header %q", hdr)
	}
	prio, err1 := strconv.Atoi(hdr[0])
	seq, err2 := strconv.ParseUint(hdr[1], 10, 64)
	usec, err3 := strconv.ParseUint(hdr[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Line{}, fmt.Errorf("kmsg record header %q: %w", s[:semi], err)
	}
	msg := s[semi+1:]
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return Line{Seq: seq, Usec: usec, Prio: prio & 7, Text: unescape(msg)}, nil
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// unescape decodes the kernel's \xNN escapes where the byte is printable
// ASCII (the kernel escapes '\' itself as \x5c); others stay escaped so a
// Line is always one printable line.
func unescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil && v >= 0x20 && v < 0x7f {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var (
	reXid      = regexp.MustCompile(`NVRM: Xid \(([^)]*)\): (\d+)`)
	reAMDFault = regexp.MustCompile(`\[(gfx|mm|vm)hub\d*\] (?:retry |no-retry )?page fault|VM_L2_PROTECTION_FAULT`)
	reAMDReset = regexp.MustCompile(`(?i)GPU reset|mode[12] reset|BACO reset|ASIC reset|GPU recover`)
	reRingTO   = regexp.MustCompile(`ring \S+ timeout`)
	reIOMMU    = regexp.MustCompile(`AMD-Vi: Event logged \[IO_PAGE_FAULT|DMAR: DRHD: handling fault|DMAR: \[DMA (?:Read|Write)|(?i:iommu fault)|Unhandled context fault`)
	reKFD      = regexp.MustCompile(`\bkfd\b|amdkfd`)
	rePCI      = regexp.MustCompile(`\b(?:PCI:)?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})(?:\.\d)?\b`)
	reAMDPfx   = regexp.MustCompile(`^amdgpu [0-9a-f:.]+: `)
)

// Kinds returned by Classify.
const (
	KindXid        = "xid"            // NVIDIA Xid; the number says what
	KindNVRM       = "nvrm"           // other NVRM warning or error
	KindAMDFault   = "amdgpu-fault"   // GPUVM page fault (and its detail lines, via Filter)
	KindAMDReset   = "amdgpu-reset"   // GPU reset / recovery
	KindAMDTimeout = "amdgpu-timeout" // ring timeout: a job hung; a reset follows
	KindIOMMUFault = "iommu-fault"    // AMD-Vi / Intel DMAR / SMMU fault
	KindKFD        = "kfd"            // amdkfd message
)

// Classify names what a line is; xid is the Xid number for KindXid. kind is
// "" for a line that is not GPU-relevant.
func Classify(l Line) (kind string, xid int) {
	t := l.Text
	if !maybeGPU(t) {
		return "", 0
	}
	if strings.Contains(t, "NVRM:") {
		if m := reXid.FindStringSubmatch(t); m != nil {
			n, _ := strconv.Atoi(m[2])
			return KindXid, n
		}
		if l.Prio <= 4 || strings.Contains(t, "fallen off the bus") || strings.Contains(strings.ToLower(t), "error") {
			return KindNVRM, 0
		}
		return "", 0
	}
	if reIOMMU.MatchString(t) {
		return KindIOMMUFault, 0
	}
	if strings.Contains(t, "amdgpu") || strings.Contains(t, "gfxhub") || strings.Contains(t, "VM_L2_") {
		switch {
		case reAMDFault.MatchString(t):
			return KindAMDFault, 0
		case reAMDReset.MatchString(t):
			return KindAMDReset, 0
		case reRingTO.MatchString(t):
			return KindAMDTimeout, 0
		}
	}
	if reRingTO.MatchString(t) && strings.Contains(t, "drm") {
		return KindAMDTimeout, 0
	}
	if reKFD.MatchString(t) {
		return KindKFD, 0
	}
	return "", 0
}

// maybeGPU is a cheap pre-check: every pattern below needs one of these.
func maybeGPU(t string) bool {
	for _, k := range [...]string{"NVRM", "amdgpu", "AMD-Vi", "DMAR", "mmu", "MMU", "kfd", "timeout", "fault", "hub]", "VM_L2_"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

// Relevant reports whether Classify gives the line a kind.
func Relevant(l Line) bool { k, _ := Classify(l); return k != "" }

// Filter keeps the GPU-relevant lines, in order, with the detail lines
// of each (Events, flattened).
func Filter(lines []Line) []Line {
	var out []Line
	for _, e := range Events(lines) {
		out = append(out, e.Lines...)
	}
	return out
}

// Event is one GPU-relevant line and the detail lines the driver printed
// right after it about the same fault; Pid is the process the event names
// (0: none).
type Event struct {
	Lines []Line
	Kind  string // Classify's kind of the first line
	Xid   int
	Pid   int
}

// maxDetail bounds the detail lines one event keeps.
const maxDetail = 16

// Events groups the GPU-relevant lines into events, in order. After an
// amdgpu page fault the driver prints detail lines from the same device
// ("Process X pid N thread X pid N", "in page starting at address",
// "VM_L2_PROTECTION_FAULT_STATUS", "Faulty UTCL2 client ID", ...); after a
// ring timeout, "Process information: process X pid N ...". They join the
// event (up to maxDetail), which takes the first pid any of its lines names:
// newer amdgpu names the process only on a detail line.
func Events(lines []Line) []Event {
	var out []Event
	prefix, detail := "", 0
	for _, l := range lines {
		kind, xid := Classify(l)
		if n := len(out); n > 0 && detail < maxDetail && joins(kind, l, prefix, out[n-1].Kind) {
			e := &out[n-1]
			e.Lines = append(e.Lines, l)
			if e.Pid == 0 {
				e.Pid = Pid(l)
			}
			detail++
			continue
		}
		prefix, detail = "", 0
		if kind == "" {
			continue
		}
		out = append(out, Event{Lines: []Line{l}, Kind: kind, Xid: xid, Pid: Pid(l)})
		if kind == KindAMDFault {
			prefix = reAMDPfx.FindString(l.Text)
		}
	}
	return out
}

// joins: l is a detail line of the open event (of kind open): an amdgpu
// fault's lines from the same device that are no new event (the fault
// status line, itself classified a fault, joins too), or a ring timeout's
// process line.
func joins(kind string, l Line, prefix, open string) bool {
	switch open {
	case KindAMDFault:
		return prefix != "" && strings.HasPrefix(l.Text, prefix) && (kind == "" || strings.Contains(l.Text, "_STATUS"))
	case KindAMDTimeout:
		return kind == "" && strings.Contains(l.Text, "Process information:")
	}
	return false
}

// rePid finds "pid=N" (NVIDIA), "pid N" and "pid:N" (amdgpu, kfd).
var rePid = regexp.MustCompile(`\bpid[=: ](\d+)`)

// Pid is the process a line names, 0 when it names none: NVIDIA's Xid
// lines carry "pid=N, name=..." ("pid='<unknown>'" when the driver does not
// know it); amdgpu's fault and timeout lines "process X pid N thread X pid
// N" (pid 0 when the fault came with no process; the thread's pid, the
// second, is not the process's: the first match is taken). A pasid is not
// a pid.
func Pid(l Line) int {
	m := rePid.FindStringSubmatch(l.Text)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// PCI returns the PCI address a line names ("0000:3b:00" from
// "NVRM: Xid (PCI:0000:3b:00): 79" or "amdgpu 0000:03:00.0: ..."), or "".
func PCI(l Line) string {
	if m := rePCI.FindStringSubmatch(l.Text); m != nil {
		return m[1]
	}
	return ""
}
