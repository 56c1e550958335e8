package hsa

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/binding"
	"p2patomics/internal/device"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

// fakeHSA is a small ROCr stand-in behind the binding table: agents, pools
// and ISAs to discover, and vmem calls that succeed and are recorded. The
// tests below drive the backend's own logic (Open, Alloc, the event and
// queue handlers) through the same Status values a real runtime gives.
type fakeHSA struct {
	t       *testing.T
	agents  []fakeAgent
	queueCB uintptr
	access  [][]accessDesc // each hsa_amd_vmem_set_access call's descriptors
	mem     [][]byte       // mmap'd memory handed out, unmapped at cleanup
	// links answers hsa_amd_agent_memory_pool_get_info per (agent, pool);
	// a pair not listed has no link facts (INVALID_ARGUMENT).
	links  map[[2]uint64]fakeLink
	copies [][2]uint64 // each async copy's (dst_agent, src_agent)
	// engines is what hsa_amd_memory_copy_engine_status reports (0: the
	// call fails); onEngine records each explicit-engine copy's engine.
	engines  uint32
	onEngine []uint32
	forced   []bool // each explicit-engine copy's force_copy_on_sdma
	signal   int64  // what every signal wait (and load) returns (0: done)
	// waitHook, when set, runs inside each signal wait before it returns
	// (a wait that wedges).
	waitHook func()
	// preferred is get_preferred_copy_engine's mask (0: no preference).
	preferred uint32
	// grants records each vmem_set_access by VA (address_reserve hands out
	// distinct VAs); unmapped lists each copy whose running agent, by
	// ROCr's rule, holds no grant on one of its two VAs.
	nextVA   uintptr
	grants   []fakeGrant
	unmapped []string
	// ungranted lists each copy that names an agent (dst or src) holding
	// no grant on one of its two VAs.
	ungranted []string
}

type fakeGrant struct {
	va, size uintptr
	agent    uint64
}

// granted says whether agent may access p, as vmem_set_access left it.
func (f *fakeHSA) granted(agent uint64, p uintptr) bool {
	for _, g := range f.grants {
		if g.agent == agent && p >= g.va && p < g.va+g.size {
			return true
		}
	}
	return false
}

// runCopy applies ROCr's copy-agent rule (rocr7 core/runtime/runtime.cpp
// CopyMemory, CopyMemoryOnEngine: copy_agent = src_gpu ? src_agent :
// dst_agent) and records a copy whose engine's GPU maps neither VA: on
// hardware, a VM fault on that GPU's node.
func (f *fakeHSA) runCopy(dst uintptr, da uint64, src uintptr, sa uint64) {
	run := da
	if a := f.agent(sa); a != nil && a.dev == deviceTypeGPU {
		run = sa
	}
	for _, p := range []uintptr{dst, src} {
		if f.nextVA != 0 && p >= 0x7f0000000000 && !f.granted(run, p) {
			f.unmapped = append(f.unmapped, fmt.Sprintf("ROCr runs the copy on agent %#x, which holds no grant on %#x", run, p))
		}
		// The header's rule (hsa_ext_amd.h, hsa_amd_memory_async_copy):
		// both named agents must access both buffers; ROCr 6.4/7.2 do not
		// check it, a later one may refuse the copy.
		for _, a := range []uint64{da, sa} {
			if f.nextVA != 0 && p >= 0x7f0000000000 && !f.granted(a, p) {
				f.ungranted = append(f.ungranted, fmt.Sprintf("the copy names agent %#x, which holds no grant on %#x", a, p))
			}
		}
	}
}

type fakeLink struct {
	access uint32
	hops   []linkInfo
}

type fakeAgent struct {
	handle uint64
	dev    uint32
	node   uint32
	pools  map[uint64]uint32 // pool handle -> GLOBAL_FLAGS
	isa    string
	// nearCPU is what HSA_AMD_AGENT_INFO_NEAREST_CPU answers (0: the
	// attribute is unknown, as on older runtimes).
	nearCPU uint64
}

func (f *fakeHSA) agent(h uint64) *fakeAgent {
	for i := range f.agents {
		if f.agents[i].handle == h {
			return &f.agents[i]
		}
	}
	return nil
}

func (f *fakeHSA) poolFlags(p uint64) (uint32, bool) {
	for _, a := range f.agents {
		if fl, ok := a.pools[p]; ok {
			return fl, true
		}
	}
	return 0, false
}

func (f *fakeHSA) alloc(n int) uintptr {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mem = append(f.mem, m)
	return uintptr(unsafe.Pointer(&m[0]))
}

// mi300 is two XGMI GPUs (FINE pools listed), a CPU and, listed first, a
// non-GPU agent that is not a CPU either (an AIE-like accelerator, device
// type 2) with one fine pool and no kernarg pool.
func mi300(t *testing.T) *fakeHSA {
	return &fakeHSA{t: t, agents: []fakeAgent{
		{handle: 0x100, dev: 2, node: 9, pools: map[uint64]uint32{0x1001: globalFlagFineGrained}},
		{handle: 0x200, dev: deviceTypeCPU, node: 0, pools: map[uint64]uint32{
			0x2001: globalFlagFineGrained | globalFlagKernargInit, 0x2002: globalFlagFineGrained, 0x2003: globalFlagCoarseGrained}},
		{handle: 0x300, dev: deviceTypeGPU, node: 2, isa: "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", pools: map[uint64]uint32{
			0x3001: globalFlagCoarseGrained, 0x3002: globalFlagExtScopeFine, 0x3003: globalFlagFineGrained}},
		{handle: 0x400, dev: deviceTypeGPU, node: 3, isa: "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", pools: map[uint64]uint32{
			0x4001: globalFlagCoarseGrained, 0x4002: globalFlagExtScopeFine, 0x4003: globalFlagFineGrained}},
	}}
}

// lib binds the fake into a lib. A call to a symbol without a fake fails
// the test. The fakes come in Open's steps: discovery, the queue and code
// object set-up, copies with their signals, and the vmem calls.
func (f *fakeHSA) lib() *lib {
	fns := map[string]any{}
	for _, part := range []map[string]any{f.discoveryFakes(), f.setupFakes(), f.copyFakes(), f.vmemFakes()} {
		for k, v := range part {
			fns[k] = v
		}
	}
	l := &lib{path: "fake", missing: map[string]string{}}
	if err := binding.BindFuncs(l.symbols(), fns, func(n string) { f.t.Errorf("unexpected call to %s", n) }); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		for _, m := range f.mem {
			syscall.Munmap(m)
		}
	})
	return l
}

// put stores an info answer of size bytes, as ROCr's get_info calls do.
func put(v unsafe.Pointer, x uint64, size int) {
	switch size {
	case 1:
		*(*uint8)(v) = uint8(x)
	case 2:
		*(*uint16)(v) = uint16(x)
	case 4:
		*(*uint32)(v) = uint32(x)
	default:
		*(*uint64)(v) = x
	}
}

// discoveryFakes: init, system facts, agents, pools, link facts and ISAs.
func (f *fakeHSA) discoveryFakes() map[string]any {
	return map[string]any{
		"hsa_init":          func() uint32 { return statusSuccess },
		"hsa_status_string": func(uint32, *uintptr) uint32 { return statusError },
		"hsa_system_get_info": func(attr uint32, v unsafe.Pointer) uint32 {
			switch attr {
			case amdSystemInfoVirtualMemAPISupport:
				put(v, 1, 1)
			case systemInfoTimestampFrequency:
				put(v, 1e8, 8)
			case amdSystemInfoBuildVersion:
				put(v, 0, 8)
			case amdSystemInfoXnackEnabled:
				put(v, 0, 1)
			default:
				put(v, 1, 2)
			}
			return statusSuccess
		},
		"hsa_iterate_agents": func(cb, data uintptr) uint32 {
			for _, a := range f.agents {
				purego.SyscallN(cb, uintptr(a.handle), data)
			}
			return statusSuccess
		},
		"hsa_agent_get_info": func(h uint64, attr uint32, v unsafe.Pointer) uint32 {
			a := f.agent(h)
			if a == nil {
				return statusErrorInvalidAgent
			}
			switch attr {
			case agentInfoDevice:
				put(v, uint64(a.dev), 4)
			case agentInfoNode:
				put(v, uint64(a.node), 4)
			case amdAgentInfoCUCount:
				put(v, 304, 4)
			case amdAgentInfoMemoryAvail:
				put(v, 1<<30, 8)
			case amdAgentInfoNearestCPU:
				if a.nearCPU == 0 {
					return statusErrorInvalidArgument // an older runtime
				}
				put(v, a.nearCPU, 8)
			default:
				return statusErrorInvalidArgument // names, UUID: "" is fine
			}
			return statusSuccess
		},
		"hsa_amd_agent_iterate_memory_pools": func(h uint64, cb, data uintptr) uint32 {
			a := f.agent(h)
			for _, p := range sortedPools(a.pools) {
				purego.SyscallN(cb, uintptr(p), data)
			}
			return statusSuccess
		},
		"hsa_amd_memory_pool_get_info": func(p uint64, attr uint32, v unsafe.Pointer) uint32 {
			fl, known := f.poolFlags(p)
			if !known {
				return statusErrorInvalidArgument
			}
			switch attr {
			case poolInfoSegment:
				put(v, segmentGlobal, 4)
			case poolInfoGlobalFlags:
				put(v, uint64(fl), 4)
			case poolInfoAllocAllowed:
				put(v, 1, 1)
			case poolInfoSize:
				put(v, 192<<30, 8)
			case poolInfoAllocRecGranule, poolInfoAllocGranule:
				put(v, 2<<20, 8)
			default:
				return statusErrorInvalidArgument
			}
			return statusSuccess
		},
		"hsa_amd_agent_memory_pool_get_info": func(a, p uint64, attr uint32, v unsafe.Pointer) uint32 {
			li, ok := f.links[[2]uint64{a, p}]
			if !ok {
				return statusErrorInvalidArgument // no link facts
			}
			switch attr {
			case agentPoolInfoAccess:
				put(v, uint64(li.access), 4)
			case agentPoolInfoNumLinkHops:
				put(v, uint64(len(li.hops)), 4)
			case agentPoolInfoLinkInfo:
				copy(unsafe.Slice((*linkInfo)(v), len(li.hops)), li.hops)
			default:
				return statusErrorInvalidArgument
			}
			return statusSuccess
		},
		"hsa_agent_iterate_isas": func(h uint64, cb, data uintptr) uint32 {
			purego.SyscallN(cb, uintptr(h+1), data) // ISA handle = agent + 1
			return statusSuccess
		},
		"hsa_isa_get_info_alt": func(isa uint64, attr uint32, v unsafe.Pointer) uint32 {
			name := f.agent(isa - 1).isa
			switch attr {
			case isaInfoNameLength:
				put(v, uint64(len(name)), 4)
			case isaInfoName:
				copy(unsafe.Slice((*byte)(v), len(name)), name)
			}
			return statusSuccess
		},
	}
}

// setupFakes: the event handler, the queue, the kernarg and staging pools
// and the code object, which Open sets up.
func (f *fakeHSA) setupFakes() map[string]any {
	return map[string]any{
		"hsa_amd_register_system_event_handler": func(cb, data uintptr) uint32 { return statusSuccess },
		"hsa_queue_create": func(agent uint64, size, typ uint32, cb, data uintptr, priv, group uint32, out *uintptr) uint32 {
			f.queueCB = cb
			*out = f.alloc(4096)
			return statusSuccess
		},
		"hsa_amd_memory_pool_allocate": func(pool, size uint64, flags uint32, out *uintptr) uint32 {
			*out = f.alloc(int(size))
			return statusSuccess
		},
		"hsa_amd_agents_allow_access":               func(n uint32, agents *uint64, flags, p uintptr) uint32 { return statusSuccess },
		"hsa_code_object_reader_create_from_memory": func(code uintptr, size uint64, out *uint64) uint32 { *out = 1; return statusSuccess },
		"hsa_executable_create_alt":                 func(profile, rounding uint32, opts uintptr, out *uint64) uint32 { *out = 2; return statusSuccess },
		"hsa_executable_load_agent_code_object":     func(exe, agent, reader uint64, opts, out uintptr) uint32 { return statusSuccess },
		"hsa_executable_freeze":                     func(exe uint64, opts uintptr) uint32 { return statusSuccess },
	}
}

// copyFakes: signals and async copies, recorded with their agents and engine.
func (f *fakeHSA) copyFakes() map[string]any {
	return map[string]any{
		"hsa_signal_create":  func(v int64, n uint32, c uintptr, out *uint64) uint32 { *out = 0x5000; return statusSuccess },
		"hsa_signal_destroy": func(s uint64) uint32 { return statusSuccess },
		"hsa_signal_wait_scacquire": func(s uint64, cond uint32, cmp int64, timeout uint64, state uint32) int64 {
			if f.waitHook != nil {
				f.waitHook()
			}
			return f.signal
		},
		"hsa_signal_load_relaxed": func(s uint64) int64 { return f.signal },
		"hsa_amd_memory_async_copy": func(dst uintptr, da uint64, src uintptr, sa uint64, n uint64, nd uint32, deps uintptr, sig uint64) uint32 {
			f.copies = append(f.copies, [2]uint64{da, sa})
			f.runCopy(dst, da, src, sa)
			return statusSuccess
		},
		"hsa_amd_memory_copy_engine_status": func(da, sa uint64, m *uint32) uint32 {
			if f.engines == 0 {
				return statusErrorInvalidArgument
			}
			*m = f.engines
			return statusSuccess
		},
		"hsa_amd_memory_get_preferred_copy_engine": func(da, sa uint64, m *uint32) uint32 {
			*m = f.preferred
			return statusSuccess
		},
		"hsa_amd_memory_async_copy_on_engine": func(dst uintptr, da uint64, src uintptr, sa uint64, n uint64, nd uint32, deps uintptr, sig uint64, eng uint32, force bool) uint32 {
			f.copies = append(f.copies, [2]uint64{da, sa})
			f.onEngine = append(f.onEngine, eng)
			f.forced = append(f.forced, force)
			f.runCopy(dst, da, src, sa)
			return statusSuccess
		},
	}
}

// vmemFakes: the hsa_amd_vmem_* calls, recorded where the tests look.
func (f *fakeHSA) vmemFakes() map[string]any {
	return map[string]any{
		"hsa_amd_vmem_address_reserve": func(va *uintptr, size, addr, flags uint64) uint32 {
			if f.nextVA == 0 {
				f.nextVA = 0x7f0000000000
			}
			*va = f.nextVA
			f.nextVA += uintptr(size+0xfffff) &^ 0xfffff
			return statusSuccess
		},
		"hsa_amd_vmem_handle_create": func(pool, size uint64, typ uint32, flags uint64, out *uint64) uint32 {
			*out = pool<<8 | 1
			return statusSuccess
		},
		"hsa_amd_vmem_map": func(va uintptr, size, off, h, flags uint64) uint32 { return statusSuccess },
		"hsa_amd_vmem_set_access": func(va uintptr, size uint64, d *accessDesc, n uint64) uint32 {
			f.access = append(f.access, append([]accessDesc(nil), unsafe.Slice(d, n)...))
			for _, x := range unsafe.Slice(d, n) {
				f.grants = append(f.grants, fakeGrant{va, uintptr(size), x.Agent})
			}
			return statusSuccess
		},
		"hsa_amd_vmem_export_shareable_handle": func(fd *int32, h, flags uint64) uint32 {
			var p [2]int
			syscall.Pipe(p[:])
			syscall.Close(p[1])
			*fd = int32(p[0])
			return statusSuccess
		},
		"hsa_amd_vmem_import_shareable_handle": func(fd int32, out *uint64) uint32 { *out = 0x9901; return statusSuccess },
		"hsa_amd_vmem_unmap":                   func(va uintptr, size uint64) uint32 { return statusSuccess },
		"hsa_amd_vmem_address_free":            func(va uintptr, size uint64) uint32 { return statusSuccess },
		"hsa_amd_vmem_handle_release":          func(h uint64) uint32 { return statusSuccess },
	}
}

func sortedPools(m map[uint64]uint32) []uint64 {
	var ps []uint64
	for p := range m {
		ps = append(ps, p)
	}
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if ps[j] < ps[i] {
				ps[i], ps[j] = ps[j], ps[i]
			}
		}
	}
	return ps
}

// openFake runs Open's logic against f for device ordinal dev.
func openFake(t *testing.T, f *fakeHSA, dev int) (*Backend, backend.DeviceInfo) {
	t.Helper()
	// hsa_init is once per process; another test may have run the real one.
	initOnce, initErr = sync.Once{}, nil
	t.Cleanup(func() { initOnce, initErr = sync.Once{}, nil })
	b := &Backend{}
	info, err := b.open(f.lib(), backend.Config{Rank: dev, Ranks: 2, Device: dev})
	if err != nil {
		t.Fatalf("Open on the fake runtime: %v", err)
	}
	return b, info
}

// TestOpenPicksTheCPUAgent (issue 17, defect 8): a non-GPU agent that is
// not a CPU (listed first here) is not taken as the CPU agent.
func TestOpenPicksTheCPUAgent(t *testing.T) {
	b, info := openFake(t, mi300(t), 1)
	if b.cpu == nil || b.cpu.handle != 0x200 || b.self.handle != 0x400 {
		t.Fatalf("cpu %+v self %+v", b.cpu, b.self)
	}
	if info.Arch != "gfx942" || info.Attrs["node"] != "3" {
		t.Errorf("device info %+v", info)
	}
}

// TestQueueErrorIsAFault (issue 17, defect 5): the queue gets an error
// callback, and a queue error it reports is the fault the next Launch
// returns.
func TestQueueErrorIsAFault(t *testing.T) {
	f := mi300(t)
	b, _ := openFake(t, f, 0)
	if f.queueCB == 0 {
		t.Fatal("hsa_queue_create got no error callback: ROCr's default handler aborts the rank")
	}
	faultSlot.Store(nil)
	t.Cleanup(func() { faultSlot.Store(nil) })
	quietStderr(t)
	purego.SyscallN(f.queueCB, statusErrorMemoryApertureViolation, 0, 0) // as ROCr calls it
	_, err := b.Launch(kernels.MustLookup(copyKernel), 1, 1, make([]uint64, 5))
	var fault *backend.Fault
	if !errors.As(err, &fault) || fault.Name != "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION" ||
		fault.Code != statusErrorMemoryApertureViolation || !strings.Contains(fault.Reason, "aperture violation") {
		t.Fatalf("Launch after a queue error: %v", err)
	}
}

// TestAllocGrantsOwnerOnlyAndNamesPool (issue 17, defect 8): the exporter
// grants its own agent only, and the export says which pool served it.
func TestAllocGrantsOwnerOnlyAndNamesPool(t *testing.T) {
	for _, c := range []struct {
		name   string
		hideFG bool
		kind   string
		pool   string
	}{
		{"fine in a hive", false, kindFine, poolFine},
		{"fine over PCIe", true, kindFine, poolExtFine},
		{"coarse", false, kindCoarse, poolCoarse},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mi300(t)
			if c.hideFG { // ROCr lists no FINE VRAM pool outside a hive
				delete(f.agents[2].pools, 0x3003)
				delete(f.agents[3].pools, 0x4003)
			}
			b, info := openFake(t, f, 0)
			buf, exp, err := b.Alloc(c.kind, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(exp.Fd)
			if len(f.access) != 1 || len(f.access[0]) != 1 || f.access[0][0].Agent != 0x300 || f.access[0][0].Permissions != accessPermissionRW {
				t.Fatalf("set_access descriptors %+v, want the owner (0x300) alone, RW", f.access)
			}
			if exp.Meta["pool"] != c.pool {
				t.Errorf("export meta %v, want pool %s", exp.Meta, c.pool)
			}
			if c.kind == kindFine && info.Attrs["fine_served_by"] != c.pool {
				t.Errorf("device attrs %v, want fine_served_by %s", info.Attrs, c.pool)
			}
			if err := b.Free(buf); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// quietStderr sends the handlers' stderr line to a pipe for the test.
func quietStderr(t *testing.T) func() string {
	r, w, _ := os.Pipe()
	old := os.Stderr
	os.Stderr = w
	t.Cleanup(func() { os.Stderr = old })
	return func() string {
		w.Close()
		b := make([]byte, 4096)
		n, _ := r.Read(b)
		return string(b[:n])
	}
}

// TestROCmLibDirs (issue 17, defect 7; issue 30, N6): $ROCM_PATH/lib
// before the loader's own search (a distro ROCm 5.x there must not shadow
// it), then /opt/rocm/lib.
func TestROCmLibDirs(t *testing.T) {
	t.Setenv("ROCM_PATH", "/x/rocm-6.4.3")
	if got := strings.Join(binding.ROCmLibDirs(), " "); got != "/x/rocm-6.4.3/lib /opt/rocm/lib" {
		t.Fatal(got)
	}
	dir := t.TempDir()
	t.Setenv("ROCM_PATH", dir)
	os.Mkdir(dir+"/lib", 0o755)
	c := binding.Candidates([]string{libName}, binding.ROCmPathDir(), binding.ROCmLibDirs())
	if len(c) < 2 || c[0] != dir+"/lib/"+libName || c[1] != libName {
		t.Fatalf("candidates %v", c)
	}
}

// TestCopyNamesTheOwners (issue 30, N1; issue 40, P1; issue 50, Q7): a
// push and a pull name this rank's agent twice (ROCr runs a copy on
// src_agent, only this agent maps the VAs, and the header wants both named
// agents to access both buffers) and, where an engine is reported, are
// forced onto this GPU's SDMA engine toward the peer; without one, ROCr's
// one-agent rule picks (the blit kernel at 1 MiB and more). The method
// says which ran. At ce5f99b a pull named the peer (0x400) as src_agent;
// until issue 50 a push named it as dst_agent.
func TestCopyNamesTheOwners(t *testing.T) {
	f := mi300(t)
	b, _ := openFake(t, f, 0)
	local, exp, err := b.Alloc(kindFine, 1<<21)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(exp.Fd)
	// The peer's export, as rank 1 (agent 0x400, node 3) would send it.
	var p [2]int
	syscall.Pipe(p[:])
	syscall.Close(p[1])
	peer, err := b.Import(kindFine, backend.Export{Fd: p[0], Size: 1 << 21, Meta: map[string]string{"kind": kindFine, metaNode: "3"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		dst, src backend.Buffer
		want     [2]uint64
		method   string
	}{
		{"write", peer, local, [2]uint64{0x300, 0x300}, "blit kernel (one agent, node 2; node 2 → node 3)"},
		{"read", local, peer, [2]uint64{0x300, 0x300}, "blit kernel (one agent, node 2; node 3 → node 2)"},
		{"local", local, local, [2]uint64{0x300, 0x300}, "blit kernel (one agent, node 2; node 2 → node 2)"},
	} {
		f.copies = nil
		res, err := b.Copy(c.dst, 0, c.src, 0, 1<<21)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.copies) != 1 || f.copies[0] != c.want {
			t.Errorf("%s: async copy agents (dst, src) %#x, want %#x", c.name, f.copies, c.want)
		}
		if !strings.Contains(res.Method, c.method) {
			t.Errorf("%s: method %q, want it to name %q", c.name, res.Method, c.method)
		}
	}
	syscall.Pipe(p[:])
	syscall.Close(p[1])
	if _, err := b.Import(kindFine, backend.Export{Fd: p[0], Size: 1 << 21, Meta: map[string]string{metaNode: "77"}}, true); err == nil || !strings.Contains(err.Error(), "KFD node 77") {
		t.Errorf("import from an unknown node: %v", err)
	}
	// Where the runtime reports free SDMA engines for the pair, the copy
	// runs on the lowest one explicitly and the method names it; a pull is
	// forced onto it; a local copy stays ROCr's (one agent: no engine asked).
	f.engines, f.copies = 0x6, nil
	res, err := b.Copy(peer, 0, local, 0, 1<<21)
	if err != nil || len(f.onEngine) != 1 || f.onEngine[0] != 0x2 || f.copies[0] != [2]uint64{0x300, 0x300} || !f.forced[0] ||
		!strings.Contains(res.Method, "SDMA engine 0x2 of node 2 (node 2 → node 3, hsa_amd_memory_async_copy_on_engine)") {
		t.Errorf("explicit engine: %v, engines %v, agents %#x, method %q", err, f.onEngine, f.copies, res.Method)
	}
	res, err = b.Copy(local, 0, peer, 0, 1<<21)
	if err != nil || len(f.onEngine) != 2 || f.onEngine[1] != 0x2 || f.copies[1] != [2]uint64{0x300, 0x300} || !f.forced[1] ||
		!strings.Contains(res.Method, "SDMA engine 0x2 of node 2 (node 3 → node 2, hsa_amd_memory_async_copy_on_engine)") {
		t.Errorf("explicit engine, pull: %v, engines %v, forced %v, agents %#x, method %q", err, f.onEngine, f.forced, f.copies, res.Method)
	}
	if _, err := b.Copy(local, 0, local, 0, 1<<21); err != nil || len(f.onEngine) != 2 {
		t.Errorf("a local copy asked for an engine: %v %v", err, f.onEngine)
	}
}

// TestPeerCapsFollowLinkInfo (issue 30, N3): peer access and P2P atomics
// come from the link ROCr reports. A PCIe hop without 64-bit atomics makes
// P2P atomics "no" naming the attribute, zero hops makes access "no", and
// xGMI with both widths is "yes". On a44624c every answer was yes.
func TestPeerCapsFollowLinkInfo(t *testing.T) {
	for _, c := range []struct {
		name            string
		link            fakeLink
		access, atomics bool
		reason          string
	}{
		{"xgmi", fakeLink{access: 1, hops: []linkInfo{{LinkType: linkTypeXGMI, Atomic32: true, Atomic64: true, Coherent: true}}}, true, true, "xgmi atomics32=true"},
		{"pcie without atomics", fakeLink{access: 1, hops: []linkInfo{{LinkType: linkTypePCIe, Atomic32: true}}}, true, false, "pcie atomic_support_64bit=false"},
		// Issue 40, P9: both bits set on PCIe speak of the root ports only.
		{"pcie with atomics bits", fakeLink{access: 1, hops: []linkInfo{{LinkType: linkTypePCIe, Atomic32: true, Atomic64: true}}}, true, false, "root complex routes them peer to peer"},
		{"no hops", fakeLink{access: 1}, false, false, "NUM_LINK_HOPS is 0"},
		{"never allowed", fakeLink{access: poolAccessNeverAllowed, hops: []linkInfo{{LinkType: linkTypePCIe}}}, false, false, "NEVER_ALLOWED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mi300(t)
			f.links = map[[2]uint64]fakeLink{{0x300, 0x4003}: c.link}
			_, info := openFake(t, f, 0)
			pr := info.Caps.Peer(0, 1)
			if pr.Access.OK != c.access || pr.Atomics.OK != c.atomics {
				t.Fatalf("peer 1: access %+v atomics %+v, want %v/%v", pr.Access, pr.Atomics, c.access, c.atomics)
			}
			why := pr.Atomics.Reason
			if !c.access {
				why = pr.Access.Reason
			}
			if !strings.Contains(why, c.reason) {
				t.Errorf("reason %q, want it to name %q", why, c.reason)
			}
		})
	}
}

// TestInterruptsOffIsRefused (issue 30, N10): with HSA_ENABLE_INTERRUPT=0
// Open refuses, naming the variable, before hsa_init (a44624c opened and
// every GPU fault became a 5-minute timeout).
func TestInterruptsOffIsRefused(t *testing.T) {
	t.Setenv("HSA_ENABLE_INTERRUPT", "0")
	initOnce, initErr = sync.Once{}, nil
	t.Cleanup(func() { initOnce, initErr = sync.Once{}, nil })
	_, err := (&Backend{}).open(mi300(t).lib(), backend.Config{Ranks: 1})
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "HSA_ENABLE_INTERRUPT=0") {
		t.Fatalf("Open with HSA_ENABLE_INTERRUPT=0: %v", err)
	}
	t.Setenv("HSA_ENABLE_INTERRUPT", "1")
	openFake(t, mi300(t), 0)
}

// TestPCIeAtomicsRunWhenAsked (issue 40, P9): with
// P2PAT_AMD_PCIE_P2P_ATOMICS=1 a PCIe link whose bits allow atomics is a
// "yes", as ROCr reports it.
func TestPCIeAtomicsRunWhenAsked(t *testing.T) {
	t.Setenv("P2PAT_AMD_PCIE_P2P_ATOMICS", "1")
	f := mi300(t)
	f.links = map[[2]uint64]fakeLink{{0x300, 0x4003}: {access: 1, hops: []linkInfo{{LinkType: linkTypePCIe, Atomic32: true, Atomic64: true}}}}
	_, info := openFake(t, f, 0)
	if pr := info.Caps.Peer(0, 1); !pr.Atomics.OK {
		t.Fatalf("PCIe atomics with the switch: %+v", pr.Atomics)
	}
}

// TestNeedVmemIgnoresCopyEngine: a runtime without the optional
// explicit-engine entry points still has the vmem API.
func TestNeedVmemIgnoresCopyEngine(t *testing.T) {
	l := &lib{path: "x", missing: map[string]string{"hsa_amd_memory_async_copy_on_engine": "6.0", "hsa_amd_memory_copy_engine_status": "6.0"}}
	if err := l.needVmem(); err != nil {
		t.Fatal(err)
	}
	l.missing["hsa_amd_vmem_map"] = minVmemROCm
	if err := l.needVmem(); err == nil || !strings.Contains(err.Error(), "hsa_amd_vmem_map") {
		t.Fatalf("vmem missing: %v", err)
	}
}

// TestCopyRunsOnAGrantedAgent (issue 40, review 3 P1): ROCr runs a copy
// on src_agent when it is a GPU, and a vmem VA is mapped only on the
// agents granted, which is this rank's own alone. So every copy, a push
// or a pull, with or without an explicit engine, must name an src_agent
// that holds a grant on both VAs. At ce5f99b a pull named the peer as
// src_agent: on hardware a VM fault on the peer's node, a false crash.
func TestCopyRunsOnAGrantedAgent(t *testing.T) {
	for _, engines := range []uint32{0, 0x6} {
		f := mi300(t)
		f.engines = engines
		b, _ := openFake(t, f, 0)
		local, exp, err := b.Alloc(kindFine, 1<<21)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(exp.Fd)
		var p [2]int
		syscall.Pipe(p[:])
		syscall.Close(p[1])
		peer, err := b.Import(kindFine, backend.Export{Fd: p[0], Size: 1 << 21, Meta: map[string]string{"kind": kindFine, metaNode: "3"}}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name     string
			dst, src backend.Buffer
		}{{"push", peer, local}, {"pull", local, peer}, {"local", local, local}} {
			f.unmapped = nil
			if _, err := b.Copy(c.dst, 0, c.src, 0, 1<<21); err != nil {
				t.Fatal(err)
			}
			if len(f.unmapped) > 0 {
				t.Errorf("engines %#x, %s: %v", engines, c.name, f.unmapped)
			}
		}
	}
}

// TestCopyNamesOnlyGrantedAgents (issue 50, Q7): every agent a copy names
// (dst_agent and src_agent) holds a grant on both its VAs, as the header
// requires of hsa_amd_memory_async_copy: a push, a pull and a local copy,
// with and without an explicit engine. A push that names the peer as
// dst_agent (the code before the fix) names agent 0x400, which holds no
// grant in this process (red).
func TestCopyNamesOnlyGrantedAgents(t *testing.T) {
	for _, engines := range []uint32{0, 0x6} {
		f := mi300(t)
		f.engines = engines
		b, _ := openFake(t, f, 0)
		local, exp, err := b.Alloc(kindFine, 1<<21)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(exp.Fd)
		var p [2]int
		syscall.Pipe(p[:])
		syscall.Close(p[1])
		peer, err := b.Import(kindFine, backend.Export{Fd: p[0], Size: 1 << 21, Meta: map[string]string{"kind": kindFine, metaNode: "3"}}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name     string
			dst, src backend.Buffer
		}{{"push", peer, local}, {"pull", local, peer}, {"local", local, local}} {
			f.ungranted = nil
			if _, err := b.Copy(c.dst, 0, c.src, 0, 1<<21); err != nil {
				t.Fatal(err)
			}
			if len(f.ungranted) > 0 {
				t.Errorf("engines %#x, %s: %v", engines, c.name, f.ungranted)
			}
		}
	}
}

// TestCopyErrorIsNamed (issue 40, review 3 P6): ROCr reports a failed
// async copy by a negative completion signal (hsa_ext_amd.h); Copy returns
// an error naming the copy and the value. At ce5f99b any value below 1 read
// as done, and the case failed later on the destination's sum.
func TestCopyErrorIsNamed(t *testing.T) {
	f := mi300(t)
	b, _ := openFake(t, f, 0)
	local, exp, err := b.Alloc(kindFine, 1<<21)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(exp.Fd)
	f.signal = -1
	_, err = b.Copy(local, 0, local, 1<<20, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "hsa_amd_memory_async_copy") || !strings.Contains(err.Error(), "-1") {
		t.Fatalf("a copy whose signal went negative: %v, want an error naming the copy and -1", err)
	}
	f.signal = 0
	if _, err := b.Copy(local, 0, local, 1<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
}

// TestCopyTakesThePreferredEngine (issue 40, review 3 P5): among the free
// engines the copy takes the one get_preferred_copy_engine recommends (KFD's
// per-peer xGMI engine, ROCr's own pick), for a push and a pull; a
// recommendation that is not free falls back to the lowest free engine.
// Under HSA_ENABLE_PEER_SDMA=0 no engine is named and the method says blit
// kernel; a non-default HSA_FORCE_SDMA_SIZE moves the one-agent label. At
// ce5f99b the copy took engine 0x4 (lowest free) and said SDMA under
// HSA_ENABLE_PEER_SDMA=0.
func TestCopyTakesThePreferredEngine(t *testing.T) {
	f := mi300(t)
	f.engines, f.preferred = 0x1c, 0x10
	b, _ := openFake(t, f, 0)
	local, exp, err := b.Alloc(kindFine, 1<<21)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(exp.Fd)
	var p [2]int
	syscall.Pipe(p[:])
	syscall.Close(p[1])
	peer, err := b.Import(kindFine, backend.Export{Fd: p[0], Size: 1 << 21, Meta: map[string]string{"kind": kindFine, metaNode: "3"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	copyOn := func(dst, src backend.Buffer) (uint32, string) {
		t.Helper()
		f.onEngine = nil
		res, err := b.Copy(dst, 0, src, 0, 1<<21)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.onEngine) == 0 {
			return 0, res.Method
		}
		return f.onEngine[0], res.Method
	}
	for _, dir := range [][2]backend.Buffer{{peer, local}, {local, peer}} {
		if eng, m := copyOn(dir[0], dir[1]); eng != 0x10 || !strings.Contains(m, "SDMA engine 0x10") {
			t.Errorf("preferred 0x10 of free 0x1c: engine %#x, method %q", eng, m)
		}
	}
	f.preferred = 0x1
	if eng, _ := copyOn(peer, local); eng != 0x4 {
		t.Errorf("preferred 0x1, not free: engine %#x, want the lowest free 0x4", eng)
	}
	t.Setenv("HSA_ENABLE_PEER_SDMA", "0")
	if eng, m := copyOn(peer, local); eng != 0 || strings.Contains(m, "SDMA engine") || !strings.Contains(m, "blit kernel of node 2 (HSA_ENABLE_PEER_SDMA=0") {
		t.Errorf("HSA_ENABLE_PEER_SDMA=0: engine %#x, method %q", eng, m)
	}
	t.Setenv("HSA_ENABLE_PEER_SDMA", "")
	t.Setenv("HSA_FORCE_SDMA_SIZE", "4194304")
	if _, m := copyOn(local, local); !strings.Contains(m, "under HSA_FORCE_SDMA_SIZE") {
		t.Errorf("a 2 MiB local copy under HSA_FORCE_SDMA_SIZE=4 MiB: %q", m)
	}
	t.Setenv("HSA_FORCE_SDMA_SIZE", "4M")
	if _, m := copyOn(local, local); !strings.Contains(m, `HSA_FORCE_SDMA_SIZE="4M" unread`) {
		t.Errorf("an unreadable HSA_FORCE_SDMA_SIZE: %q", m)
	}
}

// TestOpenPicksTheNearestCPU (review 3, D11): on a two-socket host the
// kernarg and staging pools come from the CPU agent that
// HSA_AMD_AGENT_INFO_NEAREST_CPU names for this GPU, not the first CPU;
// where the runtime does not answer, the first CPU. At ce5f99b GPU 1 took
// the first CPU (0x200) whatever the runtime said.
func TestOpenPicksTheNearestCPU(t *testing.T) {
	f := mi300(t)
	f.agents = append(f.agents, fakeAgent{handle: 0x500, dev: deviceTypeCPU, node: 1, pools: map[uint64]uint32{
		0x5001: globalFlagFineGrained | globalFlagKernargInit, 0x5002: globalFlagFineGrained}})
	f.agents[3].nearCPU = 0x500 // GPU 1 (0x400) sits on the second socket
	b, _ := openFake(t, f, 1)
	if b.cpu == nil || b.cpu.handle != 0x500 {
		t.Fatalf("GPU 1's CPU agent %+v, want 0x500 (its nearest)", b.cpu)
	}
	f.agents[3].nearCPU = 0
	b, _ = openFake(t, f, 1)
	if b.cpu == nil || b.cpu.handle != 0x200 {
		t.Fatalf("no NEAREST_CPU answer: CPU agent %+v, want the first (0x200)", b.cpu)
	}
}

// Issue 40, review 3 P10: rank 0's hello asks for any device
// (device.AnyDevice), and Open takes the first GPU agent whose ISA has a
// code object: an enabled Ryzen iGPU (gfx1036, no object ships) listed
// before the MI300s is passed over, and every agent is listed for the
// parent's placement. With the iGPU alone, Open is a not-supported naming
// its ISA and the targets shipped.
func TestOpenAnyDevicePassesOverAnIGPU(t *testing.T) {
	f := mi300(t)
	igpu := fakeAgent{handle: 0x250, dev: deviceTypeGPU, node: 1, isa: "amdgcn-amd-amdhsa--gfx1036", pools: map[uint64]uint32{0x2501: globalFlagCoarseGrained}}
	f.agents = append(f.agents[:2], append([]fakeAgent{igpu}, f.agents[2:]...)...)
	b, info := openFake(t, f, device.AnyDevice)
	if b.self.handle != 0x300 || info.Ordinal != 1 || info.Arch != "gfx942" {
		t.Errorf("any device: opened agent %#x as ordinal %d (%s), want 0x300, the first gfx942, as 1", b.self.handle, info.Ordinal, info.Arch)
	}
	if len(info.Devices) != 3 || info.Devices[0].Arch != "gfx1036" || info.Devices[2].Arch != "gfx942:sramecc+:xnack-" {
		t.Errorf("devices listed: %+v, want the iGPU then both MI300s", info.Devices)
	}

	alone := &fakeHSA{t: t, agents: append([]fakeAgent{f.agents[1]}, igpu)}
	initOnce, initErr = sync.Once{}, nil
	t.Cleanup(func() { initOnce, initErr = sync.Once{}, nil })
	_, err := (&Backend{}).open(alone.lib(), backend.Config{Ranks: 2, Device: device.AnyDevice})
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "gfx1036") || !strings.Contains(err.Error(), "gfx942") {
		t.Errorf("the iGPU alone: want a not-supported naming gfx1036 and the targets shipped, got %v", err)
	}
}
