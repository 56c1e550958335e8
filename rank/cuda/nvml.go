package cuda

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
)

// This file is the one choke point between Go and libnvidia-ml.so.1 (NVML),
// which the CUDA backend uses for one thing: the GPU's SM clock and its
// clock-event ("throttle") reasons while a measurement runs, so a throttled
// sample is visible in its metric. NVML is a monitor, not part of the path
// under test, so its calls are not in the API trace: a sampler polling at
// about 1 kHz would flood the ring. NVML is thread-safe; the sampler runs
// on its own goroutine, off the locked CUDA thread.

const nvmlLibName = "libnvidia-ml.so.1"

// nvmlClockSM is NVML_CLOCK_SM (nvmlClockType_t).
const nvmlClockSM = 1

// Clock-event reasons (nvmlClocksEventReason*, formerly ...ThrottleReason*),
// bit values from nvml.h.
var nvmlReasons = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// NVMLReasonNames spells a reasons mask.
func NVMLReasonNames(mask uint64) []string {
	var out []string
	for _, r := range nvmlReasons {
		if mask&r.bit != 0 {
			out = append(out, r.name)
			mask &^= r.bit
		}
	}
	if mask != 0 {
		out = append(out, fmt.Sprintf("%#x", mask))
	}
	return out
}

type nvmlLib struct {
	init      func() int32
	byUUID    func(uuid *byte, dev *uintptr) int32
	clock     func(dev uintptr, typ int32, mhz *uint32) int32
	reasons   func(dev uintptr, mask *uint64) int32
	errString func(ret int32) string
	// Ceiling queries (ceiling.go), bound when present: an NVML without
	// one loses that ceiling, not the clock sampler.
	maxClock    func(dev uintptr, typ int32, mhz *uint32) int32
	busWidth    func(dev uintptr, bits *uint32) int32
	linkState   func(dev uintptr, link uint32, active *int32) int32
	fieldValues func(dev uintptr, n int32, values *nvmlFieldValue) int32
	pcieGen     func(dev uintptr, gen *uint32) int32
	pcieWidth   func(dev uintptr, width *uint32) int32
}

var (
	nvmlOnce sync.Once
	nvmlL    *nvmlLib
	nvmlErr  error
)

// nvmlAsides counts the loads loadNVMLAside started (its test's count).
var nvmlAsides atomic.Int32

// loadNVMLAside starts openNVML on a goroutine of its own, so that
// nvmlInit_v2 (some 40 ms of each rank's start on the H200s) runs beside
// cuInit and the primary context instead of after them: describe's
// readCeilings then waits on the same sync.Once for what is left of it
// (issue 52: a world start is its ranks' opens, 16 of them in the one-GPU
// suite). NVML keeps no per-thread context, so any thread may initialise
// it; a rank that never reads the ceilings (its open failed first) only
// loaded the library.
func loadNVMLAside() {
	nvmlAsides.Add(1)
	go openNVML() // its error stays in nvmlOnce for readCeilings
}

// openNVML loads and initialises NVML once per process; ErrNotSupported
// when the library or a symbol is missing.
func openNVML() (*nvmlLib, error) {
	nvmlOnce.Do(func() {
		h, err := purego.Dlopen(nvmlLibName, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			nvmlErr = backend.NotSupportedf("%s did not load (%v)", nvmlLibName, err)
			return
		}
		n := &nvmlLib{}
		bind := func(fn any, names ...string) error {
			for _, name := range names {
				if _, err := purego.Dlsym(h, name); err == nil {
					purego.RegisterLibFunc(fn, h, name)
					return nil
				}
			}
			return backend.NotSupportedf("%s has no %s", nvmlLibName, strings.Join(names, " or "))
		}
		for _, b := range []struct {
			fn    any
			names []string
		}{
			{&n.init, []string{"nvmlInit_v2"}},
			{&n.byUUID, []string{"nvmlDeviceGetHandleByUUID"}},
			{&n.clock, []string{"nvmlDeviceGetClockInfo"}},
			// Renamed in NVML 12.2; the old name stays as an alias.
			{&n.reasons, []string{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}},
			{&n.errString, []string{"nvmlErrorString"}},
		} {
			if err := bind(b.fn, b.names...); err != nil {
				nvmlErr = err
				return
			}
		}
		for _, b := range []struct {
			fn   any
			name string
		}{
			{&n.maxClock, "nvmlDeviceGetMaxClockInfo"},
			{&n.busWidth, "nvmlDeviceGetMemoryBusWidth"},
			{&n.linkState, "nvmlDeviceGetNvLinkState"},
			{&n.fieldValues, "nvmlDeviceGetFieldValues"},
			{&n.pcieGen, "nvmlDeviceGetMaxPcieLinkGeneration"},
			{&n.pcieWidth, "nvmlDeviceGetMaxPcieLinkWidth"},
		} {
			if _, err := purego.Dlsym(h, b.name); err == nil {
				purego.RegisterLibFunc(b.fn, h, b.name)
			}
		}
		if r := n.init(); r != 0 {
			nvmlErr = backend.NotSupportedf("nvmlInit_v2: %s (%d)", n.errString(r), r)
			return
		}
		nvmlL = n
	})
	return nvmlL, nvmlErr
}

// nvmlDevice finds the NVML handle of the GPU with this UUID
// ("GPU-xxxxxxxx-...", as cuDeviceGetUuid gives it once formatted): NVML's
// indices need not match CUDA's ordinals, UUIDs always do.
func (n *nvmlLib) device(uuid string) (uintptr, error) {
	b := append([]byte(uuid), 0)
	var dev uintptr
	if r := n.byUUID(&b[0], &dev); r != 0 {
		return 0, fmt.Errorf("nvmlDeviceGetHandleByUUID(%s): %s (%d)", uuid, n.errString(r), r)
	}
	return dev, nil
}

// sample reads the SM clock and the clock-event reasons now.
func (n *nvmlLib) sample(dev uintptr) (mhz uint32, reasons uint64, err error) {
	if r := n.clock(dev, nvmlClockSM, &mhz); r != 0 {
		return 0, 0, fmt.Errorf("nvmlDeviceGetClockInfo: %s (%d)", n.errString(r), r)
	}
	if r := n.reasons(dev, &reasons); r != 0 {
		return 0, 0, fmt.Errorf("nvmlDeviceGetCurrentClocksEventReasons: %s (%d)", n.errString(r), r)
	}
	return mhz, reasons, nil
}

// SampleClock implements backend.ClockSampler. NVML is loaded on the first
// sample, not in Open: nvmlInit costs tens of milliseconds that only perf
// cases should pay, and only once per rank.
func (b *Backend) SampleClock() (uint32, []string, error) {
	b.nvmlOnce.Do(func() {
		n, err := openNVML()
		if err == nil {
			b.nvmlDev, err = n.device(b.info.UUID)
		}
		b.nvmlErr = err
	})
	if b.nvmlErr != nil {
		return 0, nil, b.nvmlErr
	}
	mhz, mask, err := nvmlL.sample(b.nvmlDev)
	if err != nil {
		return 0, nil, err
	}
	// Idle at the edges of the sampled window (before the launch lands,
	// after it ends) is not a throttle.
	return mhz, NVMLReasonNames(mask &^ 0x1), nil
}
