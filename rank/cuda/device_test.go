package cuda

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

// Device tests: they skip unless libcuda.so.1 loads and enough devices
// exist. They open two Backends in ONE process (device 0 and device 1) and
// drive each from its own goroutine locked to an OS thread, as two ranks
// would; that is fine for a binding test (contexts are per device). Legacy
// IPC refuses to open a handle in the process that made it, so the ipc
// round trip is left to the cross-process specs.

// worker runs functions on one locked OS thread, like a rank server.
type worker struct{ in chan func() }

func newWorker(t *testing.T) *worker {
	w := &worker{in: make(chan func())}
	go func() {
		runtime.LockOSThread()
		// Unlock before returning so the thread is reused, not torn down.
		defer runtime.UnlockOSThread()
		for f := range w.in {
			f()
		}
	}()
	t.Cleanup(func() { close(w.in) })
	return w
}

func (w *worker) do(f func()) {
	done := make(chan struct{})
	w.in <- func() { defer close(done); f() }
	<-done
}

func openDevice(t *testing.T, w *worker, dev int) (*Backend, backend.DeviceInfo) {
	t.Helper()
	if _, err := openDriver(); err != nil {
		t.Skipf("no driver: %v", err)
	}
	b := &Backend{}
	var info backend.DeviceInfo
	var err error
	start := time.Now()
	w.do(func() { info, err = b.Open(backend.Config{Rank: dev, Ranks: 2, Device: dev}) })
	if err != nil {
		if errors.Is(err, backend.ErrNotSupported) {
			t.Skipf("device %d: %v", dev, err)
		}
		t.Fatalf("Open(device %d): %v", dev, err)
	}
	t.Logf("device %d open in %v (cuInit %v, module load/JIT %v): %s %s %s %d SMs %.1f GiB driver %s",
		dev, time.Since(start).Round(time.Millisecond), b.tInit.Round(time.Millisecond), b.tModule.Round(time.Millisecond), info.Name, info.Arch, info.UUID, info.Units,
		float64(info.MemBytes)/(1<<30), info.Driver)
	t.Cleanup(func() {
		w.do(func() {
			if err := b.Close(); err != nil && !faulted[b] {
				t.Errorf("Close(device %d): %v", dev, err)
			}
		})
	})
	return b, info
}

// faulted marks backends whose context a negative control killed on
// purpose: their Close reports the sticky error, which is expected.
var faulted = map[*Backend]bool{}

func openPair(t *testing.T) (w0, w1 *worker, b0, b1 *Backend, i0 backend.DeviceInfo) {
	w0, w1 = newWorker(t), newWorker(t)
	b0, i0 = openDevice(t, w0, 0)
	if i0.Count < 2 {
		t.Skipf("%d device(s): need 2", i0.Count)
	}
	b1, _ = openDevice(t, w1, 1)
	return
}

func TestDeviceInfo(t *testing.T) {
	w := newWorker(t)
	_, info := openDevice(t, w, 0)
	keys := make([]string, 0, len(info.Attrs))
	for k, v := range info.Attrs {
		keys = append(keys, k+"="+v)
	}
	t.Logf("attrs: %s", strings.Join(sortStrings(keys), " "))
	if info.Vendor != "nvidia" || !strings.HasPrefix(info.Arch, "sm_") || !strings.HasPrefix(info.UUID, "GPU-") || info.Units == 0 || info.MemBytes == 0 {
		t.Errorf("info %+v", info)
	}
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// TestDeviceVMMAtomics: a vmm allocation on device 0, exported as a POSIX
// fd, imported by the backend of device 1, then system-scope atomic adds
// from both GPUs at once on one counter; the sum must be exact. Also moves
// bytes through the peer mapping (Write on 0, Read and Copy on 1) and checks
// that free memory comes back.
func TestDeviceVMMAtomics(t *testing.T) {
	for _, kind := range []string{KindVMM, KindVMMHost} {
		t.Run(kind, func(t *testing.T) { testVMMAtomics(t, kind) })
	}
}

func testVMMAtomics(t *testing.T, kind string) {
	w0, w1, b0, b1, i0 := openPair(t)
	const size = 64 << 20
	p := &vmmPair{w0: w0, w1: w1, b0: b0, b1: b1, i0: i0, kind: kind, size: size}
	var free0Before, free1Before uint64
	w0.do(func() { free0Before, _, _ = b0.MemInfo() })
	w1.do(func() { free1Before, _, _ = b1.MemInfo() })
	p.share(t)
	p.bytesThrough(t)
	p.counter(t)
	p.free(t)
	var free0After, free1After uint64
	w0.do(func() { free0After, _, _ = b0.MemInfo() })
	w1.do(func() { free1After, _, _ = b1.MemInfo() })
	t.Logf("free memory device 0: %d -> %d, device 1: %d -> %d", free0Before, free0After, free1Before, free1After)
	for i, p := range [][2]uint64{{free0Before, free0After}, {free1Before, free1After}} {
		if diff := int64(p[0]) - int64(p[1]); diff > 2<<20 || diff < -(2<<20) {
			t.Errorf("device %d leaked %d bytes", i, diff)
		}
	}
}

// vmmPair is testVMMAtomics' state: two devices on their own locked
// threads, device 0's buffer of kind and device 1's import of it.
type vmmPair struct {
	w0, w1    *worker
	b0, b1    *Backend
	i0        backend.DeviceInfo
	kind      string
	size      uint64
	own, peer backend.Buffer
}

// share allocates on device 0 and imports on device 1 through a dup of the
// exported fd, as a broker would pass it; Import must close the fd.
func (p *vmmPair) share(t *testing.T) {
	w0, w1, b0, b1, kind, size := p.w0, p.w1, p.b0, p.b1, p.kind, p.size
	var exp backend.Export
	var err error
	start := time.Now()
	w0.do(func() { p.own, exp, err = b0.Alloc(kind, size) })
	if errors.Is(err, backend.ErrNotSupported) {
		t.Skipf("%s: %v", kind, err)
	}
	if err != nil {
		t.Fatalf("Alloc(%s): %v", kind, err)
	}
	tAlloc := time.Since(start)
	t.Logf("alloc %s: addr %#x size %d fd %d meta %v", kind, p.own.Addr(), p.own.Size(), exp.Fd, exp.Meta)
	if exp.Fd < 0 {
		t.Fatal("no fd exported")
	}
	// What a broker would do: the fd travels; the importer gets its own.
	fd, err := unix.FcntlInt(uintptr(exp.Fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(exp.Fd)
	imp := exp
	imp.Fd = fd
	start = time.Now()
	w1.do(func() { p.peer, err = b1.Import(kind, imp, true) })
	if err != nil {
		t.Fatalf("Import on device 1: %v", err)
	}
	tImport := time.Since(start)
	t.Logf("import on device 1: addr %#x size %d (alloc+export %v, import+map+access %v)", p.peer.Addr(), p.peer.Size(), tAlloc, tImport)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		t.Error("Import left the fd open")
	}
}

// bytesThrough: device 0 writes, device 1 reads the same bytes through its
// mapping, then copies within the mapping with its copy engine.
func (p *vmmPair) bytesThrough(t *testing.T) {
	w0, w1, b0, b1, own, peer, size := p.w0, p.w1, p.b0, p.b1, p.own, p.peer, p.size
	var err error
	pattern := make([]byte, 4096)
	for i := range pattern {
		pattern[i] = byte(i*31 + 7)
	}
	w0.do(func() { err = b0.Write(own, 1<<20, pattern) })
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(pattern))
	w1.do(func() { err = b1.Read(peer, 1<<20, got) })
	if err != nil {
		t.Fatalf("Read through device 1's mapping: %v", err)
	}
	if string(got) != string(pattern) {
		t.Fatal("device 1 read different bytes than device 0 wrote")
	}
	// Copy engine, device 1 pulling the whole buffer into the start of itself
	// would overlap; copy the second half to the first half instead.
	var cr backend.LaunchResult
	w1.do(func() { cr, err = b1.Copy(peer, 0, peer, size/2, size/2) })
	if err != nil {
		t.Fatalf("Copy on device 1: %v", err)
	}
	t.Logf("copy %d MiB within the peer mapping from device 1: %v (%.1f GB/s, %s)", size/2>>20, cr.Elapsed,
		float64(size/2)/cr.Elapsed.Seconds()/1e9, cr.Method)
}

// counter: both devices add to the one counter at once, each through its
// own address of it; both views must read every add.
func (p *vmmPair) counter(t *testing.T) {
	w0, w1, b0, b1, own, peer, i0, kind := p.w0, p.w1, p.b0, p.b1, p.own, p.peer, p.i0, p.kind
	var err error
	zero := make([]byte, 8)
	w0.do(func() { err = b0.Write(own, 0, zero) })
	if err != nil {
		t.Fatal(err)
	}
	k := kernels.MustLookup("add_u64_relaxed_sys")
	grid, block := uint32(2*i0.Units), uint32(256)
	const iters = 100
	args := func(target uint64, salt uint64) []uint64 {
		a := make([]uint64, len(k.Args))
		a[k.ArgIndex("target")] = target
		a[k.ArgIndex("out")] = 0 // unused by add
		a[k.ArgIndex("operand")] = 1
		a[k.ArgIndex("iters")] = iters
		a[k.ArgIndex("block")] = uint64(block)
		a[k.ArgIndex("salt")] = salt
		return a
	}
	var wg sync.WaitGroup
	var r0, r1 backend.LaunchResult
	var e0, e1 error
	wg.Add(2)
	start := time.Now()
	go w0.do(func() { defer wg.Done(); r0, e0 = b0.Launch(k, grid, block, args(own.Addr(), 0)) })
	go w1.do(func() { defer wg.Done(); r1, e1 = b1.Launch(k, grid, block, args(peer.Addr(), 1)) })
	wg.Wait()
	wall := time.Since(start)
	for _, e := range []error{e0, e1} {
		if errors.Is(e, backend.ErrNotSupported) {
			t.Skipf("launch: %v", e)
		}
		if e != nil {
			t.Fatalf("launch: %v", e)
		}
	}
	want := 2 * uint64(grid) * uint64(block) * iters
	var c0, c1 [8]byte
	w0.do(func() { err = b0.Read(own, 0, c0[:]) })
	if err != nil {
		t.Fatal(err)
	}
	w1.do(func() { err = b1.Read(peer, 0, c1[:]) })
	if err != nil {
		t.Fatal(err)
	}
	g0, g1 := binary.LittleEndian.Uint64(c0[:]), binary.LittleEndian.Uint64(c1[:])
	t.Logf("%s: %d×%d threads × %d adds from each GPU: counter %d (device 0 view) %d (device 1 view), want %d; "+
		"kernel %v on device 0, %v on device 1 (%s), wall %v", k.Name, grid, block, iters, g0, g1, want, r0.Elapsed, r1.Elapsed, r0.Method, wall)
	if g0 != want || g1 != want {
		if kind == KindVMMHost && i0.Attrs["host_native_atomic_supported"] == "0" {
			// Measured on the 2×H200 VM: system-scope atomics from two GPUs
			// on HOST_NUMA memory lose updates there. Reported, not failed:
			// whether that is a pass is the spec's call.
			t.Logf("FINDING: %s lost %d of %d updates (host_native_atomic_supported=0)", kind, want-g0, want)
		} else {
			t.Errorf("counter %d / %d, want %d", g0, g1, want)
		}
	}
}

// free releases the import and the buffer; a second Free must fail.
func (p *vmmPair) free(t *testing.T) {
	var err error
	p.w1.do(func() { err = p.b1.Free(p.peer) })
	if err != nil {
		t.Errorf("Free(import): %v", err)
	}
	p.w0.do(func() { err = p.b0.Free(p.own) })
	if err != nil {
		t.Errorf("Free(own): %v", err)
	}
	p.w0.do(func() { err = p.b0.Free(p.own) })
	if err == nil {
		t.Error("double Free succeeded")
	}
}

// TestDeviceKinds allocates every kind on device 0 and frees it; for the
// dma-buf kind it checks what /proc/self/fdinfo says about the fd.
func TestDeviceKinds(t *testing.T) {
	w := newWorker(t)
	b, _ := openDevice(t, w, 0)
	for _, kind := range b.Kinds() {
		var buf backend.Buffer
		var exp backend.Export
		var err error
		w.do(func() { buf, exp, err = b.Alloc(kind, 3<<20) })
		if errors.Is(err, backend.ErrNotSupported) {
			t.Logf("%s: skip: %v", kind, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		note := ""
		if exp.Fd >= 0 {
			if fi, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", exp.Fd)); err == nil {
				note = strings.Join(strings.Fields(string(fi)), " ")
			}
			unix.Close(exp.Fd)
		}
		t.Logf("%s: addr %#x size %d fd %d handle %d bytes meta %v fdinfo [%s]", kind, buf.Addr(), buf.Size(), exp.Fd, len(exp.Handle), exp.Meta, note)
		if kind == KindDmaBuf && !strings.Contains(note, "exp_name") {
			t.Errorf("dmabuf fd has no exp_name in fdinfo: %s", note)
		}
		if kind == KindIPC && len(exp.Handle) != 64 {
			t.Errorf("ipc handle %d bytes", len(exp.Handle))
		}
		w.do(func() { err = b.Free(buf) })
		if err != nil {
			t.Errorf("%s: Free: %v", kind, err)
		}
	}
	var err error
	w.do(func() { _, err = b.Import(KindDmaBuf, backend.Export{Fd: -1}, true) })
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("dmabuf import: %v", err)
	}
}

// TestDeviceNoGrantFaults is the negative control: device 1 maps device 0's
// vmm allocation without cuMemSetAccess, and a kernel touching it must come
// back as a GPU fault (CUDA_ERROR_ILLEGAL_ADDRESS, 700). The sticky error
// poisons the process (both contexts) for the rest of its life, so it runs only when asked for by
// name (-test.run NoGrant) and never with the other device tests.
func TestDeviceNoGrantFaults(t *testing.T) {
	if !strings.Contains(flagRun(), "NoGrant") {
		t.Skip("poisons the context: run alone with -test.run NoGrant")
	}
	w0, w1, b0, b1, _ := openPair(t)
	var own, peer backend.Buffer
	var exp backend.Export
	var err error
	w0.do(func() { own, exp, err = b0.Alloc(KindVMM, 2<<20) })
	if err != nil {
		t.Fatal(err)
	}
	w1.do(func() { peer, err = b1.Import(KindVMM, exp, false) })
	if err != nil {
		t.Fatal(err)
	}
	k := kernels.MustLookup("add_u64_relaxed_sys")
	a := make([]uint64, len(k.Args))
	a[k.ArgIndex("target")], a[k.ArgIndex("operand")], a[k.ArgIndex("iters")], a[k.ArgIndex("block")] = peer.Addr(), 1, 1, 32
	// A sticky error poisons the whole process, not only device 1's
	// context: measured on 2×H200, device 0's teardown then reports 700 too.
	faulted[b0], faulted[b1] = true, true
	w1.do(func() { _, err = b1.Launch(k, 1, 32, a) })
	var f *backend.Fault
	if !errors.As(err, &f) {
		t.Fatalf("launch on an ungranted mapping: want a GPU fault, got %v", err)
	}
	t.Logf("negative control: %v (fault %+v)", err, *f)
	if f.Code != 700 || f.Name != "CUDA_ERROR_ILLEGAL_ADDRESS" || f.Vendor != "nvidia" || f.Kind != "gpu" {
		t.Errorf("fault %+v", *f)
	}
	w0.do(func() { err = b0.Free(own) })
	t.Logf("device 0 Free after device 1's fault: %v", err)
}

func flagRun() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
}

// TestDeviceCPUWord: a vmm-host allocation gets a CPU pointer after the CPU
// is granted access; what the CPU stores the device reads back and what the
// device writes the CPU loads. Device memory has no CPU pointer.
func TestDeviceCPUWord(t *testing.T) {
	w := newWorker(t)
	b, info := openDevice(t, w, 0)
	t.Logf("host_native_atomic_supported=%s", info.Attrs["host_native_atomic_supported"])
	var err error
	var buf backend.Buffer
	w.do(func() { buf, _, err = b.Alloc(KindVMM, 2<<20) })
	if err != nil {
		t.Fatalf("vmm alloc: %v", err)
	}
	w.do(func() { _, err = b.CPUWord(buf, 0) })
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Errorf("CPUWord on vmm memory: %v, want ErrNotSupported", err)
	}
	w.do(func() { _ = b.Free(buf) })
	var exp backend.Export
	w.do(func() { buf, exp, err = b.Alloc(KindVMMHost, 2<<20) })
	if errors.Is(err, backend.ErrNotSupported) {
		t.Skipf("vmm-host: %v", err)
	}
	if err != nil {
		t.Fatalf("vmm-host alloc: %v", err)
	}
	if exp.Fd >= 0 {
		unix.Close(exp.Fd)
	}
	defer w.do(func() { _ = b.Free(buf) })
	var p *uint64
	w.do(func() { p, err = b.CPUWord(buf, 4096) })
	if err != nil {
		t.Fatalf("CPUWord on vmm-host memory: %v", err)
	}
	atomic.StoreUint64(p, 0x1122334455667788)
	got := make([]byte, 8)
	w.do(func() { err = b.Read(buf, 4096, got) })
	if err != nil || binary.LittleEndian.Uint64(got) != 0x1122334455667788 {
		t.Fatalf("device read of a CPU store: %x, %v", got, err)
	}
	binary.LittleEndian.PutUint64(got, 0x99aabbccddeeff00)
	w.do(func() { err = b.Write(buf, 4096, got) })
	if v := atomic.LoadUint64(p); err != nil || v != 0x99aabbccddeeff00 {
		t.Fatalf("CPU load of a device write: %#x, %v", v, err)
	}
	atomic.AddUint64(p, 1)
	t.Logf("vmm-host word at %p: CPU and device agree (%#x)", p, atomic.LoadUint64(p))
}
