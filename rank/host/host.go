// Package host is the embedded default backend: real shared memory (a
// memfd), really exported as an fd, passed with SCM_RIGHTS and mapped by
// every peer process, with the manifest's kernels run as goroutines using
// sync/atomic. It runs anywhere, so CI proves the whole harness with it.
//
// Go's atomics are sequentially consistent: every kernel here is at least as
// strong as its name asks (a "relaxed" add is a seq-cst add), and "dev"
// scope is the same as "sys" scope because the CPU is one coherence domain.
// The planted racy counter uses separate load and store, so it loses updates
// exactly as a non-atomic increment must.
package host

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"p2patomics/internal/device"
	"p2patomics/rank/backend"
)

// Name is the host backend's name, registered and answered by Name; the
// rank package's tests open the backend by it (rank must not import harness,
// whose backends.HostName spells the same name for the parent).
const Name = "host"

func init() { backend.Register(Name, func() backend.Backend { return &Backend{} }) }

// Kind is the host backend's only allocation kind.
const Kind = "memfd"

// MaxThreads bounds a host launch: each virtual thread is a goroutine.
const MaxThreads = 4096

type buffer struct {
	mem  []byte
	base uint64
	peer bool
}

func (b *buffer) Addr() uint64 { return b.base }
func (b *buffer) Size() uint64 { return uint64(len(b.mem)) }

// Backend implements backend.Backend on the CPU.
type Backend struct {
	mu     sync.Mutex
	bufs   []*buffer // sorted by base, for address resolution
	mapped uint64
	total  uint64
	rank   int
}

func (h *Backend) Name() string { return Name }

// AppliesSpeedRules implements backend.SpeedApplier: Copy repeats memmove
// and Launch spins inside the wall-clock window.
func (h *Backend) AppliesSpeedRules() {}
func (h *Backend) Kinds() []string    { return []string{Kind} }

func (h *Backend) Open(cfg backend.Config) (backend.DeviceInfo, error) {
	h.rank = cfg.Rank
	h.total = memTotal()
	host, _ := os.Hostname()
	return backend.DeviceInfo{
		Vendor: "host", Name: "cpu", Arch: runtime.GOARCH, Ordinal: 0, Count: 1,
		MemBytes: h.total, Units: runtime.NumCPU(), Driver: "linux", Runtime: runtime.Version(),
		Attrs: map[string]string{"hostname": host, "atomics": "sync/atomic (sequentially consistent)"},
		// One address space, one coherent memory: the CPU is the device,
		// and every rank reaches every memfd it maps.
		Caps: device.Caps{HostAtomics: device.Yes("host: the CPU is the device (sync/atomic)")},
	}, nil
}

func (h *Backend) Alloc(kind string, size uint64) (backend.Buffer, backend.Export, error) {
	if kind != Kind {
		return nil, backend.Export{}, backend.NotSupportedf("host backend has no allocation kind %q (it has %s)", kind, Kind)
	}
	if size == 0 {
		return nil, backend.Export{}, fmt.Errorf("host: zero-byte allocation")
	}
	fd := -1
	err := sys("memfd_create", func() string { return "name=p2patomics flags=MFD_CLOEXEC" }, func() (err error) {
		fd, err = unix.MemfdCreate("p2patomics", unix.MFD_CLOEXEC)
		return err
	})
	if err != nil {
		return nil, backend.Export{}, fmt.Errorf("host: memfd_create: %w", err)
	}
	defer unix.Close(fd) // the mapping and the exported dup keep the memory
	if err := sys("ftruncate", func() string { return fmt.Sprintf("fd=%d length=%d", fd, size) }, func() error {
		return unix.Ftruncate(fd, int64(size))
	}); err != nil {
		return nil, backend.Export{}, fmt.Errorf("host: ftruncate %d: %w", size, err)
	}
	b, err := h.mmap(fd, size, unix.PROT_READ|unix.PROT_WRITE, false)
	if err != nil {
		return nil, backend.Export{}, err
	}
	// The export: a descriptor made for the peers, as a GPU driver makes
	// one from an allocation's handle.
	efd := -1
	if err := sys("dup", func() string { return fmt.Sprintf("fd=%d cmd=F_DUPFD_CLOEXEC", fd) }, func() (err error) {
		efd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		return err
	}); err != nil || efd < 0 {
		_ = h.Free(b)
		if err == nil {
			err = fmt.Errorf("no descriptor came back")
		}
		return nil, backend.Export{}, fmt.Errorf("host: export (dup): %w", err)
	}
	var st unix.Stat_t
	_ = unix.Fstat(efd, &st)
	// The mapping keeps the memory alive; the fd goes to the peers and the
	// rank server closes it once sent.
	return b, backend.Export{Fd: efd, Size: size, Meta: map[string]string{"inode": strconv.FormatUint(st.Ino, 10)}}, nil
}

func (h *Backend) mmap(fd int, size uint64, prot int, peer bool) (*buffer, error) {
	var mem []byte
	err := sys("mmap", func() string { return fmt.Sprintf("fd=%d len=%d prot=%#x flags=MAP_SHARED", fd, size, prot) }, func() (err error) {
		mem, err = unix.Mmap(fd, 0, int(size), prot, unix.MAP_SHARED)
		return err
	})
	if err == nil && len(mem) == 0 {
		err = fmt.Errorf("success, but no mapping came back")
	}
	if err != nil {
		return nil, fmt.Errorf("host: mmap %d bytes: %w", size, err)
	}
	b := &buffer{mem: mem, base: uint64(uintptr(unsafe.Pointer(&mem[0]))), peer: peer}
	h.mu.Lock()
	h.bufs = append(h.bufs, b)
	sort.Slice(h.bufs, func(i, j int) bool { return h.bufs[i].base < h.bufs[j].base })
	h.mapped += size
	h.mu.Unlock()
	return b, nil
}

func (h *Backend) Import(kind string, exp backend.Export, grant bool) (backend.Buffer, error) {
	defer unix.Close(exp.Fd)
	if kind != Kind {
		return nil, backend.NotSupportedf("host backend has no allocation kind %q", kind)
	}
	if exp.Fd < 0 {
		return nil, fmt.Errorf("host: import of %q without an fd", kind)
	}
	var st unix.Stat_t
	if err := sys("fstat", func() string { return fmt.Sprintf("fd=%d", exp.Fd) }, func() error { return unix.Fstat(exp.Fd, &st) }); err != nil {
		return nil, fmt.Errorf("host: fstat imported fd: %w", err)
	}
	if uint64(st.Size) < exp.Size {
		return nil, fmt.Errorf("host: imported fd holds %d bytes, export says %d", st.Size, exp.Size)
	}
	// Mapped with no access, then granted, as cuMemMap then cuMemSetAccess:
	// without the grant (the negative control) a kernel touching it faults
	// exactly as a GPU's does.
	b, err := h.mmap(exp.Fd, exp.Size, unix.PROT_NONE, true)
	if err != nil || !grant {
		return b, err
	}
	if err := sys("mprotect", func() string { return fmt.Sprintf("addr=%#x len=%d prot=PROT_READ|PROT_WRITE", b.base, len(b.mem)) }, func() error {
		return unix.Mprotect(b.mem, unix.PROT_READ|unix.PROT_WRITE)
	}); err != nil {
		_ = h.Free(b)
		return nil, fmt.Errorf("host: access grant (mprotect): %w", err)
	}
	return b, nil
}

func (h *Backend) Read(b backend.Buffer, off uint64, p []byte) error {
	copy(p, b.(*buffer).mem[off:])
	return nil
}

// Write is plain stores into the MAP_SHARED mapping, done when copy
// returns: the peers map the same pages of one coherent memory, and the
// reply that follows goes out through a socket whose kernel locks order
// these stores before any process hears of it (docs/SYNC.md). It passes
// the choke point as memcpy_htod, so noop:memcpy_htod is a write that
// replies without landing, the bug the rule forbids, visible on host.
func (h *Backend) Write(b backend.Buffer, off uint64, p []byte) error {
	m := b.(*buffer).mem[off:]
	return sys("memcpy_htod", func() string { return fmt.Sprintf("dst=%#x len=%d", b.Addr()+off, len(p)) }, func() error {
		copy(m, p)
		return nil
	})
}

func (h *Backend) Copy(dst backend.Buffer, dstOff uint64, src backend.Buffer, srcOff uint64, n uint64) (backend.LaunchResult, error) {
	d, s := dst.(*buffer), src.(*buffer)
	if !backend.Within(dstOff, n, d.Size()) || !backend.Within(srcOff, n, s.Size()) {
		return backend.LaunchResult{}, fmt.Errorf("host: copy of %d bytes outside a buffer", n)
	}
	t0 := time.Now()
	copy(d.mem[dstOff:dstOff+n], s.mem[srcOff:srcOff+n])
	copyAgain(d.mem[dstOff:dstOff+n], s.mem[srcOff:srcOff+n]) // copy-times: inside the timed window
	// Every copy metric names the engine that ran it (issue 30): here the
	// CPU, through Go's copy (memmove).
	return backend.LaunchResult{Elapsed: time.Since(t0), Method: "wall, CPU memmove (host backend)"}, nil
}

func (h *Backend) Free(bb backend.Buffer) error {
	b := bb.(*buffer)
	h.mu.Lock()
	for i, x := range h.bufs {
		if x == b {
			h.bufs = append(h.bufs[:i], h.bufs[i+1:]...)
			break
		}
	}
	h.mapped -= b.Size()
	h.mu.Unlock()
	if err := sys("munmap", func() string { return fmt.Sprintf("addr=%#x len=%d", b.base, len(b.mem)) }, func() error {
		return unix.Munmap(b.mem)
	}); err != nil {
		return fmt.Errorf("host: munmap: %w", err)
	}
	return nil
}

func (h *Backend) MemInfo() (free, total uint64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total - h.mapped, h.total, nil
}

func (h *Backend) Close() error { return nil }

// CPUWord implements backend.CPUMapper: host memory is CPU memory.
func (h *Backend) CPUWord(x backend.Buffer, off uint64) (*uint64, error) {
	b, ok := x.(*buffer)
	if !ok || b == nil {
		return nil, fmt.Errorf("host: buffer %T is not a host buffer", x)
	}
	if off%8 != 0 || !backend.Within(off, 8, b.Size()) {
		return nil, fmt.Errorf("host: word at %d is unaligned or outside the %d-byte buffer", off, b.Size())
	}
	return (*uint64)(unsafe.Pointer(&b.mem[off])), nil
}

// resolve turns a kernel's pointer argument into memory: the GPU backends
// hand device addresses to the device, and so does this one, but Go code
// must find the mapping that holds the address first.
func (h *Backend) resolve(addr uint64) (unsafe.Pointer, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bufs {
		if addr >= b.base && addr < b.base+b.Size() {
			off := addr - b.base
			return unsafe.Pointer(&b.mem[off]), b.Size() - off, nil
		}
	}
	return nil, 0, fmt.Errorf("host: address %#x is not in any mapping of rank %d", addr, h.rank)
}

func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 1 << 34
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 1 << 34
}
