package hip

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/amdabi"
	"p2patomics/internal/binding"
	"p2patomics/internal/hsaabi"
	"p2patomics/rank/backend"
)

// fakeMem hands out mmap'd memory (the fakes' device memory: a vmem
// reservation, a hipMalloc) and says which allocation an address is in.
type fakeMem struct {
	t     *testing.T
	spans [][]byte
	kind  []string
}

func (m *fakeMem) get(n int, kind string) uintptr {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { syscall.Munmap(b) })
	m.spans, m.kind = append(m.spans, b), append(m.kind, kind)
	return uintptr(unsafe.Pointer(&b[0]))
}

// at is the n bytes at address a, and the kind of allocation they lie in
// ("" and nil when they lie in none).
func (m *fakeMem) at(a uintptr, n uint64) ([]byte, string) {
	for i, b := range m.spans {
		lo := uintptr(unsafe.Pointer(&b[0]))
		if a >= lo && uint64(a-lo)+n <= uint64(len(b)) {
			return b[a-lo : uint64(a-lo)+n], m.kind[i]
		}
	}
	return nil, ""
}

// fakeAgentHSA is one agent of the fake ROCr: its device type, UUID and
// pools (handle -> GLOBAL_FLAGS).
type fakeAgentHSA struct {
	handle uint64
	dev    uint32
	uuid   string
	node   uint32
	pools  map[uint64]uint32
}

// fakeROCr is the hsa-fine kind's view of ROCr: agents and pools to find,
// vmem calls that hand out real memory and are recorded.
type fakeROCr struct {
	t       *testing.T
	mem     *fakeMem
	agents  []fakeAgentHSA
	vmemAPI uint8
	created []uint64              // the pool of each handle_create
	access  [][]hsaabi.AccessDesc // each set_access call's descriptors
	imports []int32
}

// twoGPUs is a CPU, then two MI300X-like GPUs, each with coarse,
// extended-scope and fine pools. HIP's device 0 (below) is the second GPU,
// as under HIP_VISIBLE_DEVICES=1: an ordinal match picks the wrong one.
func twoGPUs(t *testing.T, mem *fakeMem) *fakeROCr {
	return &fakeROCr{t: t, mem: mem, vmemAPI: 1, agents: []fakeAgentHSA{
		{handle: 0x100, dev: hsaabi.DeviceTypeCPU, uuid: "CPU-XX", pools: map[uint64]uint32{0x1001: hsaabi.GlobalFlagFineGrained}},
		{handle: 0x200, dev: hsaabi.DeviceTypeGPU, uuid: "GPU-aaaaaaaaaaaaaaaa", node: 2, pools: map[uint64]uint32{
			0x2001: hsaabi.GlobalFlagCoarseGrained, 0x2002: hsaabi.GlobalFlagExtScopeFine, 0x2003: hsaabi.GlobalFlagFineGrained}},
		{handle: 0x300, dev: hsaabi.DeviceTypeGPU, uuid: "GPU-1234abcd5678ef00", node: 3, pools: map[uint64]uint32{
			0x3001: hsaabi.GlobalFlagCoarseGrained, 0x3002: hsaabi.GlobalFlagExtScopeFine, 0x3003: hsaabi.GlobalFlagFineGrained}},
	}}
}

const hipDev0UUID = "1234abcd5678ef00" // the characters CLR copies after "GPU-"

func (f *fakeROCr) agent(h uint64) *fakeAgentHSA {
	for i := range f.agents {
		if f.agents[i].handle == h {
			return &f.agents[i]
		}
	}
	return nil
}

func (f *fakeROCr) pool(p uint64) (uint32, bool) {
	for _, a := range f.agents {
		if fl, ok := a.pools[p]; ok {
			return fl, true
		}
	}
	return 0, false
}

// lib binds the fake into an hsaLib (a call without a fake fails the test).
func (f *fakeROCr) lib() *hsaLib {
	ok := uint32(hsaabi.StatusSuccess)
	fns := map[string]any{
		"hsa_init":          func() uint32 { return ok },
		"hsa_status_string": func(uint32, *uintptr) uint32 { return 0x1000 },
		"hsa_system_get_info": func(attr uint32, v unsafe.Pointer) uint32 {
			if attr != hsaabi.AmdSystemInfoVirtualMemAPISupport {
				return 0x1001
			}
			*(*uint8)(v) = f.vmemAPI
			return ok
		},
		"hsa_iterate_agents": func(cb, data uintptr) uint32 {
			for _, a := range f.agents {
				purego.SyscallN(cb, uintptr(a.handle), data)
			}
			return ok
		},
		"hsa_agent_get_info": f.agentInfo,
		"hsa_amd_agent_iterate_memory_pools": func(h uint64, cb, data uintptr) uint32 {
			for p := range f.agent(h).pools {
				purego.SyscallN(cb, uintptr(p), data)
			}
			return ok
		},
		"hsa_amd_memory_pool_get_info": f.poolInfo,
	}
	for k, v := range f.vmemFakes() {
		fns[k] = v
	}
	h := &hsaLib{path: "fake-libhsa-runtime64.so.1"}
	if err := binding.BindFuncs(h.symbols(), fns, func(n string) { f.t.Errorf("unexpected call to %s", n) }); err != nil {
		f.t.Fatal(err)
	}
	return h
}

func (f *fakeROCr) agentInfo(h uint64, attr uint32, v unsafe.Pointer) uint32 {
	a := f.agent(h)
	if a == nil {
		return hsaabi.StatusErrorInvalidAgent
	}
	switch attr {
	case hsaabi.AgentInfoDevice:
		*(*uint32)(v) = a.dev
	case hsaabi.AgentInfoNode:
		*(*uint32)(v) = a.node
	case hsaabi.AmdAgentInfoUUID:
		copy(unsafe.Slice((*byte)(v), 21), a.uuid+"\x00")
	default:
		return 0x1001
	}
	return hsaabi.StatusSuccess
}

func (f *fakeROCr) poolInfo(p uint64, attr uint32, v unsafe.Pointer) uint32 {
	fl, known := f.pool(p)
	if !known {
		return 0x1001
	}
	switch attr {
	case hsaabi.PoolInfoSegment:
		*(*uint32)(v) = hsaabi.SegmentGlobal
	case hsaabi.PoolInfoGlobalFlags:
		*(*uint32)(v) = fl
	case hsaabi.PoolInfoAllocAllowed:
		*(*uint8)(v) = 1
	case hsaabi.PoolInfoAllocRecGranule:
		*(*uint64)(v) = 2 << 20
	default:
		return 0x1001
	}
	return hsaabi.StatusSuccess
}

// vmemFakes: a reservation is real memory (so the copy kernel's fake can
// move bytes in it), the export a real fd (a pipe end).
func (f *fakeROCr) vmemFakes() map[string]any {
	ok := uint32(hsaabi.StatusSuccess)
	return map[string]any{
		"hsa_amd_vmem_address_reserve": func(va *uintptr, size, addr, flags uint64) uint32 {
			*va = f.mem.get(int(size), "vmem")
			return ok
		},
		"hsa_amd_vmem_handle_create": func(pool, size uint64, typ uint32, flags uint64, out *uint64) uint32 {
			if typ != hsaabi.MemoryTypeNone {
				f.t.Errorf("handle_create type %d, want MEMORY_TYPE_NONE", typ)
			}
			f.created = append(f.created, pool)
			*out = pool<<8 | 1
			return ok
		},
		"hsa_amd_vmem_map":            func(va uintptr, size, off, h, flags uint64) uint32 { return ok },
		"hsa_amd_vmem_unmap":          func(va uintptr, size uint64) uint32 { return ok },
		"hsa_amd_vmem_address_free":   func(va uintptr, size uint64) uint32 { return ok },
		"hsa_amd_vmem_handle_release": func(h uint64) uint32 { return ok },
		"hsa_amd_vmem_set_access": func(va uintptr, size uint64, d *hsaabi.AccessDesc, n uint64) uint32 {
			f.access = append(f.access, append([]hsaabi.AccessDesc(nil), unsafe.Slice(d, n)...))
			return ok
		},
		"hsa_amd_vmem_export_shareable_handle": func(fd *int32, h, flags uint64) uint32 {
			var p [2]int
			if err := syscall.Pipe(p[:]); err != nil {
				f.t.Fatal(err)
			}
			syscall.Close(p[1])
			*fd = int32(p[0])
			return ok
		},
		"hsa_amd_vmem_import_shareable_handle": func(fd int32, out *uint64) uint32 {
			f.imports = append(f.imports, fd)
			*out = 0x9901
			return ok
		},
	}
}

// hipForHSA is the HIP side the hsa-fine path uses: hipMalloc, hipFree,
// hipMemcpyDtoH/HtoD (failing the test on any address outside a hipMalloc:
// HIP does not know HSA vmem addresses), and a module launch that runs
// copy_b128_plain_dev's effect (dst, src, nbytes) on the fake memory.
func hipForHSA(t *testing.T, mem *fakeMem, launches *int) *lib {
	ok := uint32(errSuccess)
	tracked := func(call string, a uintptr, n uint64) []byte {
		b, kind := mem.at(a, n)
		if kind != "hipMalloc" {
			t.Errorf("%s on %#x (%d bytes), which is not hipMalloc memory (%q): CLR would refuse it", call, a, n, kind)
		}
		return b
	}
	arg := func(params uintptr, i int) uint64 {
		return *(*uint64)(ptr(uintptr(*(*uint64)(ptr(params + uintptr(8*i))))))
	}
	// hipMemGetInfo follows hipMalloc and hipFree, as CLR's does (free
	// comes from HSA_AMD_AGENT_INFO_MEMORY_AVAIL, clr rocdevice.cpp).
	const total = 64 << 30
	live := map[uintptr]uint64{}
	return fakeLib(t, map[string]any{
		"hipMalloc": func(p *uintptr, n uint64) uint32 { *p = mem.get(int(n), "hipMalloc"); live[*p] = n; return ok },
		"hipFree":   func(p uintptr) uint32 { delete(live, p); return ok },
		"hipMemGetInfo": func(free, tot *uint64) uint32 {
			*free, *tot = total, total
			for _, n := range live {
				*free -= n
			}
			return ok
		},
		"hipMemcpyDtoH": func(dst unsafe.Pointer, src uintptr, n uint64) uint32 {
			copy(unsafe.Slice((*byte)(dst), n), tracked("hipMemcpyDtoH", src, n))
			return ok
		},
		"hipMemcpyHtoD": func(dst uintptr, src unsafe.Pointer, n uint64) uint32 {
			copy(tracked("hipMemcpyHtoD", dst, n), unsafe.Slice((*byte)(src), n))
			return ok
		},
		"hipModuleGetFunction": func(f *uintptr, m uintptr, name *byte) uint32 { *f = 0xf00; return ok },
		"hipModuleLaunchKernel": func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) uint32 {
			*launches++
			dst, src, n := arg(params, 0), arg(params, 1), arg(params, 2)
			d, dk := mem.at(uintptr(dst), n)
			s, sk := mem.at(uintptr(src), n)
			if d == nil || s == nil || n%16 != 0 {
				t.Errorf("copy kernel: %d bytes %#x (%s) <- %#x (%s)", n, dst, dk, src, sk)
				return errLaunchFailure
			}
			copy(d, s)
			return ok
		},
		"hipEventCreate":      func(e *uintptr) uint32 { *e = 1; return ok },
		"hipEventRecord":      func(e, s uintptr) uint32 { return ok },
		"hipEventSynchronize": func(e uintptr) uint32 { return ok },
		"hipEventElapsedTime": func(ms *float32, a, b uintptr) uint32 { return ok },
		"hipEventDestroy":     func(e uintptr) uint32 { return ok },
	})
}

// hsaBackend is a HIP backend on device 0 whose UUID is hipDev0UUID, over
// the two fakes.
func hsaBackend(t *testing.T, f *fakeROCr, launches *int) *Backend {
	params, err := newCmem(maxParams * 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(params.free)
	b := &Backend{l: hipForHSA(t, f.mem, launches), hl: f.lib(), params: params, funcs: map[string]uintptr{},
		bufs: map[*buffer]bool{}, hbufs: map[*hsaBuffer]bool{}}
	copy(b.uuid[:], hipDev0UUID)
	return b
}

// TestHSAFineFindsTheAgentByUUID: the allocation comes from the FINE pool
// of the agent whose UUID is HIP's device's (the second GPU, not the
// ordinal's first), and only that agent is granted. A wrong UUID is an
// error naming the agents' UUIDs, never a guess.
func TestHSAFineFindsTheAgentByUUID(t *testing.T) {
	f := twoGPUs(t, &fakeMem{t: t})
	b := hsaBackend(t, f, new(int))
	buf, exp, err := b.Alloc(kindHSAFine, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(exp.Fd)
	if len(f.created) != 1 || f.created[0] != 0x3003 {
		t.Errorf("handle_create pools %#x, want [0x3003] (the UUID-matched agent's FINE_GRAINED pool)", f.created)
	}
	if len(f.access) != 1 || len(f.access[0]) != 1 || f.access[0][0].Agent != 0x300 || f.access[0][0].Permissions != hsaabi.AccessPermissionRW {
		t.Errorf("set_access %+v, want one RW grant to agent 0x300 alone", f.access)
	}
	if exp.Meta["pool"] != "fine-grained" || exp.Meta["export"] != "dma-buf" || exp.Meta["node"] != "3" || buf.Size() != 2<<20 {
		t.Errorf("export %+v (size %d)", exp.Meta, buf.Size())
	}
	if err := b.Free(buf); err != nil {
		t.Fatal(err)
	}

	g := twoGPUs(t, &fakeMem{t: t})
	w := hsaBackend(t, g, new(int))
	copy(w.uuid[:], "ffffffffffffffff")
	_, _, err = w.Alloc(kindHSAFine, 4096)
	if err == nil || errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "GPU-ffffffffffffffff") || !strings.Contains(err.Error(), "GPU-1234abcd5678ef00") {
		t.Fatalf("unmatched UUID: %v, want an error naming HIP's UUID and the agents'", err)
	}
	if len(g.created) != 0 {
		t.Fatalf("allocated %#x with no agent matched", g.created)
	}
}

// TestHSAFineImportGrantsItself: an import with grant sets RW for this
// rank's agent alone; without grant it sets nothing; the fd is closed.
func TestHSAFineImportGrantsItself(t *testing.T) {
	f := twoGPUs(t, &fakeMem{t: t})
	b := hsaBackend(t, f, new(int))
	for _, grant := range []bool{true, false} {
		var p [2]int
		if err := syscall.Pipe(p[:]); err != nil {
			t.Fatal(err)
		}
		syscall.Close(p[1])
		f.access = nil
		buf, err := b.Import(kindHSAFine, backend.Export{Fd: p[0], Size: 2 << 20}, grant)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if grant {
			want = 1
		}
		if len(f.access) != want || grant && (f.access[0][0].Agent != 0x300 || len(f.access[0]) != 1) {
			t.Errorf("grant=%v: set_access %+v, want %d grant(s) to agent 0x300 alone", grant, f.access, want)
		}
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[0]), syscall.F_GETFD, 0); e != syscall.EBADF {
			t.Errorf("grant=%v: the export's fd %d is still open", grant, p[0])
		}
		if err := b.Free(buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHSAFineReadsAndWritesThroughStaging: unaligned writes and reads,
// one larger than the staging buffer, land byte for byte; every HIP copy
// touches only the hipMalloc staging buffer (the fake fails the test on a
// vmem address), the vmem side moves by the copy kernel through HIP.
func TestHSAFineReadsAndWritesThroughStaging(t *testing.T) {
	mem := &fakeMem{t: t}
	f := twoGPUs(t, mem)
	launches := 0
	b := hsaBackend(t, f, &launches)
	buf, exp, err := b.Alloc(kindHSAFine, 6<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(exp.Fd)
	dev, _ := mem.at(uintptr(buf.Addr()), buf.Size())
	for _, c := range []struct{ off, n uint64 }{{5, 1000}, {0, 4096}, {7, 5 << 20}} {
		pat := make([]byte, c.n)
		for i := range pat {
			pat[i] = byte(i*13 + int(c.off) + 1)
		}
		before := append([]byte(nil), dev...)
		if err := b.Write(buf, c.off, pat); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dev[c.off:c.off+c.n], pat) {
			t.Fatalf("write of %d bytes at %d: the vmem memory differs", c.n, c.off)
		}
		if !bytes.Equal(dev[:c.off], before[:c.off]) || !bytes.Equal(dev[c.off+c.n:], before[c.off+c.n:]) {
			t.Fatalf("write of %d bytes at %d changed bytes outside it", c.n, c.off)
		}
		got := make([]byte, c.n+2)
		if err := b.Read(buf, c.off-min(c.off, 1), got); err != nil {
			t.Fatal(err)
		}
		if lo := c.off - min(c.off, 1); !bytes.Equal(got, dev[lo:lo+c.n+2]) {
			t.Fatalf("read of %d bytes at %d differs from the vmem memory", c.n+2, lo)
		}
	}
	if launches == 0 {
		t.Fatal("no copy kernel ran: the vmem side must move by kernel")
	}
	if _, err := b.Copy(buf, 0, buf, 4096, 4096); err == nil || !strings.Contains(err.Error(), "does not track HSA vmem") {
		t.Fatalf("Copy on hsa-fine: %v, want the refusal naming why", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHSAFineSkipsNamingWhatIsMissing: without the runtime pieces the kind
// is ErrNotSupported naming the missing piece, and nothing is allocated.
func TestHSAFineSkipsNamingWhatIsMissing(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fakeROCr, h *hsaLib, b *Backend)
		want  string
	}{
		{"no vmem symbols (ROCm 5.x)", func(f *fakeROCr, h *hsaLib, b *Backend) {
			h.missing = []string{"hsa_amd_vmem_address_reserve", "hsa_amd_vmem_handle_create"}
		}, "has no hsa_amd_vmem_handle_create (an older ROCm, e.g. 5.x): the hsa-fine kind needs HSA virtual memory, ROCm >= 6.0"},
		{"driver without vmem", func(f *fakeROCr, h *hsaLib, b *Backend) { f.vmemAPI = 0 }, "HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED is false"},
		{"PCIe, no fine pool", func(f *fakeROCr, h *hsaLib, b *Backend) {
			for i := range f.agents {
				f.agents[i].pools = map[uint64]uint32{f.agents[i].handle + 1: hsaabi.GlobalFlagCoarseGrained}
			}
		}, "set HSA_FORCE_FINE_GRAIN_PCIE=1"},
		{"no UUID from HIP", func(f *fakeROCr, h *hsaLib, b *Backend) { b.uuid = [16]byte{} }, "reports no unique UUID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := twoGPUs(t, &fakeMem{t: t})
			b := hsaBackend(t, f, new(int))
			c.setup(f, b.hl, b)
			for range 2 { // the answer is kept: the second call says the same
				_, _, err := b.Alloc(kindHSAFine, 4096)
				if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%v, want ErrNotSupported containing %q", err, c.want)
				}
			}
			if len(f.created) != 0 {
				t.Fatalf("allocated %#x", f.created)
			}
		})
	}
	for _, c := range []struct{ path, want string }{
		{"", "no libhsa-runtime64 is mapped in this HIP process"},
		{"/nonexistent/libhsa-runtime64.so.1", "the HSA runtime CLR loaded (/nonexistent/libhsa-runtime64.so.1) cannot be opened again"},
	} {
		if _, err := openHSA(c.path); !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("openHSA(%q): %v, want ErrNotSupported containing %q", c.path, err, c.want)
		}
	}
}

// TestHSASymbols: every HSA entry point the hsa-fine table binds is
// exported by the real 6.4.3 and 7.2.4 libhsa-runtime64 (readelf lists of
// scripts/amd-headers.sh), and the list is the table.
func TestHSASymbols(t *testing.T) {
	var h hsaLib
	var names []string
	for _, s := range h.symbols() {
		names = append(names, s.Name())
	}
	if strings.Join(names, " ") != strings.Join(hsaSymbols, " ") {
		t.Fatalf("hsaSymbols %v differs from the table %v", hsaSymbols, names)
	}
	dir := amdabi.Dir(t)
	vs, err := amdabi.Versions(dir, "syms-hsa")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		syms, err := amdabi.Symbols(filepath.Join(dir, "syms-hsa-"+v+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range hsaSymbols {
			if !syms[s] {
				t.Errorf("ROCm %s: libhsa-runtime64 lacks %s, which the hsa-fine kind binds", v, s)
			}
		}
	}
}

// TestHSAFineHoldsNoDeviceMemoryAfterFree (issue 40, review 3 P3): once
// every hsa-fine buffer is freed, the rank holds no device memory the
// hsa-fine path took (the hipMalloc staging buffer included), so the
// harness's leak check, which reads hipMemGetInfo after teardown, does not
// fail the seed's working path. At ce5f99b the 4 MiB staging buffer lived
// until Close: "free device memory is 4194304 bytes lower".
func TestHSAFineHoldsNoDeviceMemoryAfterFree(t *testing.T) {
	mem := &fakeMem{t: t}
	b := hsaBackend(t, twoGPUs(t, mem), new(int))
	before, _, err := b.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the staging buffer comes back when needed again
		buf, exp, err := b.Alloc(kindHSAFine, 2<<20)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(exp.Fd)
		if err := b.Write(buf, 0, []byte("0123456789abcdef")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 16)
		if err := b.Read(buf, 0, got); err != nil || string(got) != "0123456789abcdef" {
			t.Fatalf("read back %q: %v", got, err)
		}
		if err := b.Free(buf); err != nil {
			t.Fatal(err)
		}
		after, _, err := b.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Fatalf("after the last hsa-fine buffer is freed, free device memory is %d bytes lower", before-after)
		}
	}
}
