// Package hsa is the AMD HSA (ROCr) backend: fine-grained (or, as a negative
// control, coarse-grained) device memory through the HSA virtual-memory API,
// shared between processes as dma-buf fds, and kernels dispatched by writing
// AQL packets. It loads libhsa-runtime64.so.1 through purego (no cgo).
//
// Call sequences, versions and what has and has not run on hardware:
// docs/AMD.md. Layouts and values: abi.go, checked against the real headers.
package hsa

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/device"
	"p2patomics/internal/hsaabi"
	"p2patomics/internal/watchdog"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

func init() { backend.Register("hsa", func() backend.Backend { return &Backend{} }) }

const (
	kindFine   = "fine"
	kindCoarse = "coarse"
	queueSize  = 1024
	// launchTimeout bounds one dispatch; spinning kernels carry their own
	// (shorter) timeout_ns, and the parent has its deadlines as well.
	launchTimeout = 5 * time.Minute
	copyKernel    = "copy_b128_plain_dev"
	stagingSize   = 4 << 20
)

// agent is one HSA agent and the pools found on it.
type agent struct {
	handle  uint64
	gpu     bool
	cpu     bool
	node    uint32
	isa     string // full ISA name, amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
	fine    uint64 // FINE_GRAINED global pool (0: none)
	extFine uint64 // EXTENDED_SCOPE_FINE_GRAINED pool
	coarse  uint64
	kernarg uint64 // KERNARG_INIT pool (CPU agents)
	sysFine uint64 // fine-grained system pool (CPU agents)
}

// Package-level iteration state: callbacks are created once (purego
// trampolines are never freed) and report into these slices; calls that
// iterate hold iterMu, so the data pointer HSA passes back is unused.
var (
	iterMu     sync.Mutex
	iterAgents []uint64
	iterISAs   []uint64
	iterPools  []uint64
	cbOnce     sync.Once
	agentCB    uintptr
	isaCB      uintptr
	poolCB     uintptr
)

func callbacks() {
	cbOnce.Do(func() {
		agentCB = purego.NewCallback(func(a uint64, _ uintptr) uintptr { iterAgents = append(iterAgents, a); return statusSuccess })
		isaCB = purego.NewCallback(func(i uint64, _ uintptr) uintptr { iterISAs = append(iterISAs, i); return statusSuccess })
		poolCB = purego.NewCallback(func(p uint64, _ uintptr) uintptr { iterPools = append(iterPools, p); return statusSuccess })
	})
}

// Backend implements backend.Backend for HSA.
type Backend struct {
	l       *lib
	cfg     backend.Config
	agents  []*agent         // GPU agents in enumeration order (device ordinal = index)
	visible []device.Visible // agents as placement sees them (listAgents)
	cpu     *agent           // this GPU's nearest CPU agent (nearestCPU)
	cpus    []*agent         // CPU agents in enumeration order
	self    *agent
	tsFreq  uint64
	queue   uintptr
	exe     uint64
	reader  uint64
	code    []byte // mmap'd copy of the code object (outside the Go heap)
	kerns   map[string]*kernelInfo
	staging uintptr // system fine-grained buffer for Read/Write
	bufs    map[*buffer]bool
}

type kernelInfo struct {
	object              uint64
	kernargSize         uint32
	groupSize, privSize uint32
	kernarg             uintptr // kernarg pool allocation, reused per launch
}

// buffer is a vmem mapping: own (handle created here) or imported.
type buffer struct {
	va       uintptr
	size     uint64
	handle   uint64
	imported bool
	mapped   bool
	// owner is the agent whose VRAM backs the buffer (this rank's for its
	// own, the exporter's for an import): hsa_amd_memory_async_copy picks
	// its engine from the two agents it is given.
	owner *agent
}

func (b *buffer) Addr() uint64 { return uint64(b.va) }
func (b *buffer) Size() uint64 { return b.size }

func (b *Backend) Name() string    { return "hsa" }
func (b *Backend) Kinds() []string { return []string{kindFine, kindCoarse} }

// Open loads the runtime, checks the version gates and finds the agent.
func (b *Backend) Open(cfg backend.Config) (backend.DeviceInfo, error) {
	l, err := load()
	if err != nil {
		return backend.DeviceInfo{}, err
	}
	return b.open(l, cfg)
}

// open is Open on a loaded library (the tests pass a fake one).
func (b *Backend) open(l *lib, cfg backend.Config) (backend.DeviceInfo, error) {
	b.cfg = cfg
	b.l = l
	if err := l.needVmem(); err != nil { // before hsa_init: cheap and GPU-free
		return backend.DeviceInfo{}, err
	}
	if err := interruptsOn(); err != nil {
		return backend.DeviceInfo{}, err
	}
	if err := hsaInit(l); err != nil {
		return backend.DeviceInfo{}, err
	}
	var vm uint64
	if err := l.checkFor("VIRTUAL_MEM_API_SUPPORTED", l.systemGetInfo(amdSystemInfoVirtualMemAPISupport, unsafe.Pointer(&vm))); err != nil {
		return backend.DeviceInfo{}, err
	}
	if vm&0xff == 0 {
		return backend.DeviceInfo{}, backend.NotSupportedf("HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED is false: the amdgpu/KFD driver lacks the virtual memory API (needs KFD ioctl >= 1.15 and a libdrm with amdgpu_device_get_fd)")
	}
	l.systemGetInfo(systemInfoTimestampFrequency, unsafe.Pointer(&b.tsFreq))
	if err := b.discover(); err != nil {
		return backend.DeviceInfo{}, err
	}
	if len(b.agents) == 0 {
		return backend.DeviceInfo{}, backend.NotSupportedf("HSA found no GPU agent")
	}
	b.visible = b.listAgents()
	dev, err := backend.Resolve(cfg, b.visible)
	if err != nil {
		return backend.DeviceInfo{}, err
	}
	if dev < 0 || dev >= len(b.agents) {
		return backend.DeviceInfo{}, fmt.Errorf("device %d out of range: %d GPU agents", dev, len(b.agents))
	}
	b.cfg.Device = dev
	b.self = b.agents[dev]
	b.cpu = b.nearestCPU()
	if b.cpu == nil || b.cpu.kernarg == 0 || b.cpu.sysFine == 0 {
		return backend.DeviceInfo{}, fmt.Errorf("no CPU agent with kernarg and fine-grained system pools")
	}
	nodeMu.Lock()
	for _, a := range b.agents {
		nodeOf[a.handle] = a.node
	}
	nodeMu.Unlock()
	if err := l.check(l.registerEventHandler(eventCallback(), 0)); err != nil {
		return backend.DeviceInfo{}, err
	}
	var q uintptr
	// The error callback records a queue error as the fault the next
	// Launch (or the running wait) returns; with none, ROCr's default
	// handler prints "Queue at … inactivated" and aborts.
	if err := l.check(l.queueCreate(b.self.handle, queueSize, queueTypeSingle, queueCallback(), 0, ^uint32(0), ^uint32(0), &q)); err != nil {
		return backend.DeviceInfo{}, err
	}
	b.queue = q
	if err := l.checkFor("staging", l.poolAllocate(b.cpu.sysFine, stagingSize, 0, &b.staging)); err != nil {
		return backend.DeviceInfo{}, err
	}
	if err := l.checkFor("staging", l.agentsAllowAccess(1, &b.self.handle, 0, b.staging)); err != nil {
		return backend.DeviceInfo{}, err
	}
	b.bufs = map[*buffer]bool{}
	if err := b.loadKernels(); err != nil {
		return backend.DeviceInfo{}, err
	}
	return b.deviceInfo(), nil
}

// interruptsOn refuses HSA_ENABLE_INTERRUPT=0: without interrupt signals
// ROCr binds no error handlers (core/runtime/runtime.cpp BindErrorHandlers
// returns early), so neither the system event handler nor ROCr's abort
// ever runs and every GPU fault would end as a 5-minute launch timeout
// instead of a crash with its address.
func interruptsOn() error {
	if os.Getenv("HSA_ENABLE_INTERRUPT") == "0" {
		return backend.NotSupportedf("HSA_ENABLE_INTERRUPT=0 is set: ROCr then installs no GPU fault handler and a fault would read as a %v timeout, not a crash; unset it to run the hsa backend", launchTimeout)
	}
	return nil
}

// discover enumerates agents, their ISAs and pools.
func (b *Backend) discover() error {
	callbacks()
	iterMu.Lock()
	defer iterMu.Unlock()
	iterAgents = nil
	if err := b.l.check(b.l.iterateAgents(agentCB, 0)); err != nil {
		return err
	}
	for _, h := range append([]uint64(nil), iterAgents...) {
		var dev uint32
		if err := b.l.checkFor("DEVICE", b.l.agentGetInfo(h, agentInfoDevice, unsafe.Pointer(&dev))); err != nil {
			return err
		}
		a := &agent{handle: h, gpu: dev == deviceTypeGPU, cpu: dev == deviceTypeCPU}
		b.l.agentGetInfo(h, agentInfoNode, unsafe.Pointer(&a.node))
		iterPools = nil
		if err := b.l.check(b.l.iteratePools(h, poolCB, 0)); err != nil {
			return err
		}
		for _, p := range append([]uint64(nil), iterPools...) {
			var seg, flags uint32
			var allowed uint64
			b.l.poolGetInfo(p, poolInfoSegment, unsafe.Pointer(&seg))
			if seg != segmentGlobal {
				continue
			}
			b.l.poolGetInfo(p, poolInfoGlobalFlags, unsafe.Pointer(&flags))
			b.l.poolGetInfo(p, poolInfoAllocAllowed, unsafe.Pointer(&allowed)) // bool: byte 0
			if allowed&0xff == 0 {
				continue
			}
			setIf := func(dst *uint64) {
				if *dst == 0 {
					*dst = p
				}
			}
			switch {
			case flags&globalFlagKernargInit != 0:
				setIf(&a.kernarg)
			case flags&globalFlagFineGrained != 0 && a.gpu:
				setIf(&a.fine)
			case flags&globalFlagFineGrained != 0:
				setIf(&a.sysFine)
			case flags&globalFlagExtScopeFine != 0:
				setIf(&a.extFine)
			case flags&globalFlagCoarseGrained != 0:
				setIf(&a.coarse)
			}
		}
		if a.gpu {
			iterISAs = nil
			if err := b.l.check(b.l.agentIterateISAs(h, isaCB, 0)); err != nil {
				return err
			}
			if len(iterISAs) > 0 {
				var n uint32
				b.l.isaGetInfoAlt(iterISAs[0], isaInfoNameLength, unsafe.Pointer(&n))
				name := make([]byte, n+1)
				if n > 0 && b.l.isaGetInfoAlt(iterISAs[0], isaInfoName, unsafe.Pointer(&name[0])).Code == statusSuccess {
					a.isa = goString(name)
				}
			}
			b.agents = append(b.agents, a)
		} else if a.cpu {
			// Other non-GPU agents (AIE, DSP) have no kernarg pool and
			// are skipped.
			b.cpus = append(b.cpus, a)
		}
	}
	return nil
}

// listAgents is every GPU agent as placement sees it: its ordinal, ISA
// target and product name.
func (b *Backend) listAgents() []device.Visible {
	var vs []device.Visible
	for i, a := range b.agents {
		name := b.agentString(a.handle, amdAgentInfoProductName)
		if name == "" {
			name = b.agentString(a.handle, agentInfoName)
		}
		vs = append(vs, device.Visible{Ordinal: i, Arch: target(a.isa), Name: name})
	}
	return vs
}

// nearestCPU is the CPU agent whose kernarg and staging memory serve this
// GPU: the one HSA_AMD_AGENT_INFO_NEAREST_CPU names (its NUMA node's, on a
// dual-socket MI300X host), else the first CPU agent. The first CPU on the
// other socket costs every launch's kernarg read and every staging copy a
// socket crossing (review 3, D11).
func (b *Backend) nearestCPU() *agent {
	var h uint64
	b.l.beginProbe() // an older runtime lacks the attribute: the first CPU
	st := b.l.agentGetInfo(b.self.handle, amdAgentInfoNearestCPU, unsafe.Pointer(&h))
	b.l.endProbe()
	for _, c := range b.cpus {
		if st.Code == statusSuccess && c.handle == h && c.kernarg != 0 && c.sysFine != 0 {
			return c
		}
	}
	if len(b.cpus) == 0 {
		return nil
	}
	return b.cpus[0]
}

// target turns "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" into
// "gfx942:sramecc+:xnack-" (the key kernels.ForArch takes).
func target(isa string) string {
	if i := strings.LastIndex(isa, "--"); i >= 0 {
		return isa[i+2:]
	}
	return isa
}

// arch is the processor alone: "gfx942".
func arch(isa string) string { t := target(isa); a, _, _ := strings.Cut(t, ":"); return a }

func (b *Backend) agentString(h uint64, attr uint32) string {
	buf := make([]byte, 256)
	b.l.beginProbe() // an attribute this runtime lacks reads as ""
	defer b.l.endProbe()
	if b.l.agentGetInfo(h, attr, unsafe.Pointer(&buf[0])).Code != statusSuccess {
		return ""
	}
	return goString(buf)
}

func (b *Backend) deviceInfo() backend.DeviceInfo {
	a := b.self
	name := b.agentString(a.handle, amdAgentInfoProductName)
	if name == "" {
		name = b.agentString(a.handle, agentInfoName)
	}
	var cus uint32
	b.l.agentGetInfo(a.handle, amdAgentInfoCUCount, unsafe.Pointer(&cus))
	_, total, _ := b.MemInfo()
	var maj, min uint16
	var emaj, emin uint16
	b.l.systemGetInfo(systemInfoVersionMajor, unsafe.Pointer(&maj))
	b.l.systemGetInfo(systemInfoVersionMinor, unsafe.Pointer(&min))
	b.l.systemGetInfo(amdSystemInfoExtVersionMajor, unsafe.Pointer(&emaj))
	b.l.systemGetInfo(amdSystemInfoExtVersionMinor, unsafe.Pointer(&emin))
	var build uintptr
	b.l.systemGetInfo(amdSystemInfoBuildVersion, unsafe.Pointer(&build))
	var xnack uint64
	b.l.systemGetInfo(amdSystemInfoXnackEnabled, unsafe.Pointer(&xnack))
	attrs := map[string]string{
		"isa":          a.isa,
		"node":         fmt.Sprint(a.node),
		"xnack":        fmt.Sprint(xnack&0xff != 0),
		"fine_pool":    fmt.Sprint(a.fine != 0),
		"extfine_pool": fmt.Sprint(a.extFine != 0),
		"library":      b.l.path,
	}
	// Which pool serves kind fine on this agent (every fine buffer of the
	// rank: the choice is per agent); each export's Meta says it too.
	if _, name, err := b.pool(kindFine); err == nil {
		attrs["fine_served_by"] = name
	}
	caps := device.Caps{HostAtomics: hostAtomics}
	for i, p := range b.agents {
		if p == a {
			continue
		}
		pool := p.coarse
		if p.fine != 0 {
			pool = p.fine
		}
		desc, peer := b.link(a, p, pool)
		attrs[fmt.Sprintf("link.%d", i)] = desc
		peer.Ordinal = i
		caps.Peers = append(caps.Peers, peer)
	}
	return backend.DeviceInfo{
		Vendor:   "amd",
		Name:     name,
		Arch:     arch(a.isa),
		UUID:     b.agentString(a.handle, amdAgentInfoUUID),
		Ordinal:  b.cfg.Device,
		Count:    len(b.agents),
		MemBytes: total,
		Units:    int(cus),
		Runtime:  fmt.Sprintf("hsa %d.%d amd-ext %d.%d rocr %s", maj, min, emaj, emin, cString(build, 128)),
		Attrs:    attrs,
		Caps:     caps,
		Devices:  b.visible,
	}
}

// link describes the path from agent a to peer's pool (type, hops, 32/64-bit
// atomic support per hop: hsa_amd_memory_pool_link_info_t) and answers the
// peer capabilities from it. ROCr fills the atomics bits from the KFD
// io-link's NoAtomics flags and lists no link for a pair without
// peer-to-peer DMA (core/runtime/amd_topology.cpp); KFD sets NoAtomics on a
// PCIe link whose root port lacks the AtomicOp completer and never on xGMI
// (kfd_topology.c kfd_set_iolink_no_atomics). So: no hops or
// ACCESS = NEVER_ALLOWED → no peer access; a hop without 32- or 64-bit
// atomics → no P2P atomics (the P2P cases use both widths). A PCIe hop with
// both bits set is still "no" unless P2PAT_AMD_PCIE_P2P_ATOMICS=1: those bits
// speak of each GPU's root port, not of peer-to-peer routing
// (hsaabi.PCIeAtomicsUnverified; issue 40, review 3 P9). Where the runtime
// does not answer, access is left to the import to refuse, as before.
func (b *Backend) link(a, peer *agent, pool uint64) (string, device.Peer) {
	unknown := device.Yes("AMD: ROCr gave no link facts from node %d to node %d; access is granted at import, which fails there when the link lacks it", a.node, peer.node)
	if pool == 0 {
		return "no pool", device.Peer{Access: device.No("AMD: node %d lists no VRAM pool", peer.node), Atomics: device.No("AMD: node %d lists no VRAM pool", peer.node)}
	}
	b.l.beginProbe() // link details are optional facts
	defer b.l.endProbe()
	var access uint32
	if b.l.agentPoolGetInfo(a.handle, pool, agentPoolInfoAccess, unsafe.Pointer(&access)).Code == statusSuccess && access == poolAccessNeverAllowed {
		no := device.No("AMD: HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS is NEVER_ALLOWED from node %d to node %d's pool", a.node, peer.node)
		return "access never allowed", device.Peer{Access: no, Atomics: no}
	}
	var hops uint32
	st := b.l.agentPoolGetInfo(a.handle, pool, agentPoolInfoNumLinkHops, unsafe.Pointer(&hops))
	if st.Code != statusSuccess {
		return "no link facts", device.Peer{Access: unknown, Atomics: unknown}
	}
	if hops == 0 {
		no := device.No("AMD: HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS is 0 from node %d to node %d: no peer-to-peer link (KFD lists none without P2P DMA)", a.node, peer.node)
		return "no link", device.Peer{Access: no, Atomics: no}
	}
	hops = min(hops, 8)
	infos := make([]linkInfo, hops)
	if b.l.agentPoolGetInfo(a.handle, pool, agentPoolInfoLinkInfo, unsafe.Pointer(&infos[0])).Code != statusSuccess {
		acc := device.Yes("AMD: %d link hops from node %d to node %d", hops, a.node, peer.node)
		return fmt.Sprintf("hops=%d", hops), device.Peer{Access: acc, Atomics: unknown}
	}
	var parts, noAtomics []string
	pcie := false
	for _, li := range infos {
		pcie = pcie || li.LinkType == linkTypePCIe
		parts = append(parts, fmt.Sprintf("%s atomics32=%v atomics64=%v coherent=%v bw=%d", linkName(li.LinkType), li.Atomic32, li.Atomic64, li.Coherent, li.MaxBandwidth))
		if !li.Atomic32 {
			noAtomics = append(noAtomics, linkName(li.LinkType)+" atomic_support_32bit=false")
		}
		if !li.Atomic64 {
			noAtomics = append(noAtomics, linkName(li.LinkType)+" atomic_support_64bit=false")
		}
	}
	desc := strings.Join(parts, " | ")
	p := device.Peer{
		Access:  device.Yes("AMD: %s from node %d to node %d", desc, a.node, peer.node),
		Atomics: device.Yes("AMD: %s from node %d to node %d", desc, a.node, peer.node),
	}
	if len(noAtomics) > 0 {
		p.Atomics = device.No("AMD: HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO from node %d to node %d says %s (KFD NoAtomics: the PCIe path lacks AtomicOp completion)",
			a.node, peer.node, strings.Join(noAtomics, ", "))
	} else if pcie && os.Getenv(hsaabi.PCIeAtomicsEnv) != "1" {
		p.Atomics = device.No("AMD: %s from node %d to node %d; %s", desc, a.node, peer.node, hsaabi.PCIeAtomicsUnverified)
	}
	return desc, p
}

func linkName(t uint32) string {
	switch t {
	case linkTypeHyperTransport:
		return "hypertransport"
	case linkTypeQPI:
		return "qpi"
	case linkTypePCIe:
		return "pcie"
	case linkTypeInfiniband:
		return "infiniband"
	case linkTypeXGMI:
		return "xgmi"
	}
	return fmt.Sprintf("link%d", t)
}

// Pool names, recorded per buffer (Export.Meta "pool"): fine is served by
// the FINE_GRAINED pool where ROCr lists one (an XGMI hive, gfx12, or
// HSA_FORCE_FINE_GRAIN_PCIE) and by EXTENDED_SCOPE_FINE_GRAINED otherwise,
// so one case id can measure different memory on different machines.
const (
	poolFine    = "fine-grained"
	poolExtFine = "extended-scope-fine-grained"
	poolCoarse  = "coarse-grained"
)

// pool picks the vmem pool for kind on the rank's agent, and names it.
func (b *Backend) pool(kind string) (uint64, string, error) {
	switch kind {
	case kindFine:
		if b.self.fine != 0 {
			return b.self.fine, poolFine, nil
		}
		if b.self.extFine != 0 {
			return b.self.extFine, poolExtFine, nil
		}
		return 0, "", backend.NotSupportedf("agent %s has no FINE_GRAINED or EXTENDED_SCOPE_FINE_GRAINED VRAM pool: ROCr exposes the fine-grained pool only in an XGMI hive; set HSA_FORCE_FINE_GRAIN_PCIE=1 on a PCIe system", b.self.isa)
	case kindCoarse:
		if b.self.coarse == 0 {
			return 0, "", backend.NotSupportedf("agent %s has no COARSE_GRAINED pool", b.self.isa)
		}
		return b.self.coarse, poolCoarse, nil
	}
	return 0, "", fmt.Errorf("hsa: unknown kind %q (have %v)", kind, b.Kinds())
}

func (b *Backend) granule(pool uint64) uint64 {
	var g uint64
	b.l.beginProbe() // the recommended granule is new; fall back to the minimum
	defer b.l.endProbe()
	if b.l.poolGetInfo(pool, poolInfoAllocRecGranule, unsafe.Pointer(&g)).Code != statusSuccess || g == 0 {
		if b.l.poolGetInfo(pool, poolInfoAllocGranule, unsafe.Pointer(&g)).Code != statusSuccess || g == 0 {
			g = 2 << 20
		}
	}
	return g
}

// Alloc: reserve → handle_create → map → set_access(own agent RW) →
// export dma-buf fd. Any failure undoes the steps done, in reverse.
func (b *Backend) Alloc(kind string, size uint64) (backend.Buffer, backend.Export, error) {
	pool, poolName, err := b.pool(kind)
	if err != nil {
		return nil, backend.Export{}, err
	}
	g := b.granule(pool)
	size = (size + g - 1) / g * g
	buf := &buffer{size: size, owner: b.self}
	l := b.l
	if err := l.check(l.vmemAddressReserve(&buf.va, size, 0, 0)); err != nil {
		return nil, backend.Export{}, err
	}
	if err := l.check(l.vmemHandleCreate(pool, size, memoryTypeNone, 0, &buf.handle)); err != nil {
		l.vmemAddressFree(buf.va, size)
		return nil, backend.Export{}, err
	}
	if err := l.check(l.vmemMap(buf.va, size, 0, buf.handle, 0)); err != nil {
		b.release(buf)
		return nil, backend.Export{}, err
	}
	buf.mapped = true
	// The owner grants only itself, as the CUDA and HIP backends do: each
	// importer grants its own agent on its own mapping. ROCr exports,
	// imports and maps the memory for every agent in the list, so granting
	// all of them cost N maps per allocation and, on a PCIe host with one
	// peer that cannot map it, failed every allocation.
	desc := accessDesc{Permissions: accessPermissionRW, Agent: b.self.handle}
	if err := l.check(l.vmemSetAccess(buf.va, size, &desc, 1)); err != nil {
		b.release(buf)
		return nil, backend.Export{}, err
	}
	var fd int32 = -1
	if err := l.check(l.vmemExport(&fd, buf.handle, 0)); err != nil {
		b.release(buf)
		return nil, backend.Export{}, err
	}
	b.bufs[buf] = true
	return buf, backend.Export{Fd: int(fd), Size: size, Meta: map[string]string{"kind": kind, "export": "dma-buf", "pool": poolName, metaNode: fmt.Sprint(b.self.node)}}, nil
}

// Import: import_shareable_handle(fd) → reserve → map → set_access (own
// agent, only if grant). The fd stays open until map and set_access are done
// (some 2026 ROCr builds defer the per-GPU import to set_access) and is
// closed here in every case: the backend owns exp.Fd.
func (b *Backend) Import(kind string, exp backend.Export, grant bool) (backend.Buffer, error) {
	defer func() {
		if exp.Fd >= 0 {
			syscall.Close(exp.Fd)
		}
	}()
	if _, _, err := b.pool(kind); err != nil {
		return nil, err
	}
	if exp.Fd < 0 {
		return nil, fmt.Errorf("hsa import: export has no fd")
	}
	l := b.l
	owner, err := b.ownerOf(exp)
	if err != nil {
		return nil, err
	}
	buf := &buffer{size: exp.Size, imported: true, owner: owner}
	if err := l.check(l.vmemImport(int32(exp.Fd), &buf.handle)); err != nil {
		return nil, err
	}
	if err := l.check(l.vmemAddressReserve(&buf.va, buf.size, 0, 0)); err != nil {
		l.vmemHandleRelease(buf.handle)
		return nil, err
	}
	if err := l.check(l.vmemMap(buf.va, buf.size, 0, buf.handle, 0)); err != nil {
		b.release(buf)
		return nil, err
	}
	buf.mapped = true
	if grant {
		d := accessDesc{Permissions: accessPermissionRW, Agent: b.self.handle}
		if err := l.check(l.vmemSetAccess(buf.va, buf.size, &d, 1)); err != nil {
			b.release(buf)
			return nil, err
		}
	}
	b.bufs[buf] = true
	return buf, nil
}

// metaNode is the export's Meta key for the owner agent's KFD node
// (HSA_AGENT_INFO_NODE): the same number in every process of the machine,
// whatever each rank's device ordinal or visibility mask.
const metaNode = "node"

// ownerOf finds the agent that exported exp. An export without the node
// (an older rank) is taken as this rank's own agent, which keeps the copy
// correct (ROCr's blit kernel reads any mapped VA) but says so in Copy's
// method.
func (b *Backend) ownerOf(exp backend.Export) (*agent, error) {
	s, ok := exp.Meta[metaNode]
	if !ok {
		return nil, nil
	}
	for _, a := range b.agents {
		if fmt.Sprint(a.node) == s {
			return a, nil
		}
	}
	return nil, fmt.Errorf("hsa import: the exporter's agent (KFD node %s) is not one of this rank's %d GPU agents", s, len(b.agents))
}

// release tears a buffer down in reverse: unmap → address_free → handle_release.
func (b *Backend) release(buf *buffer) error {
	var errs []error
	if buf.mapped {
		errs = append(errs, b.l.check(b.l.vmemUnmap(buf.va, buf.size)))
		buf.mapped = false
	}
	if buf.va != 0 {
		errs = append(errs, b.l.check(b.l.vmemAddressFree(buf.va, buf.size)))
		buf.va = 0
	}
	if buf.handle != 0 {
		errs = append(errs, b.l.check(b.l.vmemHandleRelease(buf.handle)))
		buf.handle = 0
	}
	return errors.Join(errs...)
}

func (b *Backend) Free(bb backend.Buffer) error {
	buf, ok := bb.(*buffer)
	if !ok || !b.bufs[buf] {
		return fmt.Errorf("hsa: buffer %#x is not this backend's", bb.Addr())
	}
	delete(b.bufs, buf)
	return b.release(buf)
}

// loadKernels loads the agent's code object: the bytes go into mmap'd memory
// (outside the Go heap: the reader keeps pointing at them), then reader →
// executable create/load/freeze; symbols are looked up lazily by "<name>.kd".
func (b *Backend) loadKernels() error {
	obj, err := kernels.ForArch(target(b.self.isa))
	if err != nil {
		if errors.Is(err, kernels.ErrNoObject) {
			return backend.NotSupportedf("no kernel code object for %s: %v", target(b.self.isa), err)
		}
		return err
	}
	mem, err := syscall.Mmap(-1, 0, len(obj.Data), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return fmt.Errorf("mmap for code object: %w", err)
	}
	copy(mem, obj.Data)
	b.code = mem
	l := b.l
	if err := l.check(l.readerCreate(uintptr(unsafe.Pointer(&mem[0])), uint64(len(mem)), &b.reader)); err != nil {
		return err
	}
	if err := l.check(l.executableCreateAlt(profileFull, floatRoundingModeDefault, 0, &b.exe)); err != nil {
		return err
	}
	if err := l.check(l.executableLoadAgent(b.exe, b.self.handle, b.reader, 0, 0)); err != nil {
		return fmt.Errorf("%w (code object for %s, agent ISA %s; LOADER_ENABLE_LOGGING=1 shows the loader's reason)", err, obj.Target, b.self.isa)
	}
	if err := l.check(l.executableFreeze(b.exe, 0)); err != nil {
		return err
	}
	b.kerns = map[string]*kernelInfo{}
	return nil
}

func (b *Backend) kernel(name string) (*kernelInfo, error) {
	if k, ok := b.kerns[name]; ok {
		return k, nil
	}
	sym := append([]byte(name+".kd"), 0)
	var s uint64
	if err := b.l.checkFor(name+".kd", b.l.executableSymbol(b.exe, &sym[0], &b.self.handle, &s)); err != nil {
		return nil, err
	}
	k := &kernelInfo{}
	b.l.symbolGetInfo(s, symInfoKernelObject, unsafe.Pointer(&k.object))
	b.l.symbolGetInfo(s, symInfoKernargSegmentSize, unsafe.Pointer(&k.kernargSize))
	b.l.symbolGetInfo(s, symInfoGroupSegmentSize, unsafe.Pointer(&k.groupSize))
	b.l.symbolGetInfo(s, symInfoPrivateSegmentSize, unsafe.Pointer(&k.privSize))
	size := uint64(max(k.kernargSize, 16))
	if err := b.l.checkFor("kernarg", b.l.poolAllocate(b.cpu.kernarg, size, 0, &k.kernarg)); err != nil {
		return nil, err
	}
	if err := b.l.checkFor("kernarg", b.l.agentsAllowAccess(1, &b.self.handle, 0, k.kernarg)); err != nil {
		return nil, err
	}
	b.kerns[name] = k
	return k, nil
}

// Launch dispatches one AQL packet and waits for its completion signal.
func (b *Backend) Launch(k kernels.Kernel, grid, block uint32, args []uint64) (backend.LaunchResult, error) {
	if f := takeFault(); f != nil {
		return backend.LaunchResult{}, f
	}
	if len(args) != len(k.Args) {
		return backend.LaunchResult{}, fmt.Errorf("%s takes %d arguments, got %d", k.Name, len(k.Args), len(args))
	}
	ki, err := b.kernel(k.Name)
	if err != nil {
		return backend.LaunchResult{}, err
	}
	seg := unsafe.Slice((*byte)(ptr(ki.kernarg)), max(ki.kernargSize, 16))
	if err := encodeKernargs(seg, args); err != nil {
		return backend.LaunchResult{}, err
	}
	var sig uint64
	if err := b.l.check(b.l.signalCreate(1, 0, 0, &sig)); err != nil {
		return backend.LaunchResult{}, err
	}
	defer b.l.signalDestroy(sig)
	pkt, err := newDispatch(grid, block, ki.object, uint64(ki.kernarg), sig, ki.privSize, ki.groupSize)
	if err != nil {
		return backend.LaunchResult{}, err
	}
	q := (*queue)(ptr(b.queue))
	idx := b.l.queueAddWriteIndex(b.queue, 1)
	for idx-b.l.queueLoadReadIndex(b.queue) >= uint64(q.Size) {
		runtime.Gosched()
	}
	slot := ptr(q.BaseAddress + uintptr(idx&uint64(q.Size-1))*64)
	start := time.Now()
	publish(slot, pkt)
	b.l.signalStoreScrel(q.DoorbellSignal, int64(idx))
	if err := b.wait(sig, k.Name); err != nil {
		return backend.LaunchResult{}, err
	}
	return backend.LaunchResult{Elapsed: time.Since(start), Method: "wall"}, nil
}

// wait waits for sig < 1 in short slices so that a fault recorded by the
// event handler (which suppresses ROCr's abort) ends the wait promptly. A
// negative value is ROCr's report of a failed async operation
// (hsa_ext_amd.h, hsa_amd_memory_async_copy's completion_signal): an error
// naming it, not done.
func (b *Backend) wait(sig uint64, what string) error {
	slice := uint64(10 * time.Millisecond)
	if b.tsFreq > 0 {
		slice = b.tsFreq / 100
	}
	deadline := time.Now().Add(launchTimeout)
	for {
		if v := b.waitSlice(sig, slice); v < 0 {
			if f := takeFault(); f != nil {
				return f
			}
			return fmt.Errorf("%s failed: ROCr set its completion signal to %d", what, v)
		} else if v == 0 {
			return nil
		}
		if f := takeFault(); f != nil {
			return f
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not complete after %v", what, launchTimeout)
		}
	}
}

// waitSlice is one bounded hsa_signal_wait_scacquire under the watchdog
// (internal/watchdog; issue 50, Q6), as CUDA's and HIP's device waits are:
// a wait still in flight while hsa_signal_load_relaxed already reads the
// signal below 1 (done, or a failed copy's negative value) is a wedged
// runtime call, reported in the trace ring within a third of a second.
// The slice's timeout hint should end it within 10 ms; a blocked wait on a
// lost interrupt is what would not.
func (b *Backend) waitSlice(sig, slice uint64) int64 {
	return watchdog.Wait("hsa_signal_wait_scacquire", func() (bool, string) {
		v := b.l.signalLoadRelaxed(sig)
		return v < 1, fmt.Sprintf("hsa_signal_load_relaxed(%#x): %d", sig, v)
	}, func() int64 { return b.l.signalWaitScacq(sig, signalConditionLT, 1, slice, waitStateBlocked) })
}

// copyRange runs the copy kernel: dst[0:n] = src[0:n], n % 16 == 0.
func (b *Backend) copyRange(dst, src uintptr, n uint64) error {
	k := kernels.MustLookup(copyKernel)
	const block = 256
	grid := uint32(min((n/16+block-1)/block, 1024))
	_, err := b.Launch(k, grid, block, []uint64{uint64(dst), uint64(src), n, block, uint64(grid) * block})
	return err
}

// Read copies p from b[off:] through the host-visible staging buffer with
// the copy kernel (hipMemcpy-style runtime copies cannot see vmem VAs).
func (b *Backend) Read(bb backend.Buffer, off uint64, p []byte) error {
	return b.transfer(bb, off, p, false)
}

// Write is Read's mirror; unaligned edges are read, patched and written back.
func (b *Backend) Write(bb backend.Buffer, off uint64, p []byte) error {
	return b.transfer(bb, off, p, true)
}

func (b *Backend) transfer(bb backend.Buffer, off uint64, p []byte, write bool) error {
	if !backend.Within(off, uint64(len(p)), bb.Size()) {
		return fmt.Errorf("hsa: %d bytes at %d outside buffer of %d bytes", len(p), off, bb.Size())
	}
	stage := unsafe.Slice((*byte)(ptr(b.staging)), stagingSize)
	for len(p) > 0 {
		lo := off &^ 15
		n := min(uint64(len(p))+(off-lo), stagingSize)
		span := (n + 15) &^ 15
		if !backend.Within(lo, span, bb.Size()) {
			return fmt.Errorf("hsa: buffer size %d is not a multiple of 16", bb.Size())
		}
		dev := uintptr(bb.Addr() + lo)
		if err := b.copyRange(b.staging, dev, span); err != nil {
			return err
		}
		c := int(n - (off - lo))
		if write {
			copy(stage[off-lo:], p[:c])
			if err := b.copyRange(dev, b.staging, span); err != nil {
				return err
			}
		} else {
			copy(p[:c], stage[off-lo:])
		}
		p = p[c:]
		off += uint64(c)
	}
	return nil
}

// Copy uses hsa_amd_memory_async_copy with a completion signal; timing is
// the wall clock around it. ROCr runs a copy on src_agent when that is a GPU
// (rocr7 core/runtime/runtime.cpp CopyMemory, CopyMemoryOnEngine:
// copy_agent = src_gpu ? src_agent : dst_agent), under this process's VM on
// that GPU, and a vmem VA is mapped only on the agents set_access granted:
// this rank's own agent alone (Alloc and Import grant b.self). So both
// agents a copy names are this rank's (copyAgents): the header requires
// each named agent to access both buffers (hsa_ext_amd.h,
// hsa_amd_memory_async_copy), and the peer agent holds no grant on either
// VA in this process. ROCr would take the blit kernel for one agent at
// 1 MiB and more, so where the explicit-engine entry points exist a push
// or a pull is forced onto this GPU's SDMA engine toward the peer
// (force_copy_on_sdma, which DmaCopyOnEngine honours). Until issue 40 a
// pull named the peer as src_agent: the copy ran on the peer, which maps
// neither VA, a VM fault; until issue 50 (Q7) a push named it as dst_agent,
// which ROCr 6.4/7.2 only use to pick the engine. The method names which ran.
func (b *Backend) Copy(dst backend.Buffer, dstOff uint64, src backend.Buffer, srcOff uint64, n uint64) (backend.LaunchResult, error) {
	da, sa, peer := b.copyAgents(dst, src)
	var sig uint64
	if err := b.l.check(b.l.signalCreate(1, 0, 0, &sig)); err != nil {
		return backend.LaunchResult{}, err
	}
	defer b.l.signalDestroy(sig)
	start := time.Now()
	dp, sp := uintptr(dst.Addr()+dstOff), uintptr(src.Addr()+srcOff)
	from, to := b.copyAgent(src).node, b.copyAgent(dst).node
	method := copyMethod(da, sa, from, to, n)
	if eng := b.sdmaEngine(peer); eng != 0 {
		// An explicit SDMA engine of this GPU toward the peer, named by
		// its id, whatever ROCr's own pick would be; forced, since the
		// two agents are one.
		if err := b.l.check(b.l.copyOnEngine(dp, da.handle, sp, sa.handle, n, 0, 0, sig, eng, da == sa)); err != nil {
			return backend.LaunchResult{}, err
		}
		method = fmt.Sprintf("hsa-signal, SDMA engine %#x of node %d (node %d → node %d, hsa_amd_memory_async_copy_on_engine)", eng, sa.node, from, to)
	} else if err := b.l.check(b.l.asyncCopy(dp, da.handle, sp, sa.handle, n, 0, 0, sig)); err != nil {
		return backend.LaunchResult{}, err
	}
	if err := b.wait(sig, "hsa_amd_memory_async_copy"); err != nil {
		return backend.LaunchResult{}, err
	}
	return backend.LaunchResult{Elapsed: time.Since(start), Method: method}, nil
}

// copyAgents gives the (dst_agent, src_agent) pair for a copy and the peer
// GPU it crosses to (nil for a local copy). Both are this rank's agent, the
// one agent granted on every VA this rank holds (issue 50, Q7: a push named
// the peer as dst_agent without a grant on either VA); the peer only picks
// the SDMA engine (sdmaEngine).
func (b *Backend) copyAgents(dst, src backend.Buffer) (da, sa, peer *agent) {
	da, sa = b.self, b.self
	if o := b.copyAgent(dst); o != b.self {
		peer = o
	} else if o := b.copyAgent(src); o != b.self {
		peer = o
	}
	return da, sa, peer
}

// sdmaEngine is the SDMA engine (one bit of hsa_amd_sdma_engine_id_t) of
// this GPU toward peer, among the free ones
// hsa_amd_memory_copy_engine_status(dst=peer, src=self) reports: the
// lowest of those hsa_amd_memory_get_preferred_copy_engine recommends
// (KFD's per-peer xGMI engine, the one ROCr's own
// hsa_amd_memory_async_copy takes on gfx9.4: amd_gpu_agent.cpp), else the
// lowest free one. 0 (ROCr's own pick) for a local copy, where the runtime
// lacks the entry points or reports none, under HSA_ENABLE_SDMA=0, and
// under HSA_ENABLE_PEER_SDMA=0 (DmaCopyOnEngine then runs the blit kernel
// whatever engine is named).
func (b *Backend) sdmaEngine(peer *agent) uint32 {
	if peer == nil || b.l.copyOnEngine == nil || b.l.copyEngineStatus == nil || os.Getenv("HSA_ENABLE_SDMA") == "0" || os.Getenv("HSA_ENABLE_PEER_SDMA") == "0" {
		return 0
	}
	var free, pref uint32
	b.l.beginProbe() // no engine is an answer: fall back to ROCr's pick
	defer b.l.endProbe()
	if b.l.copyEngineStatus(peer.handle, b.self.handle, &free).Code != statusSuccess {
		return 0
	}
	if b.l.preferredEngine != nil && b.l.preferredEngine(peer.handle, b.self.handle, &pref).Code == statusSuccess && pref&free != 0 {
		free &= pref
	}
	return free & -free
}

// copyAgent is the agent that owns bb's memory (this rank's when unknown).
func (b *Backend) copyAgent(bb backend.Buffer) *agent {
	if buf, ok := bb.(*buffer); ok && buf.owner != nil {
		return buf.owner
	}
	return b.self
}

// sdmaMinBytes is ROCr's HSA_FORCE_SDMA_SIZE (core/util/flag.h, default
// 1 MiB): a same-agent copy at or above it runs the blit kernel. ok is
// false when the variable is set but not a decimal byte count.
func sdmaMinBytes() (n uint64, ok bool) {
	v := os.Getenv("HSA_FORCE_SDMA_SIZE")
	if v == "" {
		return 1 << 20, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// copyMethod names the engine ROCr runs for a copy between agents da and
// sa, moving data from node from to node to (docs/AMD.md, "Which engine a
// copy ran on").
func copyMethod(da, sa *agent, from, to uint32, n uint64) string {
	floor, ok := sdmaMinBytes()
	switch {
	case os.Getenv("HSA_ENABLE_SDMA") == "0":
		return "hsa-signal, blit kernel (HSA_ENABLE_SDMA=0)"
	case from != to && os.Getenv("HSA_ENABLE_PEER_SDMA") == "0":
		return fmt.Sprintf("hsa-signal, blit kernel of node %d (HSA_ENABLE_PEER_SDMA=0; node %d → node %d)", sa.node, from, to)
	case da != sa:
		return fmt.Sprintf("hsa-signal, SDMA engine of node %d (node %d → node %d)", sa.node, from, to)
	case !ok:
		return fmt.Sprintf("hsa-signal, SDMA engine or blit kernel (one agent, node %d, HSA_FORCE_SDMA_SIZE=%q unread; node %d → node %d)", sa.node, os.Getenv("HSA_FORCE_SDMA_SIZE"), from, to)
	case n >= floor:
		return fmt.Sprintf("hsa-signal, blit kernel (one agent, node %d; node %d → node %d)", sa.node, from, to)
	}
	return fmt.Sprintf("hsa-signal, SDMA engine or blit kernel (one agent, node %d, under HSA_FORCE_SDMA_SIZE; node %d → node %d)", sa.node, from, to)
}

// MemInfo: total is the agent's coarse VRAM pool size; free comes from
// HSA_AMD_AGENT_INFO_MEMORY_AVAIL where the runtime answers it, else it is
// reported equal to total (documented in docs/AMD.md).
func (b *Backend) MemInfo() (free, total uint64, err error) {
	pool := b.self.coarse
	if pool == 0 {
		pool = b.self.fine
	}
	if err := b.l.checkFor("SIZE", b.l.poolGetInfo(pool, poolInfoSize, unsafe.Pointer(&total))); err != nil {
		return 0, 0, err
	}
	if b.l.agentGetInfo(b.self.handle, amdAgentInfoMemoryAvail, unsafe.Pointer(&free)).Code != statusSuccess {
		free = total
	}
	return free, total, nil
}

// Close frees what Open made, in reverse. hsa_shut_down is NOT called:
// hsa_init is once per process and the rank exits after Close.
func (b *Backend) Close() error {
	if b.l == nil {
		return nil
	}
	var errs []error
	for buf := range b.bufs {
		errs = append(errs, b.release(buf))
	}
	b.bufs = nil
	for _, k := range b.kerns {
		b.l.poolFree(k.kernarg)
	}
	b.kerns = nil
	if b.exe != 0 {
		b.l.executableDestroy(b.exe)
		b.exe = 0
	}
	if b.reader != 0 {
		b.l.readerDestroy(b.reader)
		b.reader = 0
	}
	if b.code != nil {
		syscall.Munmap(b.code)
		b.code = nil
	}
	if b.staging != 0 {
		b.l.poolFree(b.staging)
		b.staging = 0
	}
	if b.queue != 0 {
		b.l.queueDestroy(b.queue)
		b.queue = 0
	}
	return errors.Join(errs...)
}

// hostAtomics: fine-grained system memory is coherent with the CPU, and
// whether a kind has a CPU mapping at all is decided (and reported) at
// allocation. Peer capabilities come from the link (Backend.link).
var hostAtomics = device.Yes("AMD: fine-grained system memory is coherent with the CPU; the kind's CPU mapping is checked at allocation")
