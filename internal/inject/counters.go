package inject

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The run's counters. A rule counts across every rank process of the run,
// not per process: fail-every:mmap=5/200 fails the 200th mmap any rank of
// the run makes, drop-every:1000 drops the 1000th launch of the run, and a
// rule's fire count is the run's. Per process (as before), such a rule
// never fired on a backend whose ranks make fewer than N calls per world,
// and the run still read "faults injected".
//
// The counters live in one memfd the suite makes for the run
// (NewCounters): 8-byte words, the launches seen first, then per rule the
// calls it has seen and the times it acted. Every rank maps it shared at
// its hello (SetShared: the fd comes with the hello) and adds with atomic
// instructions, which are atomic across processes on shared memory; the
// suite reads the fire counts from the same memfd at the end (ReadFired),
// so a rank that crashed or was killed has still counted what it did.

const counterMagic = 0x7032696e6a637472 // "p2injctr"

// countersSize is the memfd's size for n rules: magic, rule count,
// launches, then calls and fires per rule.
func countersSize(n int) int { return 8 * (3 + 2*n) }

// NewCounters makes the run's counters for rules: a memfd the caller
// keeps for the run and hands every rank with its hello.
func NewCounters(rules []Rule) (*os.File, error) {
	fd, err := unix.MemfdCreate("p2patomics-inject", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inject: counters: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inject-counters")
	hdr := make([]byte, countersSize(len(rules)))
	binary.LittleEndian.PutUint64(hdr[0:], counterMagic)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(len(rules)))
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("inject: counters: %w", err)
	}
	return f, nil
}

// ErrCounters is wrapped by SetShared's and ReadFired's refusals.
var ErrCounters = errors.New("inject: bad counters")

// SetShared installs rules with the run's counters behind fd (a
// NewCounters memfd for exactly these rules), replacing any before. The
// mapping stays for the process's life: a rank installs once, at its hello.
func SetShared(rules []Rule, fd int) error {
	if len(rules) == 0 {
		active.Store(nil)
		return nil
	}
	size := countersSize(len(rules))
	mem, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("%w: mmap: %v", ErrCounters, err)
	}
	if err := checkHeader(mem, len(rules)); err != nil {
		syscall.Munmap(mem)
		return err
	}
	word := func(i int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&mem[8*i])) }
	in := &installed{rules: rules, launches: word(2)}
	for i := range rules {
		in.counts = append(in.counts, word(3+2*i))
		in.fires = append(in.fires, word(4+2*i))
	}
	active.Store(in)
	return nil
}

func checkHeader(mem []byte, n int) error {
	if len(mem) < 16 || binary.LittleEndian.Uint64(mem) != counterMagic {
		return fmt.Errorf("%w: not the run's counters", ErrCounters)
	}
	if got := binary.LittleEndian.Uint64(mem[8:]); got != uint64(n) {
		return fmt.Errorf("%w: made for %d rules, %d given", ErrCounters, got, n)
	}
	return nil
}

// ReadFired reads from the run's counters how many times each of its n
// rules acted, in the rules' order.
func ReadFired(f *os.File, n int) ([]uint64, error) {
	mem := make([]byte, countersSize(n))
	if _, err := f.ReadAt(mem, 0); err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrCounters, err)
	}
	if err := checkHeader(mem, n); err != nil {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		// The ranks add atomically; a plain read of an aligned word in a
		// read(2) copy sees each word whole.
		out[i] = binary.LittleEndian.Uint64(mem[8*(4+2*i):])
	}
	return out, nil
}
