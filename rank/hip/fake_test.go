package hip

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"p2patomics/internal/binding"
	"p2patomics/internal/hsaabi"
	"p2patomics/rank/backend"
)

// fakeLib binds the binding table to Go fakes (by symbol name): the tests
// below drive the backend's own logic through the same Status values a
// real libamdhip64 gives. A call to a symbol without a fake fails the test.
func fakeLib(t *testing.T, fns map[string]any) *lib {
	t.Helper()
	all := map[string]any{
		"hipGetErrorName":   func(uint32) uintptr { return 0 },
		"hipGetErrorString": func(uint32) uintptr { return 0 },
	}
	for k, v := range fns {
		all[k] = v
	}
	l := &lib{name: "fake", path: "fake", missing: map[string]string{}}
	if err := binding.BindFuncs(l.symbols(), all, func(n string) { t.Errorf("unexpected call to %s", n) }); err != nil {
		t.Fatal(err)
	}
	return l
}

// vmmFakes is a HIP VMem that works: handles and addresses count up, the
// export hands out a real fd (a pipe end) the test can close.
func vmmFakes(t *testing.T, granularity func(*uint64, *allocProp, uint32) uint32, create func(*uintptr, uint64, *allocProp, uint64) uint32) map[string]any {
	next := uintptr(0x1000)
	return map[string]any{
		"hipMemGetAllocationGranularity": granularity,
		"hipMemCreate":                   create,
		"hipMemAddressReserve": func(p *uintptr, size, align uint64, addr uintptr, flags uint64) uint32 {
			next += 0x10000000
			*p = next
			return errSuccess
		},
		"hipMemMap":         func(p uintptr, size, off uint64, h uintptr, flags uint64) uint32 { return errSuccess },
		"hipMemSetAccess":   func(p uintptr, size uint64, d *accessDesc, n uint64) uint32 { return errSuccess },
		"hipMemUnmap":       func(p uintptr, size uint64) uint32 { return errSuccess },
		"hipMemAddressFree": func(p uintptr, size uint64) uint32 { return errSuccess },
		"hipMemRelease":     func(h uintptr) uint32 { return errSuccess },
		"hipMemExportToShareableHandle": func(out unsafe.Pointer, h uintptr, typ uint32, flags uint64) uint32 {
			var p [2]int
			if err := syscall.Pipe(p[:]); err != nil {
				t.Fatal(err)
			}
			syscall.Close(p[1])
			*(*int32)(out) = int32(p[0])
			return errSuccess
		},
	}
}

// clr6Granularity is CLR 6.2–6.4's hipMemGetAllocationGranularity: every
// type but Pinned is hipErrorInvalidValue (hip_vm.cpp, rocm-6.2.0 188-196).
func clr6Granularity(g *uint64, p *allocProp, opt uint32) uint32 {
	if p.Type != allocTypePinned {
		return errInvalidValue
	}
	*g = 2 << 20
	return errSuccess
}

// TestUncachedOnCLR6IsASkip (issue 17, defect 1): on a CLR 6.x runtime
// hip.uncached must end in ErrNotSupported (hipMemCreate rejects the type),
// not in the granularity query's plain error.
func TestUncachedOnCLR6IsASkip(t *testing.T) {
	var created []uint32
	create := func(h *uintptr, size uint64, p *allocProp, flags uint64) uint32 {
		created = append(created, p.Type)
		if p.Type != allocTypePinned {
			return errInvalidValue
		}
		*h = 0x42
		return errSuccess
	}
	b := &Backend{l: fakeLib(t, vmmFakes(t, clr6Granularity, create)), version: 60443484, bufs: map[*buffer]bool{}}
	_, _, err := b.Alloc(kindUncached, 4096)
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "hipMemCreate rejected hipMemAllocationTypeUncached") {
		t.Fatalf("uncached on CLR 6.4: %v, want the ErrNotSupported from hipMemCreate", err)
	}
	if len(created) != 1 || created[0] != allocTypeUncached {
		t.Fatalf("hipMemCreate saw types %v, want one Uncached", created)
	}
	buf, exp, err := b.Alloc(kindPinned, 4096)
	if err != nil || buf.Size() != 2<<20 {
		t.Fatalf("pinned: %v (size %v)", err, buf)
	}
	syscall.Close(exp.Fd)
	if err := b.Free(buf); err != nil {
		t.Fatal(err)
	}
}

// pointerReaderImport is a CLR that reads osHandle as an int* (6.x) and
// whose first import fails for a reason of its own. It fails the test, and
// does not dereference, if osHandle is a small integer (in the null page,
// where every test fd lies): that is the SIGSEGV the old retry caused.
func pointerReaderImport(t *testing.T, calls *[]uintptr, fails *int) func(*uintptr, uintptr, uint32) uint32 {
	return func(h *uintptr, osHandle uintptr, typ uint32) uint32 {
		*calls = append(*calls, osHandle)
		if osHandle < 4096 {
			t.Errorf("import passed %#x as osHandle: a pointer-reading CLR dereferences it (SIGSEGV)", osHandle)
			return errInvalidValue
		}
		fd := *(*int32)(ptr(osHandle))
		var st syscall.Stat_t
		if err := syscall.Fstat(int(fd), &st); err != nil {
			return errInvalidValue
		}
		if *fails > 0 {
			*fails--
			return errInvalidValue
		}
		*h = 0x77
		return errSuccess
	}
}

// valueReaderImport is a CLR that takes the fd by value (7.2).
func valueReaderImport(calls *[]uintptr) func(*uintptr, uintptr, uint32) uint32 {
	return func(h *uintptr, osHandle uintptr, typ uint32) uint32 {
		*calls = append(*calls, osHandle)
		fd := int32(uint32(osHandle))
		var st syscall.Stat_t
		if fd < 0 || syscall.Fstat(int(fd), &st) != nil {
			return errInvalidValue
		}
		*h = 0x88
		return errSuccess
	}
}

// TestImportConventionDecidedAtOpen (issue 17, defect 6): on a 7.0/7.1
// runtime the convention is decided once by a self export/import; a
// pointer-reading runtime whose import fails is never handed a small
// integer, and later imports use the decided form without a retry.
func TestImportConventionDecidedAtOpen(t *testing.T) {
	if _, err := (&Backend{}).cell(); err != nil {
		t.Skipf("cannot reserve the fd cell here: %v", err)
	}
	for _, c := range []struct {
		name  string
		fails int
		value bool
		want  importMode
		err   string
	}{
		{"pointer reader", 0, false, importPointer, ""},
		{"value reader", 0, true, importValue, ""},
		{"pointer reader whose imports fail", 99, false, importProbe, "fails in both fd conventions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []uintptr
			fails := c.fails
			fns := vmmFakes(t, clr6Granularity, func(h *uintptr, size uint64, p *allocProp, flags uint64) uint32 { *h = 0x42; return errSuccess })
			if c.value {
				fns["hipMemImportFromShareableHandle"] = valueReaderImport(&calls)
			} else {
				fns["hipMemImportFromShareableHandle"] = pointerReaderImport(t, &calls, &fails)
			}
			b := &Backend{l: fakeLib(t, fns), version: 70153211, mode: importModeFor(70153211), bufs: map[*buffer]bool{}}
			err := b.decideImport()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("decideImport: %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || b.mode != c.want {
				t.Fatalf("decideImport: %v, mode %v, want %v", err, b.mode, c.want)
			}
			if len(b.bufs) != 0 {
				t.Errorf("the probe's buffer was not freed")
			}
			// An import afterwards is one call in the decided form.
			calls = nil
			var p [2]int
			syscall.Pipe(p[:])
			defer syscall.Close(p[1])
			buf, err := b.Import(kindPinned, backend.Export{Fd: p[0], Size: 2 << 20}, true)
			if err != nil || len(calls) != 1 {
				t.Fatalf("Import: %v after %d import calls", err, len(calls))
			}
			b.Free(buf)
		})
	}
}

// TestProbeFd: the descriptor number is also the address of an int holding
// -1 (an invalid fd to a pointer-reading CLR), and the descriptor is the
// same file.
func TestProbeFd(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "dual")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lim := fdLimits()
	d, undo, err := probeFd(int(f.Fd()), lim)
	if err != nil {
		t.Skipf("no probe fd here: %v", err)
	}
	defer undo()
	if uintptr(d) < dualMinFd(4096, lim.mmapMinAddr) || *(*int32)(ptr(uintptr(d))) != -1 {
		t.Fatalf("fd %#x, int at that address %#x", d, *(*int32)(ptr(uintptr(d))))
	}
	var a, b syscall.Stat_t
	syscall.Fstat(int(f.Fd()), &a)
	if err := syscall.Fstat(d, &b); err != nil || a.Ino != b.Ino {
		t.Fatalf("fd %#x is not the same file: %v", d, err)
	}
	// 65536/65536 (Debian's mmap_min_addr, a common HPC nofile limit):
	// no candidate, and the error names both limits.
	if _, _, err := probeFd(int(f.Fd()), limits{noFile: 65536, mmapMinAddr: 65536}); err == nil ||
		!strings.Contains(err.Error(), "vm.mmap_min_addr 65536") || !strings.Contains(err.Error(), "RLIMIT_NOFILE 65536") {
		t.Fatalf("probeFd at 65536/65536: %v", err)
	}
}

// TestDecideImportAfterOneFailure (issue 30, N2): a pointer-reading CLR
// whose first import fails once for a reason of its own must not be decided
// as fd-value (a44624c did, and its next import handed CLR 0x7 to
// dereference); the value probe fails safely under it, so Open says both
// forms failed. P2PAT_HIP_IMPORT decides without a probe.
func TestDecideImportAfterOneFailure(t *testing.T) {
	if _, err := (&Backend{}).cell(); err != nil {
		t.Skipf("cannot reserve the fd cell here: %v", err)
	}
	mk := func(fails int, calls *[]uintptr) *Backend {
		fns := vmmFakes(t, clr6Granularity, func(h *uintptr, size uint64, p *allocProp, flags uint64) uint32 { *h = 0x42; return errSuccess })
		fns["hipMemImportFromShareableHandle"] = pointerReaderImport(t, calls, &fails)
		return &Backend{l: fakeLib(t, fns), version: 70153211, mode: importProbe, bufs: map[*buffer]bool{}}
	}
	var calls []uintptr
	b := mk(1, &calls)
	err := b.decideImport()
	if b.mode == importValue {
		t.Fatalf("decided fd-value on a pointer-reading CLR (calls %#x)", calls)
	}
	if err == nil || !strings.Contains(err.Error(), "fails in both fd conventions") {
		t.Fatalf("decideImport: %v", err)
	}
	for _, v := range []struct {
		env  string
		want importMode
	}{{"pointer", importPointer}, {"value", importValue}} {
		t.Setenv(importEnv, v.env)
		calls = nil
		b := mk(0, &calls)
		if err := b.decideImport(); err != nil || b.mode != v.want || len(calls) != 0 {
			t.Errorf("%s=%s: %v, mode %v, %d probe imports", importEnv, v.env, err, b.mode, len(calls))
		}
	}
	t.Setenv(importEnv, "maybe")
	if err := mk(0, &calls).decideImport(); err == nil || !strings.Contains(err.Error(), "want pointer or value") {
		t.Errorf("bad override: %v", err)
	}
}

// TestROCmLibDirs (issue 17, defect 7): $ROCM_PATH/lib, then /opt/rocm/lib.
func TestROCmLibDirs(t *testing.T) {
	t.Setenv("ROCM_PATH", "/x/rocm-7.2")
	if got := strings.Join(binding.ROCmLibDirs(), " "); got != "/x/rocm-7.2/lib /opt/rocm/lib" {
		t.Fatal(got)
	}
	t.Setenv("ROCM_PATH", "")
	if got := strings.Join(binding.ROCmLibDirs(), " "); got != "/opt/rocm/lib" {
		t.Fatal(got)
	}
}

// TestPeerCapsFromP2PAttribute (issue 30, N3): peer access and P2P atomics
// are hipDeviceGetP2PAttribute's answers, so a PCIe pair without native
// atomics skips the P2P atomic cases as not supported, naming the
// attribute. On a44624c every pair was "yes".
func TestPeerCapsFromP2PAttribute(t *testing.T) {
	const xgmi, pcie = 4, hsaabi.LinkTypePCIe
	for _, c := range []struct {
		name            string
		access, atomic  int32
		link            uint32
		env             string
		okAcc, okAtomic bool
		reason          string
	}{
		{"xgmi", 1, 1, xgmi, "", true, true, "hipDevP2PAttrNativeAtomicSupported, 0, 1) is 1"},
		{"pcie without atomics", 1, 0, pcie, "", true, false, "hipDevP2PAttrNativeAtomicSupported, 0, 1) is 0"},
		{"no p2p", 0, 0, pcie, "", false, false, "hipDevP2PAttrAccessSupported, 0, 1) is 0"},
		// Issue 40, P9: CLR's 1 on PCIe is KFD's root-port bit.
		{"pcie with atomics", 1, 1, pcie, "", true, false, "root complex routes them peer to peer"},
		{"pcie with atomics, asked", 1, 1, pcie, "1", true, true, "hipDevP2PAttrNativeAtomicSupported, 0, 1) is 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(hsaabi.PCIeAtomicsEnv, c.env)
			l := fakeLib(t, map[string]any{"hipDeviceGetP2PAttribute": func(v *int32, attr uint32, src, dst int32) uint32 {
				if src != 0 || dst != 1 {
					t.Errorf("asked for %d→%d", src, dst)
				}
				*v = map[uint32]int32{p2pAttrAccessSupported: c.access, p2pAttrNativeAtomic: c.atomic}[attr]
				return errSuccess
			}, "hipExtGetLinkTypeAndHopCount": func(d1, d2 int32, typ, hops *uint32) uint32 {
				*typ, *hops = c.link, 1
				return errSuccess
			}})
			b := &Backend{l: l, cfg: backend.Config{Device: 0}}
			p := b.peer(1)
			if p.Access.OK != c.okAcc || p.Atomics.OK != c.okAtomic {
				t.Fatalf("access %+v atomics %+v", p.Access, p.Atomics)
			}
			if !strings.Contains(p.Atomics.Reason, c.reason) {
				t.Errorf("atomics reason %q, want %q", p.Atomics.Reason, c.reason)
			}
		})
	}
}

// TestCopyNamesTheEngine (issue 30, N1): the copy metric's method says
// which engine CLR uses for a copy with an imported VMem side (a44624c:
// "hip-events" alone).
func TestCopyNamesTheEngine(t *testing.T) {
	ok := func() uint32 { return errSuccess }
	l := fakeLib(t, map[string]any{
		"hipEventCreate":      func(e *uintptr) uint32 { *e = 1; return errSuccess },
		"hipEventDestroy":     func(e uintptr) uint32 { return ok() },
		"hipEventRecord":      func(e, s uintptr) uint32 { return ok() },
		"hipEventSynchronize": func(e uintptr) uint32 { return ok() },
		"hipEventElapsedTime": func(ms *float32, a, b uintptr) uint32 { *ms = 2; return errSuccess },
		"hipMemcpyDtoDAsync":  func(d, s uintptr, n uint64, st uintptr) uint32 { return ok() },
	})
	b := &Backend{l: l}
	res, err := b.Copy(&buffer{va: 0x1000, size: 4096}, 0, &buffer{va: 0x9000, size: 4096}, 0, 4096)
	if err != nil || !strings.Contains(res.Method, "blit kernel") {
		t.Fatalf("Copy: %v, method %q", err, res.Method)
	}
}

// TestNoDeviceNamesKFD (issue 30, N7): hipErrorNoDevice with a /dev/kfd
// that exists but cannot be opened says so and names the groups, instead
// of "no AMD GPU" (a44624c).
func TestNoDeviceNamesKFD(t *testing.T) {
	old := openKFD
	t.Cleanup(func() { openKFD = old })
	for _, c := range []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: "/dev/kfd", Err: syscall.EACCES}, "cannot be opened (open /dev/kfd: permission denied): add the user to the render and video groups"},
		{&os.PathError{Op: "open", Path: "/dev/kfd", Err: syscall.ENOENT}, "no AMD GPU (no /dev/kfd)"},
		{nil, "although /dev/kfd opens"},
	} {
		openKFD = func() error { return c.err }
		if got := kfdWhy(); !strings.Contains(got, c.want) {
			t.Errorf("open error %v: %q, want %q", c.err, got, c.want)
		}
	}
}

// TestInterruptsOffIsRefused (issue 40, review 3 P7): with
// HSA_ENABLE_INTERRUPT=0 the hip backend's Open refuses, naming the
// variable, before loading anything; at ce5f99b it opened (or skipped for
// another reason) and every GPU fault would wait out the case timeout.
func TestInterruptsOffIsRefused(t *testing.T) {
	t.Setenv("HSA_ENABLE_INTERRUPT", "0")
	_, err := (&Backend{}).Open(backend.Config{Ranks: 1})
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "HSA_ENABLE_INTERRUPT=0") {
		t.Fatalf("Open with HSA_ENABLE_INTERRUPT=0: %v", err)
	}
	t.Setenv("HSA_ENABLE_INTERRUPT", "1")
	if err := interruptsOn(); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceUUIDIsROCrs (issue 50, Q5): CLR fills hipDeviceProp_tR0600.uuid
// with the 16 characters after "GPU-" of ROCr's agent UUID (clr
// rocdevice.cpp), so the hip backend must report "GPU-" and those
// characters: the string the hsa backend (HSA_AMD_AGENT_INFO_UUID),
// rocminfo and rocm-smi report, which keys the device-lock file a hip and
// an hsa suite on one GPU share. Planted: "GPU-%x" of the bytes (the code
// before the fix) reports GPU-3866306533... (red).
func TestDeviceUUIDIsROCrs(t *testing.T) {
	const agent = "GPU-8f0e3a1b2c3d4e5f" // what ROCr's agent says (the hsa backend's UUID)
	l := fakeLib(t, map[string]any{
		"hipGetDevicePropertiesR0600": func(p unsafe.Pointer, dev int32) uint32 {
			buf := unsafe.Slice((*byte)(p), propBufSize)
			copy(buf[propR0600Name:], "AMD Instinct MI300X\x00")
			copy(buf[propR0600GcnArch:], "gfx942:sramecc+:xnack-\x00")
			copy(buf[propR0600UUID:propR0600UUID+16], agent[len("GPU-"):])
			return errSuccess
		},
		"hipDriverGetVersion": func(v *int32) uint32 { *v = 60443484; return errSuccess },
	})
	b := &Backend{l: l, version: 60443484}
	info := b.deviceInfo(1)
	if info.UUID != agent {
		t.Fatalf("hip reports UUID %q, the hsa backend and rocm-smi %q: two lock files for one GPU", info.UUID, agent)
	}
	if b.hipUUID() != agent {
		t.Errorf("hipUUID %q, want %q (hsa-fine's agent match)", b.hipUUID(), agent)
	}
}
