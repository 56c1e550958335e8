package hip

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unsafe"

	"p2patomics/internal/hsaabi"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

// kindHSAFine is HSA fine-grained VRAM (hsa_amd_vmem_* from the agent's
// FINE_GRAINED pool, EXTENDED_SCOPE_FINE_GRAINED where ROCr lists none),
// shared as a dma-buf, with kernels launched on it through HIP
// (hipModuleLaunchKernel): the seed's exact dispatch (IRIS-FIX
// p2p_atomics_hsa.cpp allocates with HSA and launches with hipLaunchKernel).
// It is not one of Kinds(): not a matrix row, so the general plan never
// multiplies the catalogue over it. One case asks for it by name
// (specs/hipvmem.go, through Ctx.SharedKind); docs/AMD.md says why.
const kindHSAFine = "hsa-fine"

// hsaStagingSize is the hipMalloc buffer Read and Write go through.
const hsaStagingSize = 4 << 20

// hsaSide is the hsa-fine kind's state, set up at its first allocation or
// import (never at Open, so the pinned and uncached kinds do not depend on
// it): the bound library, the HSA agent that is this rank's HIP device, and
// the pool.
type hsaSide struct {
	l        *hsaLib
	agent    uint64
	node     uint32
	pool     uint64
	poolName string
}

// hsaBuffer is an HSA vmem mapping on this rank's agent, own or imported.
// HIP does not track its address: hipMemcpy* refuse it, so Read and Write
// go through the copy kernel into a hipMalloc staging buffer.
type hsaBuffer struct {
	va     uintptr
	size   uint64
	handle uint64
	mapped bool
}

func (b *hsaBuffer) Addr() uint64 { return uint64(b.va) }
func (b *hsaBuffer) Size() uint64 { return b.size }

// hsa returns the hsa-fine state, setting it up once; a failure (a skip
// naming what is missing, or an error) is kept and returned every time.
func (b *Backend) hsa() (*hsaSide, error) {
	if b.hside != nil || b.hsideErr != nil {
		return b.hside, b.hsideErr
	}
	if b.hl == nil {
		b.hl, b.hsideErr = loadHSA()
	}
	if b.hsideErr == nil {
		b.hside, b.hsideErr = b.openHSA(b.hl)
	}
	return b.hside, b.hsideErr
}

// openHSA: vmem entry points → hsa_init (ROCr counts it: CLR's own init
// stays; never shut down) → VIRTUAL_MEM_API_SUPPORTED → the agent whose
// UUID is this HIP device's → its fine pool.
func (b *Backend) openHSA(l *hsaLib) (*hsaSide, error) {
	if err := l.needAll(); err != nil {
		return nil, err
	}
	if err := l.check(l.init_()); err != nil {
		return nil, err
	}
	var vm uint8
	if l.systemGetInfo(hsaabi.AmdSystemInfoVirtualMemAPISupport, unsafe.Pointer(&vm)).Code != hsaabi.StatusSuccess || vm == 0 {
		return nil, backend.NotSupportedf("HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED is false on %s (the KFD driver lacks the vmem ioctls: amdgpu KFD >= 1.15)", l.path)
	}
	s := &hsaSide{l: l}
	var err error
	if s.agent, s.node, err = b.matchAgent(l); err != nil {
		return nil, err
	}
	if s.pool, s.poolName, err = finePool(l, s.agent); err != nil {
		return nil, err
	}
	return s, nil
}

// hipUUID is the HSA form of HIP's device UUID. CLR fills
// hipDeviceProp_t.uuid with the 16 characters that follow "GPU-" in ROCr's
// HSA_AMD_AGENT_INFO_UUID (rocdevice.cpp), so "GPU-" plus those bytes as
// text is the agent's UUID. "" when HIP gave none (no R0600 properties).
func (b *Backend) hipUUID() string {
	if b.uuid == ([16]byte{}) {
		return ""
	}
	return "GPU-" + cstr(b.uuid[:])
}

// matchAgent finds the HSA GPU agent that is this rank's HIP device, by
// UUID. Neither the ordinal (HIP_VISIBLE_DEVICES renumbers HIP's devices,
// not ROCr's agents) nor the order of enumeration is safe; a UUID that
// matches no agent, or more than one, is an error naming every candidate:
// allocating on another GPU would measure the wrong path silently.
func (b *Backend) matchAgent(l *hsaLib) (uint64, uint32, error) {
	want := b.hipUUID()
	if want == "" || want == "GPU-XX" {
		return 0, 0, backend.NotSupportedf("HIP device %d reports no unique UUID (%q): the hsa-fine kind finds its HSA agent by UUID", b.cfg.Device, want)
	}
	agents, err := hsaList(l, func(cb uintptr) hstatus { return l.iterateAgents(cb, 0) })
	if err != nil {
		return 0, 0, err
	}
	var seen []string
	var hit []uint64
	for _, a := range agents {
		var dev uint32
		if l.agentGetInfo(a, hsaabi.AgentInfoDevice, unsafe.Pointer(&dev)).Code != hsaabi.StatusSuccess || dev != hsaabi.DeviceTypeGPU {
			continue
		}
		var u [24]byte // char[21] and room
		l.agentGetInfo(a, hsaabi.AmdAgentInfoUUID, unsafe.Pointer(&u[0]))
		id := cstr(u[:])
		seen = append(seen, id)
		if id == want {
			hit = append(hit, a)
		}
	}
	if len(hit) != 1 {
		return 0, 0, fmt.Errorf("hip hsa-fine: HIP device %d has UUID %s; %d of the HSA GPU agents match (agents' UUIDs: %s)", b.cfg.Device, want, len(hit), strings.Join(seen, ", "))
	}
	var node uint32
	l.agentGetInfo(hit[0], hsaabi.AgentInfoNode, unsafe.Pointer(&node))
	return hit[0], node, nil
}

// finePool is the agent's first global, runtime-allocatable FINE_GRAINED
// pool (the seed's), else EXTENDED_SCOPE_FINE_GRAINED, with its name.
func finePool(l *hsaLib, agent uint64) (uint64, string, error) {
	pools, err := hsaList(l, func(cb uintptr) hstatus { return l.iteratePools(agent, cb, 0) })
	if err != nil {
		return 0, "", err
	}
	var fine, ext uint64
	for _, p := range pools {
		var seg, flags uint32
		var allowed uint64
		l.poolGetInfo(p, hsaabi.PoolInfoSegment, unsafe.Pointer(&seg))
		l.poolGetInfo(p, hsaabi.PoolInfoGlobalFlags, unsafe.Pointer(&flags))
		l.poolGetInfo(p, hsaabi.PoolInfoAllocAllowed, unsafe.Pointer(&allowed)) // bool: byte 0
		if seg != hsaabi.SegmentGlobal || allowed&0xff == 0 {
			continue
		}
		switch {
		case flags&hsaabi.GlobalFlagFineGrained != 0 && fine == 0:
			fine = p
		case flags&hsaabi.GlobalFlagExtScopeFine != 0 && ext == 0:
			ext = p
		}
	}
	switch {
	case fine != 0:
		return fine, "fine-grained", nil
	case ext != 0:
		return ext, "extended-scope-fine-grained", nil
	}
	return 0, "", backend.NotSupportedf("the HSA agent has no FINE_GRAINED or EXTENDED_SCOPE_FINE_GRAINED VRAM pool: ROCr exposes the fine-grained pool only in an XGMI hive; set HSA_FORCE_FINE_GRAIN_PCIE=1 on a PCIe system")
}

// granule is the pool's recommended allocation granule, else its minimum,
// else 2 MiB.
func (s *hsaSide) granule() uint64 {
	var g uint64
	s.l.probing.Add(1) // the recommended granule is new; fall back to the minimum
	defer s.l.probing.Add(-1)
	if s.l.poolGetInfo(s.pool, hsaabi.PoolInfoAllocRecGranule, unsafe.Pointer(&g)).Code != hsaabi.StatusSuccess || g == 0 {
		if s.l.poolGetInfo(s.pool, hsaabi.PoolInfoAllocGranule, unsafe.Pointer(&g)).Code != hsaabi.StatusSuccess || g == 0 {
			g = 2 << 20
		}
	}
	return g
}

// grant gives this rank's agent (alone, as every backend does: importers
// grant themselves) read-write access to buf.
func (s *hsaSide) grant(buf *hsaBuffer) error {
	d := hsaabi.AccessDesc{Permissions: hsaabi.AccessPermissionRW, Agent: s.agent}
	return s.l.check(s.l.vmemSetAccess(buf.va, buf.size, &d, 1))
}

// allocHSA: reserve → handle_create(fine pool, MEMORY_TYPE_NONE) → map →
// set_access (own agent RW) → export a dma-buf fd. Any failure undoes the
// steps done, in reverse.
func (b *Backend) allocHSA(size uint64) (backend.Buffer, backend.Export, error) {
	s, err := b.hsa()
	if err != nil {
		return nil, backend.Export{}, err
	}
	l := s.l
	g := s.granule()
	buf := &hsaBuffer{size: (size + g - 1) / g * g}
	if err := l.check(l.vmemAddressReserve(&buf.va, buf.size, 0, 0)); err != nil {
		return nil, backend.Export{}, err
	}
	if err := l.check(l.vmemHandleCreate(s.pool, buf.size, hsaabi.MemoryTypeNone, 0, &buf.handle)); err != nil {
		b.releaseHSA(buf)
		return nil, backend.Export{}, err
	}
	err = l.check(l.vmemMap(buf.va, buf.size, 0, buf.handle, 0))
	buf.mapped = err == nil
	if err == nil {
		err = s.grant(buf)
	}
	var fd int32 = -1
	if err == nil {
		err = l.check(l.vmemExport(&fd, buf.handle, 0))
	}
	if err != nil {
		b.releaseHSA(buf)
		return nil, backend.Export{}, err
	}
	b.hbufs[buf] = true
	return buf, backend.Export{Fd: int(fd), Size: buf.size, Meta: map[string]string{
		"kind": kindHSAFine, "export": "dma-buf", "pool": s.poolName, "node": fmt.Sprint(s.node)}}, nil
}

// importHSA: import_shareable_handle(fd) → reserve → map → set_access (own
// agent, only if grant). The caller closes the fd after this returns
// (deferred-import ROCr builds need it until set_access).
func (b *Backend) importHSA(exp backend.Export, grant bool) (backend.Buffer, error) {
	s, err := b.hsa()
	if err != nil {
		return nil, err
	}
	if exp.Fd < 0 {
		return nil, fmt.Errorf("hip hsa-fine import: export has no fd")
	}
	l := s.l
	buf := &hsaBuffer{size: exp.Size}
	if err := l.check(l.vmemImport(int32(exp.Fd), &buf.handle)); err != nil {
		return nil, err
	}
	err = l.check(l.vmemAddressReserve(&buf.va, buf.size, 0, 0))
	if err == nil {
		err = l.check(l.vmemMap(buf.va, buf.size, 0, buf.handle, 0))
		buf.mapped = err == nil
	}
	if err == nil && grant {
		err = s.grant(buf)
	}
	if err != nil {
		b.releaseHSA(buf)
		return nil, err
	}
	b.hbufs[buf] = true
	return buf, nil
}

// releaseHSA tears a buffer down in reverse: unmap → address_free →
// handle_release.
func (b *Backend) releaseHSA(buf *hsaBuffer) error {
	l := b.hside.l
	var errs []error
	if buf.mapped {
		errs = append(errs, l.check(l.vmemUnmap(buf.va, buf.size)))
		buf.mapped = false
	}
	if buf.va != 0 {
		errs = append(errs, l.check(l.vmemAddressFree(buf.va, buf.size)))
		buf.va = 0
	}
	if buf.handle != 0 {
		errs = append(errs, l.check(l.vmemHandleRelease(buf.handle)))
		buf.handle = 0
	}
	return errors.Join(errs...)
}

// staging is the hipMalloc'd buffer HSA-vmem reads and writes go through,
// allocated at first use and freed with the last hsa-fine buffer
// (freeStaging).
func (b *Backend) staging() (uintptr, error) {
	if b.stage == 0 {
		if err := b.l.check(b.l.malloc(&b.stage, hsaStagingSize)); err != nil {
			return 0, err
		}
	}
	return b.stage, nil
}

// freeStaging frees the staging buffer once no hsa-fine buffer is left.
// hipMemGetInfo counts it (CLR reads HSA_AMD_AGENT_INFO_MEMORY_AVAIL), and
// the harness's leak check reads free memory after a case's teardown: held
// until Close, its 4 MiB failed every passing hsa-fine case as a leak
// (issue 40, review 3 P3).
func (b *Backend) freeStaging() error {
	if len(b.hbufs) > 0 || b.stage == 0 {
		return nil
	}
	err := b.l.check(b.l.free(b.stage))
	b.stage = 0
	return err
}

// copyKernel runs the manifest's plain 16-byte copy through HIP.
func (b *Backend) copyKernel(dst, src uintptr, n uint64) error {
	k := kernels.MustLookup("copy_b128_plain_dev")
	const block = 256
	grid := uint32(min((n/16+block-1)/block, 1024))
	_, err := b.Launch(k, grid, block, []uint64{uint64(dst), uint64(src), n, block, uint64(grid) * block})
	return err
}

// transferHSA moves p to or from buf[off:] in 16-byte aligned spans: the
// copy kernel between buf and the staging buffer, hipMemcpyDtoH/HtoD
// between the staging buffer (which HIP tracks) and the host. A write whose
// edges are not aligned reads the span first and patches it.
func (b *Backend) transferHSA(buf *hsaBuffer, off uint64, p []byte, write bool) error {
	if !backend.Within(off, uint64(len(p)), buf.size) {
		return fmt.Errorf("hip: %d bytes at %d outside buffer of %d bytes", len(p), off, buf.size)
	}
	stage, err := b.staging()
	if err != nil {
		return err
	}
	for len(p) > 0 {
		lo := off &^ 15
		n := min(uint64(len(p))+(off-lo), hsaStagingSize)
		span := (n + 15) &^ 15
		if !backend.Within(lo, span, buf.size) {
			return fmt.Errorf("hip: buffer size %d is not a multiple of 16", buf.size)
		}
		dev, c := buf.va+uintptr(lo), int(n-(off-lo))
		host := make([]byte, span)
		if !write || off != lo || uint64(c) != span {
			if err := b.copyKernel(stage, dev, span); err != nil {
				return err
			}
			if err := b.l.check(b.memcpyDtoH(unsafe.Pointer(&host[0]), stage, span)); err != nil {
				return err
			}
		}
		if write {
			copy(host[off-lo:], p[:c])
			if err := b.l.check(b.memcpyHtoD(stage, unsafe.Pointer(&host[0]), span)); err != nil {
				return err
			}
			if err := b.copyKernel(dev, stage, span); err != nil {
				return err
			}
		} else {
			copy(p[:c], host[off-lo:])
		}
		p = p[c:]
		off += uint64(c)
	}
	return nil
}

// closeHSA releases the hsa-fine buffers and the staging buffer.
func (b *Backend) closeHSA() error {
	var errs []error
	for buf := range b.hbufs {
		errs = append(errs, b.releaseHSA(buf))
	}
	b.hbufs = nil
	return errors.Join(append(errs, b.freeStaging())...)
}

// closeFd closes an export's fd the backend owns.
func closeFd(fd int) {
	if fd >= 0 {
		syscall.Close(fd)
	}
}
