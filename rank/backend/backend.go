// Package backend is the contract between the rank server and the memory
// backends (host, cuda, hsa, hip). A backend lives in a rank process only;
// the suite process never loads one. Backends never import each other.
package backend

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"p2patomics/internal/device"
	"p2patomics/kernels"
)

// ErrNotSupported is returned (wrapped) when a device, driver or library
// lacks what an operation needs. The harness turns it into a `skip` whose
// detail is the error text, so the text must name the missing capability.
var ErrNotSupported = errors.New("not supported")

// NotSupportedf wraps ErrNotSupported with a reason.
func NotSupportedf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotSupported)
}

// Fault is a GPU fault or sticky device error. A backend returns it (wrapped
// or bare) when the device context is no longer usable; the rank reports it
// and exits, and the harness records a `crash` whose fault is this value
// (one type from here to results.json: device.Fault).
type Fault = device.Fault

// Config is what a rank knows when it opens its backend.
type Config struct {
	Rank  int
	Ranks int
	// Device is the ordinal this rank opens, or device.AnyDevice: the
	// first device Place finds usable (rank 0; the parent places the
	// others on the usable devices its Info.Devices lists).
	Device int
}

// Place decides which of devs ranks may go on: those whose architecture
// has an embedded code object (device.Place with kernels.Usable). A GPU
// backend's Open resolves device.AnyDevice with it, the same rule the
// parent places the other ranks by.
func Place(devs []device.Visible) (device.Placement, error) {
	p, err := device.Place(devs, kernels.Usable, kernels.Shipped())
	if err != nil {
		return p, NotSupportedf("%v", err)
	}
	return p, nil
}

// Resolve is the ordinal a backend opens for cfg.Device over devs: the
// first usable one for device.AnyDevice, else cfg.Device as asked.
func Resolve(cfg Config, devs []device.Visible) (int, error) {
	if cfg.Device != device.AnyDevice {
		return cfg.Device, nil
	}
	p, err := Place(devs)
	if err != nil {
		return 0, err
	}
	return p.On(0), nil
}

// DeviceInfo describes the rank's device and answers its capabilities
// (device.Caps): the backend, which knows its vendor's attributes, decides
// what they mean; the parent reads typed answers.
type DeviceInfo = device.Info

// Export is what an allocation's owner hands to its peers: an fd (sent as
// SCM_RIGHTS), an opaque handle carried in the message body, or both.
type Export struct {
	Fd     int    // -1 when the export has no fd
	Handle []byte // e.g. a 64-byte cudaIpcMemHandle
	Size   uint64 // bytes the importer must map
	Meta   map[string]string
}

// Buffer is memory a rank can pass to kernels: its own or a peer's.
type Buffer interface {
	Addr() uint64 // device address in this rank's address space
	Size() uint64
}

// LaunchResult is what one kernel launch reports.
type LaunchResult struct {
	// Elapsed is the kernel's time measured on the device (events) where the
	// backend can, else the wall time of launch+synchronize.
	Elapsed time.Duration
	Method  string // "cuda-events", "hsa-signal", "wall"
}

// Backend is one memory/compute backend inside a rank.
type Backend interface {
	Name() string
	// Open initialises the device for this rank. It is called once, on the
	// goroutine that will make every later call (locked to its OS thread by
	// the rank server, as vendor contexts are per-thread).
	Open(cfg Config) (DeviceInfo, error)
	// Kinds lists the allocation kinds this backend offers.
	Kinds() []string
	// Alloc allocates size bytes of kind and exports them for peers.
	Alloc(kind string, size uint64) (Buffer, Export, error)
	// Import maps a peer's export. The backend owns exp.Fd and closes it
	// once it no longer needs it. If grant is false the importer must not
	// be given access (negative control: a mapping without access).
	Import(kind string, exp Export, grant bool) (Buffer, error)
	// Launch runs a manifest kernel and waits for it.
	Launch(k kernels.Kernel, grid, block uint32, args []uint64) (LaunchResult, error)
	// Read and Write move bytes between host and a buffer.
	Read(b Buffer, off uint64, p []byte) error
	Write(b Buffer, off uint64, p []byte) error
	// Copy copies with the backend's copy engine (cuMemcpy, hsa async copy).
	Copy(dst Buffer, dstOff uint64, src Buffer, srcOff uint64, n uint64) (LaunchResult, error)
	// Free releases a buffer (own or imported).
	Free(b Buffer) error
	// MemInfo reports free and total device memory (leak checks).
	MemInfo() (free, total uint64, err error)
	Close() error
}

// CPUMapper is implemented by backends whose memory the rank's CPU can
// address directly, so the CPU can take part in system-scope atomics while
// a kernel runs (specs "cpugpu"). CPUWord returns a CPU pointer to the
// 8-byte word at off in b, granting the CPU access first where the API
// needs that; ErrNotSupported when the memory has no CPU mapping (device
// memory) or the backend cannot give one. The pointer stays valid until b
// is freed.
type CPUMapper interface {
	CPUWord(b Buffer, off uint64) (*uint64, error)
}

// SpeedApplier is implemented by backends whose Copy and Launch apply the
// injector's speed rules (copy-times, stretch); the rank refuses those
// rules for any other backend (inject.CheckBackend).
type SpeedApplier interface {
	AppliesSpeedRules()
}

// ClockSampler is implemented by backends that can read their device's
// core clock while work runs. SampleClock is called from a goroutine other
// than the one owning the device context, about once per millisecond during
// a timed launch or copy; it returns the clock in MHz and the names of the
// clock-event (throttle) reasons active now, leaving out plain idleness.
type ClockSampler interface {
	SampleClock() (mhz uint32, reasons []string, err error)
}

// Registry of backends linked into the binary, filled by each backend's init.
var registry = map[string]func() Backend{}

// Register makes a backend constructor available under name.
func Register(name string, ctor func() Backend) { registry[name] = ctor }

// Names lists the registered backends, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New constructs a registered backend.
func New(name string) (Backend, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("backend %q is not linked into this binary", name)
	}
	return c(), nil
}
