// Package cuda is the NVIDIA backend: libcuda.so.1 through purego with
// CGO_ENABLED=0. One rank opens one device. Allocation kinds: "vmm"
// (cuMemCreate on the device, POSIX-fd export), "vmm-host" (cuMemCreate at
// the device's host NUMA node), "ipc" (cuMemAlloc + legacy 64-byte IPC
// handle) and "dmabuf" (cuMemAlloc + cuMemGetHandleForAddressRange; export
// only). See docs/CUDA.md.
package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"p2patomics/internal/device"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

func init() {
	backend.Register("cuda", func() backend.Backend { return &Backend{} })
}

// Backend is one rank's view of one CUDA device. It is not safe for
// concurrent use: the rank server makes every call from one goroutine locked
// to its OS thread.
type Backend struct {
	d       *driver
	cfg     backend.Config
	dev     int32            // CUdevice of cfg.Device
	devs    []int32          // CUdevice of every visible ordinal
	visible []device.Visible // every device as placement sees it (listDevices)
	ctx     uintptr          // retained primary context (0 when not retained)
	mod     uintptr
	modErr  error // why no module is loaded (Launch reports it)
	funcs   map[string]uintptr
	stream  uintptr
	// watchCtx: the context is current on the watchdog's thread (watch.go;
	// read and written only there).
	watchCtx bool
	evStart  uintptr
	evStop   uintptr
	arena    []byte // kernel parameters and JIT logs: memory outside the Go heap
	spin     uint64 // a stretch rule's spin words (speed.go; 0: none)
	info     backend.DeviceInfo
	bufs     map[*buffer]struct{}
	opened   bool
	// NVML handle of this device for the clock sampler (0: none; nvmlErr
	// says why).
	nvmlOnce sync.Once
	nvmlDev  uintptr
	nvmlErr  error
	// Open's phases, for the start-up budget (logged by the device tests).
	tInit, tModule time.Duration
}

// buffer is an allocation this rank owns or a mapping of a peer's.
type buffer struct {
	kind     string
	addr     uint64 // device address (VA) in this process
	size     uint64 // bytes mapped / allocated
	handle   uint64 // owned VMM allocation handle (released at Free)
	imported bool
	freed    bool
	numa     int32 // vmm-host: the host NUMA node backing it
	cpu      bool  // vmm-host: the CPU has been granted access (CPUWord)
}

func (b *buffer) Addr() uint64 { return b.addr }
func (b *buffer) Size() uint64 { return b.size }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "cuda" }

// AppliesSpeedRules implements backend.SpeedApplier: Copy repeats
// cuMemcpyDtoDAsync and Launch runs a spin kernel inside the timed events.
func (b *Backend) AppliesSpeedRules() {}

// Kinds implements backend.Backend.
func (b *Backend) Kinds() []string { return kindNames() }

// arena layout (bytes). The driver dereferences kernelParams (an array of
// pointers to argument values) and the JIT option values, so both live in an
// anonymous mapping the Go GC neither moves nor scans.
const (
	arenaSize      = 64 << 10
	arenaParams    = 0    // up to maxKernelArgs pointers
	arenaValues    = 1024 // up to maxKernelArgs uint64 values
	arenaJitOpts   = 2048 // CUjit_option[4] (int32)
	arenaJitVals   = 2112 // void*[4]
	arenaErrLog    = 4096
	arenaInfoLog   = arenaErrLog + jitLogSize
	jitLogSize     = 16 << 10
	maxKernelArgs  = 64
	peerAttrPrefix = "peer."
)

// Open implements backend.Backend. It must run on the goroutine that makes
// every later call, locked to its OS thread (the rank server does that).
// CUDA's current context is a property of the OS thread, so Open makes this
// device's primary context current here; every later entry point re-binds it
// (cheap) so that a second Backend used from the same thread — the in-process
// device test opens devices 0 and 1 side by side — never runs on the other
// device's context.
func (b *Backend) Open(cfg backend.Config) (backend.DeviceInfo, error) {
	if b.opened {
		return b.info, errors.New("cuda: backend already open")
	}
	// The ceilings describe reads from NVML once cuInit and the context
	// are done: NVML loads and initialises beside them (loadNVMLAside).
	loadNVMLAside()
	d, err := openDriver()
	if err != nil {
		return backend.DeviceInfo{}, err
	}
	b.d, b.cfg = d, cfg
	if err := b.open(); err != nil {
		b.Close()
		return backend.DeviceInfo{}, err
	}
	b.opened = true
	return b.info, nil
}

func (b *Backend) open() error {
	d := b.d
	t0 := time.Now()
	if err := d.check(d.cuInit(0)); err != nil {
		return err
	}
	b.tInit = time.Since(t0)
	var n int32
	if err := d.check(d.cuDeviceGetCount(&n)); err != nil {
		return err
	}
	if n == 0 {
		return backend.NotSupportedf("cuda: no device (cuDeviceGetCount = 0)")
	}
	b.devs = make([]int32, n)
	for i := range b.devs {
		if err := d.check(d.cuDeviceGet(&b.devs[i], int32(i))); err != nil {
			return err
		}
	}
	vs, err := b.listDevices()
	if err != nil {
		return err
	}
	b.visible = vs
	dev, err := backend.Resolve(b.cfg, vs)
	if err != nil {
		return err
	}
	if dev < 0 || dev >= int(n) {
		return fmt.Errorf("cuda: device ordinal %d out of range: %d devices visible", dev, n)
	}
	b.cfg.Device = dev
	b.dev = b.devs[dev]
	var ctx uintptr
	if err := d.check(d.cuDevicePrimaryCtxRetain(&ctx, b.dev)); err != nil {
		return err
	}
	b.ctx = ctx
	if err := d.check(d.cuCtxSetCurrent(ctx)); err != nil {
		return err
	}
	arena, err := unix.Mmap(-1, 0, arenaSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("cuda: mmap kernel-argument arena: %w", err)
	}
	b.arena = arena
	b.funcs = map[string]uintptr{}
	b.bufs = map[*buffer]struct{}{}
	if err := b.describe(); err != nil {
		return err
	}
	if err := d.check(d.cuStreamCreate(&b.stream, streamNonBlocking)); err != nil {
		return err
	}
	if err := d.check(d.cuEventCreate(&b.evStart, eventDefault)); err != nil {
		return err
	}
	if err := d.check(d.cuEventCreate(&b.evStop, eventDefault)); err != nil {
		return err
	}
	if err := b.openSpin(); err != nil {
		return err
	}
	t0 = time.Now()
	err = b.loadModule()
	b.tModule = time.Since(t0)
	return err
}

// listDevices is every device as placement sees it: its ordinal, its
// compute capability as sm_XY and its name.
func (b *Backend) listDevices() ([]device.Visible, error) {
	var vs []device.Visible
	for i, dv := range b.devs {
		name, err := b.name(dv)
		if err != nil {
			return nil, err
		}
		major, err := b.attr(attrComputeCapabilityMajor, dv)
		if err != nil {
			return nil, err
		}
		minor, err := b.attr(attrComputeCapabilityMinor, dv)
		if err != nil {
			return nil, err
		}
		vs = append(vs, device.Visible{Ordinal: i, Arch: fmt.Sprintf("sm_%d%d", major, minor), Name: name})
	}
	return vs, nil
}

// name is cuDeviceGetName's answer for dv.
func (b *Backend) name(dv int32) (string, error) {
	var nameBuf [256]byte
	if err := b.d.check(b.d.cuDeviceGetName(&nameBuf[0], int32(len(nameBuf)), dv)); err != nil {
		return "", err
	}
	name := string(nameBuf[:]) // NUL-terminated
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return name, nil
}

// bind makes this backend's context current on the calling thread.
func (b *Backend) bind() error {
	if !b.opened {
		return errors.New("cuda: backend not open")
	}
	return b.d.check(b.d.cuCtxSetCurrent(b.ctx))
}

func (b *Backend) attr(a int32, dev int32) (int, error) {
	var v int32
	if err := b.d.check(b.d.cuDeviceGetAttribute(&v, a, dev)); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Detail = attrNames[a]
		}
		return 0, err
	}
	return int(v), nil
}

// describe fills b.info.
func (b *Backend) describe() error {
	d := b.d
	name, err := b.name(b.dev)
	if err != nil {
		return err
	}
	major, err := b.attr(attrComputeCapabilityMajor, b.dev)
	if err != nil {
		return err
	}
	minor, err := b.attr(attrComputeCapabilityMinor, b.dev)
	if err != nil {
		return err
	}
	sms, err := b.attr(attrMultiprocessorCount, b.dev)
	if err != nil {
		return err
	}
	var mem uint64
	if err := d.check(d.cuDeviceTotalMem(&mem, b.dev)); err != nil {
		return err
	}
	var ver int32
	if err := d.check(d.cuDriverGetVersion(&ver)); err != nil {
		return err
	}
	info := backend.DeviceInfo{
		Vendor:   "nvidia",
		Name:     name,
		Arch:     fmt.Sprintf("sm_%d%d", major, minor),
		Ordinal:  b.cfg.Device,
		Count:    len(b.devs),
		MemBytes: mem,
		Units:    sms,
		Driver:   driverVersionString(int(ver)),
		Attrs:    map[string]string{},
		Devices:  b.visible,
	}
	// From here on a failed query is an answer (recorded in Attrs), not an
	// error: the trace records it unmarked.
	d.beginProbe()
	defer d.endProbe()
	var u cuUUID
	if err := d.check(d.cuDeviceGetUuid(&u, b.dev)); err == nil {
		info.UUID = formatUUID(u)
	} else {
		info.Attrs["uuid_error"] = err.Error()
	}
	b.deviceAttrs(info.Attrs)
	info.Attrs["compute_capability"] = fmt.Sprintf("%d.%d", major, minor)
	b.peerAttrs(info.Attrs)
	// The physical ceilings the perf cases compare their bandwidths with
	// (HBM, NVLink, PCIe), read through NVML; what NVML cannot tell is
	// recorded as ceiling_error and those metrics go without a ceiling.
	for k, v := range readCeilings(info.UUID) {
		info.Attrs[k] = v
	}
	// The answers the parent decides on, typed from what was recorded.
	info.Caps = capsFrom(b.cfg.Device, len(b.devs), info.Attrs)
	info.Ceilings = ceilingsFrom(info.Attrs)
	b.info = info
	return nil
}

// deviceAttrs records the device attributes that decide capabilities or
// explain faults; a failed query is recorded as its error, an answer.
func (b *Backend) deviceAttrs(attrs map[string]string) {
	for _, a := range []struct {
		key  string
		attr int32
	}{
		{"compute_mode", attrComputeMode},
		{"host_native_atomic_supported", attrHostNativeAtomicSupported},
		{"only_partial_host_native_atomic_supported", attrOnlyPartialHostNativeAtomicSupported},
		{"pageable_memory_access", attrPageableMemoryAccess},
		{"vmm_supported", attrVirtualMemoryManagementSupported},
		{"posix_fd_supported", attrHandleTypePosixFileDescriptorSupported},
		{"unified_addressing", attrUnifiedAddressing},
		{"dma_buf_supported", attrDmaBufSupported},
		{"host_numa_id", attrHostNumaID},
		{"host_numa_vmm_supported", attrHostNumaVirtualMemoryManagementSupp},
		{"managed_memory", attrManagedMemory},
		{"concurrent_managed_access", attrConcurrentManagedAccess},
		// 1 when this rank's context is an MPS client: only then are
		// kernels of ranks that share the GPU resident together.
		{"mps_enabled", attrMpsEnabled},
	} {
		if v, err := b.attr(a.attr, b.dev); err == nil {
			attrs[a.key] = strconv.Itoa(v)
		} else {
			attrs[a.key] = "error: " + err.Error()
		}
	}
}

// peerAttrs records, per other device, whether this one can reach it and
// the P2P attributes of the link (peerAttrPrefix<ordinal>.<key>).
func (b *Backend) peerAttrs(attrs map[string]string) {
	d := b.d
	for j, pd := range b.devs {
		if pd == b.dev {
			continue
		}
		pre := fmt.Sprintf("%s%d.", peerAttrPrefix, j)
		var can int32
		if err := d.check(d.cuDeviceCanAccessPeer(&can, b.dev, pd)); err == nil {
			attrs[pre+"can_access"] = strconv.Itoa(int(can))
		} else {
			attrs[pre+"can_access"] = "error: " + err.Error()
		}
		for _, a := range []struct {
			key  string
			attr int32
		}{
			{"perf_rank", p2pPerformanceRank},
			{"access_supported", p2pAccessSupported},
			{"native_atomic", p2pNativeAtomicSupported},
			{"only_partial_native_atomic", p2pOnlyPartialNativeAtomicSupported},
		} {
			var v int32
			if err := d.check(d.cuDeviceGetP2PAttribute(&v, a.attr, b.dev, pd)); err == nil {
				attrs[pre+a.key] = strconv.Itoa(int(v))
			} else if a.attr != p2pOnlyPartialNativeAtomicSupported { // new in 13.0; absent before
				attrs[pre+a.key] = "error: " + err.Error()
			}
		}
	}
}

// driverVersionString renders cuDriverGetVersion's 13000 as "13.0".
func driverVersionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// formatUUID renders a CUuuid the way nvidia-smi -L does.
func formatUUID(u cuUUID) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// loadModule JITs the kernels for this device's arch. A missing code object
// is not fatal for Open (memory paths still work); Launch reports it.
func (b *Backend) loadModule() error {
	obj, err := kernels.ForArch(b.info.Arch)
	if err != nil {
		if errors.Is(err, kernels.ErrNoObject) {
			b.modErr = backend.NotSupportedf("cuda: no kernel code object for %s (%v)", b.info.Arch, err)
			return nil
		}
		return fmt.Errorf("cuda: kernels for %s: %w", b.info.Arch, err)
	}
	img := obj.Data
	if obj.Format == kernels.FormatPTX || obj.Format == "" {
		// cuModuleLoadDataEx takes PTX as a NUL-terminated string.
		img = make([]byte, len(obj.Data)+1)
		copy(img, obj.Data)
	}
	if len(img) == 0 {
		return fmt.Errorf("cuda: kernel object for %s is empty", b.info.Arch)
	}
	a := b.arena
	for i := arenaErrLog; i < arenaInfoLog+jitLogSize; i++ {
		a[i] = 0
	}
	opts := unsafe.Slice((*int32)(unsafe.Pointer(&a[arenaJitOpts])), 4)
	vals := unsafe.Slice((*uintptr)(unsafe.Pointer(&a[arenaJitVals])), 4)
	opts[0], vals[0] = jitErrorLogBuffer, uintptr(unsafe.Pointer(&a[arenaErrLog]))
	opts[1], vals[1] = jitErrorLogBufferSizeBytes, jitLogSize-1
	opts[2], vals[2] = jitInfoLogBuffer, uintptr(unsafe.Pointer(&a[arenaInfoLog]))
	opts[3], vals[3] = jitInfoLogBufferSizeBytes, jitLogSize-1
	var mod uintptr
	r := b.d.cuModuleLoadDataEx(&mod, unsafe.Pointer(&img[0]), 4,
		uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])))
	if err := b.d.check(r); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Detail = fmt.Sprintf("%s %s object (%d bytes); JIT error log: %s",
				obj.Target, obj.Format, len(obj.Data), strings.TrimSpace(cBytes(a[arenaErrLog:arenaErrLog+jitLogSize])))
		}
		return err
	}
	b.mod = mod
	return nil
}

// cBytes returns the NUL-terminated prefix of p as a string.
func cBytes(p []byte) string {
	for i, c := range p {
		if c == 0 {
			return string(p[:i])
		}
	}
	return string(p)
}

func (b *Backend) function(name string) (uintptr, error) {
	if f, ok := b.funcs[name]; ok {
		return f, nil
	}
	if b.mod == 0 {
		if b.modErr != nil {
			return 0, b.modErr
		}
		return 0, errors.New("cuda: no kernel module loaded")
	}
	var f uintptr
	if err := b.d.check(b.d.cuModuleGetFunction(&f, b.mod, name)); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Detail = "kernel " + name
		}
		return 0, err
	}
	b.funcs[name] = f
	return f, nil
}

// granularity is the minimum allocation granularity for prop.
func (b *Backend) granularity(prop *memAllocationProp) (uint64, error) {
	var g uint64
	if err := b.d.check(b.d.cuMemGetAllocationGranularity(&g, prop, memAllocGranularityMinimum)); err != nil {
		return 0, err
	}
	if g == 0 {
		g = 2 << 20
	}
	return g, nil
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// requireAttr returns an ErrNotSupported naming the attribute unless it is
// non-zero on this device.
func (b *Backend) requireAttr(a int32) error {
	b.d.beginProbe() // an attribute the driver lacks is a skip
	v, err := b.attr(a, b.dev)
	b.d.endProbe()
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == cudaErrorInvalidValue {
			// An attribute the driver does not know: an older driver.
			return backend.NotSupportedf("cuda: the driver does not know %s", attrNames[a])
		}
		return err
	}
	if v == 0 {
		return backend.NotSupportedf("cuda: %s = 0 on device %d", attrNames[a], b.cfg.Device)
	}
	return nil
}

// Alloc implements backend.Backend. The caller owns Export.Fd.
func (b *Backend) Alloc(kind string, size uint64) (backend.Buffer, backend.Export, error) {
	none := backend.Export{Fd: -1}
	if err := b.bind(); err != nil {
		return nil, none, err
	}
	if size == 0 {
		return nil, none, errors.New("cuda: zero-byte allocation")
	}
	k, err := kindOf(kind)
	if err != nil {
		return nil, none, err
	}
	return k.alloc(b, kind, size)
}

func (b *Backend) vmmProp(kind string) (memAllocationProp, error) {
	prop := memAllocationProp{
		Type:                 memAllocationTypePinned,
		RequestedHandleTypes: memHandleTypePosixFileDescriptor,
		Location:             memLocation{Type: memLocationTypeDevice, ID: b.dev},
	}
	if err := b.requireAttr(attrVirtualMemoryManagementSupported); err != nil {
		return prop, err
	}
	if err := b.requireAttr(attrHandleTypePosixFileDescriptorSupported); err != nil {
		return prop, err
	}
	if hostNUMA(kind) {
		if err := b.requireAttr(attrHostNumaVirtualMemoryManagementSupp); err != nil {
			return prop, err
		}
		numa, err := b.attr(attrHostNumaID, b.dev)
		if err != nil || numa < 0 {
			numa = 0 // unknown: node 0
		}
		prop.Location = memLocation{Type: memLocationTypeHostNuma, ID: int32(numa)}
	}
	return prop, nil
}

func (b *Backend) allocVMM(kind string, size uint64) (backend.Buffer, backend.Export, error) {
	none := backend.Export{Fd: -1}
	d := b.d
	prop, err := b.vmmProp(kind)
	if err != nil {
		return nil, none, err
	}
	g, err := b.granularity(&prop)
	if err != nil {
		return nil, none, err
	}
	sz := roundUp(size, g)
	var h uint64
	if err := d.check(d.cuMemCreate(&h, sz, &prop, 0)); err != nil {
		return nil, none, err
	}
	var va uint64
	if err := d.check(d.cuMemAddressReserve(&va, sz, g, 0, 0)); err != nil {
		d.cuMemRelease(h)
		return nil, none, err
	}
	undo := func() {
		d.cuMemAddressFree(va, sz)
		d.cuMemRelease(h)
	}
	if err := d.check(d.cuMemMap(va, sz, 0, h, 0)); err != nil {
		undo()
		return nil, none, err
	}
	meta := map[string]string{"granularity": strconv.FormatUint(g, 10), "owner": strconv.Itoa(b.cfg.Device)}
	if hostNUMA(kind) {
		meta["numa_node"] = strconv.Itoa(int(prop.Location.ID))
	}
	// Grant this device only. Importers grant themselves in their own
	// process (importVMM), the only way the harness reaches a peer's memory;
	// granting every peer device here too had the driver map the range on
	// each of them for every allocation, work no case uses. (Dropped with
	// the TLB-warm copy in one run that closed a 22% bandwidth gap; its own
	// share was not measured: docs/PERFORMANCE.md.)
	desc := memAccessDesc{Location: memLocation{Type: memLocationTypeDevice, ID: b.dev}, Flags: memAccessFlagsProtReadWrite}
	if err := d.check(d.cuMemSetAccess(va, sz, &desc, 1)); err != nil {
		d.cuMemUnmap(va, sz)
		undo()
		return nil, none, err
	}
	var fd int32 = -1
	if err := d.check(d.cuMemExportToShareableHandle(&fd, h, memHandleTypePosixFileDescriptor, 0)); err != nil {
		d.cuMemUnmap(va, sz)
		undo()
		return nil, none, err
	}
	unix.CloseOnExec(int(fd))
	buf := &buffer{kind: kind, addr: va, size: sz, handle: h, numa: prop.Location.ID}
	b.bufs[buf] = struct{}{}
	return buf, backend.Export{Fd: int(fd), Size: sz, Meta: meta}, nil
}

func (b *Backend) allocIPC(size uint64) (backend.Buffer, backend.Export, error) {
	none := backend.Export{Fd: -1}
	d := b.d
	sz := roundUp(size, 2<<20) // whole 2 MiB pages: the IPC mapping granularity
	var p uint64
	if err := d.check(d.cuMemAlloc(&p, sz)); err != nil {
		return nil, none, err
	}
	var h ipcMemHandle
	if err := d.check(d.cuIpcGetMemHandle(&h, p)); err != nil {
		d.cuMemFree(p)
		return nil, none, err
	}
	buf := &buffer{kind: KindIPC, addr: p, size: sz}
	b.bufs[buf] = struct{}{}
	return buf, backend.Export{Fd: -1, Handle: h[:], Size: sz,
		Meta: map[string]string{"owner": strconv.Itoa(b.cfg.Device)}}, nil
}

func (b *Backend) allocDmaBuf(size uint64) (backend.Buffer, backend.Export, error) {
	none := backend.Export{Fd: -1}
	d := b.d
	if err := b.requireAttr(attrDmaBufSupported); err != nil {
		return nil, none, err
	}
	// The range must be host-page aligned; cuMemAlloc of whole 2 MiB pages
	// returns a 2 MiB-aligned address.
	sz := roundUp(size, 2<<20)
	var p uint64
	if err := d.check(d.cuMemAlloc(&p, sz)); err != nil {
		return nil, none, err
	}
	if p%uint64(unix.Getpagesize()) != 0 {
		d.cuMemFree(p)
		return nil, none, fmt.Errorf("cuda: cuMemAlloc_v2 returned %#x, not page aligned: cannot export a dma-buf", p)
	}
	var fd int32 = -1
	if err := d.check(d.cuMemGetHandleForAddressRange(&fd, p, sz, memRangeHandleTypeDmaBufFD, 0)); err != nil {
		d.cuMemFree(p)
		return nil, none, err
	}
	unix.CloseOnExec(int(fd))
	buf := &buffer{kind: KindDmaBuf, addr: p, size: sz}
	b.bufs[buf] = struct{}{}
	return buf, backend.Export{Fd: int(fd), Size: sz,
		Meta: map[string]string{"owner": strconv.Itoa(b.cfg.Device)}}, nil
}

// Import implements backend.Backend. It owns exp.Fd and closes it.
func (b *Backend) Import(kind string, exp backend.Export, grant bool) (backend.Buffer, error) {
	fd := exp.Fd
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	if err := b.bind(); err != nil {
		return nil, err
	}
	k, err := kindOf(kind)
	if err != nil {
		return nil, err
	}
	return k.imp(b, kind, fd, exp, grant)
}

func (b *Backend) importVMM(kind string, fd int, exp backend.Export, grant bool) (backend.Buffer, error) {
	d := b.d
	g := uint64(2 << 20)
	if s := exp.Meta["granularity"]; s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("cuda: bad granularity %q in export", s)
		}
		g = v
	}
	sz := exp.Size
	if sz == 0 || sz%g != 0 {
		return nil, fmt.Errorf("cuda: export size %d is not a multiple of the granularity %d", sz, g)
	}
	var h uint64
	// The POSIX fd's value goes in the pointer argument (the fd cast to
	// void*, as CUDA's own samples pass it), not a pointer to the fd.
	if err := d.check(d.cuMemImportFromShareableHandle(&h, uintptr(fd), memHandleTypePosixFileDescriptor)); err != nil {
		return nil, err
	}
	var va uint64
	if err := d.check(d.cuMemAddressReserve(&va, sz, g, 0, 0)); err != nil {
		d.cuMemRelease(h)
		return nil, err
	}
	if err := d.check(d.cuMemMap(va, sz, 0, h, 0)); err != nil {
		d.cuMemAddressFree(va, sz)
		d.cuMemRelease(h)
		return nil, err
	}
	// The mapping keeps the allocation alive: drop the handle now.
	if err := d.check(d.cuMemRelease(h)); err != nil {
		d.cuMemUnmap(va, sz)
		d.cuMemAddressFree(va, sz)
		return nil, err
	}
	if grant {
		desc := memAccessDesc{Location: memLocation{Type: memLocationTypeDevice, ID: b.dev}, Flags: memAccessFlagsProtReadWrite}
		if err := d.check(d.cuMemSetAccess(va, sz, &desc, 1)); err != nil {
			d.cuMemUnmap(va, sz)
			d.cuMemAddressFree(va, sz)
			return nil, err
		}
	}
	buf := &buffer{kind: kind, addr: va, size: sz, imported: true}
	if n, err := strconv.Atoi(exp.Meta["numa_node"]); err == nil {
		buf.numa = int32(n)
	}
	b.bufs[buf] = struct{}{}
	return buf, nil
}

// CPUWord implements backend.CPUMapper. Only host-NUMA allocations have a
// CPU side; the CPU is granted access to the whole mapping once, with the
// same cuMemSetAccess a device gets, at the allocation's NUMA node
// (CU_MEM_LOCATION_TYPE_HOST_NUMA, since CUDA 12.2).
func (b *Backend) CPUWord(x backend.Buffer, off uint64) (*uint64, error) {
	buf, err := b.own(x)
	if err != nil {
		return nil, err
	}
	if !hostNUMA(buf.kind) {
		return nil, backend.NotSupportedf("cuda: %s memory is device memory; the CPU has no mapping of it", buf.kind)
	}
	if off%8 != 0 || span(buf, off, 8) != nil {
		return nil, fmt.Errorf("cuda: word at %d is unaligned or outside the %d-byte buffer", off, buf.size)
	}
	if !buf.cpu {
		desc := memAccessDesc{Location: memLocation{Type: memLocationTypeHostNuma, ID: buf.numa}, Flags: memAccessFlagsProtReadWrite}
		if err := b.d.check(b.d.cuMemSetAccess(buf.addr, buf.size, &desc, 1)); err != nil {
			return nil, fmt.Errorf("cuda: granting the CPU (host NUMA node %d) access: %w", buf.numa, err)
		}
		buf.cpu = true
	}
	p := buf.addr + off
	// The address is a CPU virtual address of a driver mapping, not Go
	// memory; reinterpreting the integer's bits avoids a uintptr->pointer
	// conversion that vet (rightly, for Go memory) rejects.
	return *(**uint64)(unsafe.Pointer(&p)), nil
}

func (b *Backend) importIPC(exp backend.Export, grant bool) (backend.Buffer, error) {
	if !grant {
		return nil, backend.NotSupportedf("cuda: a legacy IPC mapping always grants access; no ungranted mapping exists for ipc")
	}
	if len(exp.Handle) != ipcHandleSize {
		return nil, fmt.Errorf("cuda: ipc handle is %d bytes, want %d", len(exp.Handle), ipcHandleSize)
	}
	var h ipcMemHandle
	copy(h[:], exp.Handle)
	p, err := b.d.ipcOpenMemHandle(h, ipcMemLazyEnablePeerAccess)
	if err != nil {
		return nil, err
	}
	buf := &buffer{kind: KindIPC, addr: p, size: exp.Size, imported: true}
	b.bufs[buf] = struct{}{}
	return buf, nil
}

// Launch implements backend.Backend: one launch on the rank's stream,
// bracketed by events, synchronised, timed on the device.
func (b *Backend) Launch(k kernels.Kernel, grid, block uint32, args []uint64) (backend.LaunchResult, error) {
	var res backend.LaunchResult
	if err := b.bind(); err != nil {
		return res, err
	}
	if len(args) != len(k.Args) {
		return res, fmt.Errorf("cuda: kernel %s takes %d arguments, got %d", k.Name, len(k.Args), len(args))
	}
	if len(args) > maxKernelArgs {
		return res, fmt.Errorf("cuda: kernel %s: %d arguments, at most %d", k.Name, len(args), maxKernelArgs)
	}
	if grid == 0 || block == 0 {
		return res, fmt.Errorf("cuda: kernel %s: empty launch (grid %d, block %d)", k.Name, grid, block)
	}
	f, err := b.function(k.Name)
	if err != nil {
		return res, err
	}
	d := b.d
	paramsPtr := b.params(args)
	if err := d.check(d.cuEventRecord(b.evStart, b.stream)); err != nil {
		return res, err
	}
	if err := d.check(d.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, b.stream, paramsPtr, 0)); err != nil {
		return res, annotate(err, "kernel "+k.Name)
	}
	if err := b.stretch(k.Name); err != nil { // stretch:<kernel>=F: inside the window
		return res, err
	}
	if err := d.check(d.cuEventRecord(b.evStop, b.stream)); err != nil {
		return res, err
	}
	if err := d.check(b.syncStream(b.stream)); err != nil {
		return res, annotate(err, "kernel "+k.Name)
	}
	return b.elapsed()
}

// params writes args into the arena as cuLaunchKernel's kernelParams
// (kernelParams[i] points at the i-th 64-bit value; both live in the
// arena, outside the Go heap, because the driver dereferences them) and
// returns the array's address, 0 for none.
func (b *Backend) params(args []uint64) uintptr {
	params := unsafe.Slice((*uintptr)(unsafe.Pointer(&b.arena[arenaParams])), maxKernelArgs)
	values := unsafe.Slice((*uint64)(unsafe.Pointer(&b.arena[arenaValues])), maxKernelArgs)
	for i, a := range args {
		values[i] = a
		params[i] = uintptr(unsafe.Pointer(&values[i]))
	}
	if len(args) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&params[0]))
}

// annotate adds what was running to an error.
func annotate(err error, what string) error {
	var f *backend.Fault
	if errors.As(err, &f) {
		f.Reason += " (" + what + ")"
		return err
	}
	var e *Error
	if errors.As(err, &e) && e.Detail == "" {
		e.Detail = what
	}
	return err
}

func (b *Backend) elapsed() (backend.LaunchResult, error) {
	var ms float32
	if err := b.d.check(b.d.cuEventElapsedTime(&ms, b.evStart, b.evStop)); err != nil {
		return backend.LaunchResult{}, err
	}
	return backend.LaunchResult{Elapsed: time.Duration(float64(ms) * float64(time.Millisecond)), Method: "cuda-events"}, nil
}

func (b *Backend) own(x backend.Buffer) (*buffer, error) {
	buf, ok := x.(*buffer)
	if !ok || buf == nil {
		return nil, fmt.Errorf("cuda: buffer %T is not a cuda buffer", x)
	}
	if _, live := b.bufs[buf]; !live || buf.freed {
		return nil, errors.New("cuda: buffer already freed or not from this backend")
	}
	return buf, nil
}

func span(buf *buffer, off uint64, n uint64) error {
	if !backend.Within(off, n, buf.size) {
		return fmt.Errorf("cuda: %d bytes at offset %d outside the %d-byte buffer", n, off, buf.size)
	}
	return nil
}

// Read implements backend.Backend (synchronous device-to-host copy).
func (b *Backend) Read(x backend.Buffer, off uint64, p []byte) error {
	if err := b.bind(); err != nil {
		return err
	}
	buf, err := b.own(x)
	if err != nil {
		return err
	}
	if err := span(buf, off, uint64(len(p))); err != nil || len(p) == 0 {
		return err
	}
	// A synchronous copy: the driver is done with p when the call returns,
	// and purego keeps p alive for the call.
	return b.d.check(b.d.cuMemcpyDtoH(unsafe.Pointer(&p[0]), buf.addr+off, uint64(len(p))))
}

// Write implements backend.Backend (synchronous host-to-device copy).
func (b *Backend) Write(x backend.Buffer, off uint64, p []byte) error {
	if err := b.bind(); err != nil {
		return err
	}
	buf, err := b.own(x)
	if err != nil {
		return err
	}
	if err := span(buf, off, uint64(len(p))); err != nil || len(p) == 0 {
		return err
	}
	d := b.d
	if err := d.check(d.cuMemcpyHtoD(buf.addr+off, unsafe.Pointer(&p[0]), uint64(len(p)))); err != nil {
		return err
	}
	// A rank replies only when the device has done what it asked
	// (docs/SYNC.md). From pageable memory cuMemcpyHtoD may return once p
	// is staged, before the DMA reaches device memory (CUDA Driver API,
	// "API synchronization behavior"); the rank's kernels run on a
	// non-blocking stream that is not ordered after this legacy-stream
	// copy, and a peer process that reads, adds to or frees the memory
	// waits for nothing of ours. Without this synchronize an H200 lost
	// rank 1's allreduce contribution 4 of 60 times and page-faulted
	// (Xid 31) in owner_frees 10 of 20; with it, 0 and 0.
	return annotate(d.check(b.syncCtx()), "write")
}

// Copy implements backend.Backend: cuMemcpyDtoDAsync on the rank's stream
// between the two events (copy engine; peers' memory through its mapping).
func (b *Backend) Copy(dst backend.Buffer, dstOff uint64, src backend.Buffer, srcOff uint64, n uint64) (backend.LaunchResult, error) {
	var res backend.LaunchResult
	if err := b.bind(); err != nil {
		return res, err
	}
	db, err := b.own(dst)
	if err != nil {
		return res, err
	}
	sb, err := b.own(src)
	if err != nil {
		return res, err
	}
	if err := span(db, dstOff, n); err != nil {
		return res, err
	}
	if err := span(sb, srcOff, n); err != nil {
		return res, err
	}
	d := b.d
	if err := d.check(d.cuEventRecord(b.evStart, b.stream)); err != nil {
		return res, err
	}
	if err := d.check(d.cuMemcpyDtoDAsync(db.addr+dstOff, sb.addr+srcOff, n, b.stream)); err != nil {
		return res, err
	}
	if err := b.copyAgain(db.addr+dstOff, sb.addr+srcOff, n); err != nil { // copy-times: inside the window
		return res, err
	}
	if err := d.check(d.cuEventRecord(b.evStop, b.stream)); err != nil {
		return res, err
	}
	if err := d.check(b.syncStream(b.stream)); err != nil {
		return res, annotate(err, "copy")
	}
	// A device-to-device cuMemcpy between two GPUs runs on a copy engine
	// (issue 30: every copy metric names the engine that ran it).
	res, err = b.elapsed()
	res.Method += ", copy engine (cuMemcpyDtoDAsync)"
	return res, err
}

// Free implements backend.Backend.
func (b *Backend) Free(x backend.Buffer) error {
	if err := b.bind(); err != nil {
		return err
	}
	buf, err := b.own(x)
	if err != nil {
		return err
	}
	delete(b.bufs, buf)
	buf.freed = true
	return b.free(buf)
}

func (b *Backend) free(buf *buffer) error { return freeOf(b.d, buf) }

// MemInfo implements backend.Backend.
func (b *Backend) MemInfo() (free, total uint64, err error) {
	if err := b.bind(); err != nil {
		return 0, 0, err
	}
	err = b.d.check(b.d.cuMemGetInfo(&free, &total))
	return free, total, err
}

// Close implements backend.Backend: frees what is left, destroys the stream,
// events and module, and releases the primary context. Safe after a failed
// Open and more than once.
func (b *Backend) Close() error {
	if b.d == nil {
		return nil
	}
	d := b.d
	var errs []error
	if b.ctx != 0 {
		if err := d.check(d.cuCtxSetCurrent(b.ctx)); err != nil {
			errs = append(errs, err)
		}
		for buf := range b.bufs {
			buf.freed = true
			errs = append(errs, b.free(buf))
		}
		b.bufs = nil
		if b.evStart != 0 {
			errs = append(errs, d.check(d.cuEventDestroy(b.evStart)))
		}
		if b.evStop != 0 {
			errs = append(errs, d.check(d.cuEventDestroy(b.evStop)))
		}
		if b.stream != 0 {
			errs = append(errs, d.check(d.cuStreamDestroy(b.stream)))
		}
		if b.spin != 0 {
			errs = append(errs, d.check(d.cuMemFree(b.spin)))
		}
		if b.mod != 0 {
			errs = append(errs, d.check(d.cuModuleUnload(b.mod)))
		}
		errs = append(errs, d.check(d.cuDevicePrimaryCtxRelease(b.dev)))
		d.cuCtxSetCurrent(0)
	}
	if b.arena != nil {
		errs = append(errs, unix.Munmap(b.arena))
	}
	*b = Backend{}
	return errors.Join(errs...)
}
