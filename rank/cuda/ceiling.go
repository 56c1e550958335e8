package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The physical ceilings of the paths a copy can take, read from the
// machine through NVML when the rank opens its device and reported in
// DeviceInfo.Attrs (GB/s = 10^9 bytes/s, per direction where a link has
// two). The suite compares each bandwidth metric with the ceiling of the
// resources its bytes cross (harness/ceiling.go); a metric above it is a
// measurement error, not a number.

// NVML constants (nvml.h).
const (
	nvmlClockMem              = 2  // NVML_CLOCK_MEM
	nvmlNvlinkMaxLinks        = 18 // NVML_NVLINK_MAX_LINKS
	nvmlFeatureEnabled        = 1  // NVML_FEATURE_ENABLED
	nvmlFiNvlinkSpeedMbpsComm = 90 // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: MB/s per active link and direction
	nvmlErrorNotSupported     = 3  // NVML_ERROR_NOT_SUPPORTED
)

// nvmlFieldValue is nvmlFieldValue_t (40 bytes): fieldId, scopeId,
// timestamp, latencyUsec, valueType, nvmlReturn, then an 8-byte union.
type nvmlFieldValue struct {
	FieldID     uint32
	ScopeID     uint32
	Timestamp   int64
	LatencyUsec int64
	ValueType   uint32
	Return      uint32
	Value       uint64
}

// pcieLaneGBps is one lane's rate per direction after line coding, by
// PCIe generation: 2.5 and 5 GT/s with 8b/10b, 8-32 GT/s with 128b/130b,
// 64 GT/s FLIT mode (242 of 256 bytes carry data).
var pcieLaneGBps = map[uint32]float64{
	1: 2.5 * 8 / 10 / 8, 2: 5.0 * 8 / 10 / 8,
	3: 8.0 * 128 / 130 / 8, 4: 16.0 * 128 / 130 / 8, 5: 32.0 * 128 / 130 / 8,
	6: 64.0 * 242 / 256 / 8,
}

// ceilingSource is what readCeilings needs from NVML; tests give a fake.
type ceilingSource interface {
	maxMemClockMHz() (uint32, error)
	busWidthBits() (uint32, error)
	activeNvlinks() (int, error)
	nvlinkMBps() (uint32, error)
	pcie() (gen, width uint32, err error)
}

// readCeilings reads the ceilings of the GPU with this UUID; an NVML that
// does not load gives only ceiling_error.
func readCeilings(uuid string) map[string]string {
	n, err := openNVML()
	if err == nil {
		var dev uintptr
		if dev, err = n.device(uuid); err == nil {
			return ceilings(nvmlCeilings{n, dev})
		}
	}
	return map[string]string{"ceiling_error": err.Error()}
}

// ceilings turns what src reports into Attrs: hbm_gbps (all traffic, read
// plus write), nvlink_gbps (per direction, over every active link) and
// pcie_gbps (per direction), each with a *_basis saying how it was read.
// A query that fails leaves its ceiling out and says why in ceiling_error;
// no active NVLink is an answer (nvlink_links "0"), not an error.
func ceilings(src ceilingSource) map[string]string {
	out := map[string]string{}
	var errs []string
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	clk, err := src.maxMemClockMHz()
	var bits uint32
	if err == nil {
		bits, err = src.busWidthBits()
	}
	switch {
	case err != nil:
		errs = append(errs, "hbm: "+err.Error())
	case clk == 0 || bits == 0:
		errs = append(errs, fmt.Sprintf("hbm: NVML reports max memory clock %d MHz, bus width %d bits", clk, bits))
	default:
		// HBM moves data on both clock edges.
		out["hbm_gbps"] = f(float64(clk) * 1e6 * 2 * float64(bits) / 8 / 1e9)
		out["hbm_basis"] = fmt.Sprintf("NVML max memory clock %d MHz × 2 (double data rate) × %d-bit bus", clk, bits)
	}
	links, err := src.activeNvlinks()
	switch {
	case err != nil:
		errs = append(errs, "nvlink: "+err.Error())
	case links == 0:
		out["nvlink_links"] = "0"
	default:
		mbps, err := src.nvlinkMBps()
		if err != nil || mbps == 0 {
			errs = append(errs, fmt.Sprintf("nvlink: %d active links, speed unknown (%d MB/s, %v)", links, mbps, err))
			break
		}
		out["nvlink_links"] = strconv.Itoa(links)
		out["nvlink_gbps"] = f(float64(links) * float64(mbps) / 1000)
		out["nvlink_basis"] = fmt.Sprintf("%d active NVLinks × %.3f GB/s per direction (NVML)", links, float64(mbps)/1000)
	}
	gen, width, err := src.pcie()
	lane, known := pcieLaneGBps[gen]
	switch {
	case err != nil:
		errs = append(errs, "pcie: "+err.Error())
	case !known || width == 0:
		errs = append(errs, fmt.Sprintf("pcie: generation %d, width x%d not known", gen, width))
	default:
		out["pcie_gbps"] = f(lane * float64(width))
		out["pcie_basis"] = fmt.Sprintf("PCIe gen %d x%d (NVML max link), %.3f GB/s per lane per direction", gen, width, lane)
	}
	if len(errs) > 0 {
		out["ceiling_error"] = strings.Join(errs, "; ")
	}
	return out
}

// nvmlCeilings reads the ceilings of one NVML device.
type nvmlCeilings struct {
	n   *nvmlLib
	dev uintptr
}

var errNoSymbol = errors.New("symbol missing from " + nvmlLibName)

func (c nvmlCeilings) ret(name string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", name, c.n.errString(r), r)
}

func (c nvmlCeilings) maxMemClockMHz() (uint32, error) {
	if c.n.maxClock == nil {
		return 0, fmt.Errorf("nvmlDeviceGetMaxClockInfo: %w", errNoSymbol)
	}
	var v uint32
	return v, c.ret("nvmlDeviceGetMaxClockInfo(MEM)", c.n.maxClock(c.dev, nvmlClockMem, &v))
}

func (c nvmlCeilings) busWidthBits() (uint32, error) {
	if c.n.busWidth == nil {
		return 0, fmt.Errorf("nvmlDeviceGetMemoryBusWidth: %w", errNoSymbol)
	}
	var v uint32
	return v, c.ret("nvmlDeviceGetMemoryBusWidth", c.n.busWidth(c.dev, &v))
}

func (c nvmlCeilings) activeNvlinks() (int, error) {
	if c.n.linkState == nil {
		return 0, fmt.Errorf("nvmlDeviceGetNvLinkState: %w", errNoSymbol)
	}
	n := 0
	for l := uint32(0); l < nvmlNvlinkMaxLinks; l++ {
		var st int32
		switch r := c.n.linkState(c.dev, l, &st); {
		case r == nvmlErrorNotSupported:
			return n, nil // no NVLink on this GPU, or past its last link
		case r != 0:
			continue // a link index the GPU does not have
		case st == nvmlFeatureEnabled:
			n++
		}
	}
	return n, nil
}

func (c nvmlCeilings) nvlinkMBps() (uint32, error) {
	if c.n.fieldValues == nil {
		return 0, fmt.Errorf("nvmlDeviceGetFieldValues: %w", errNoSymbol)
	}
	fv := nvmlFieldValue{FieldID: nvmlFiNvlinkSpeedMbpsComm}
	if err := c.ret("nvmlDeviceGetFieldValues", c.n.fieldValues(c.dev, 1, &fv)); err != nil {
		return 0, err
	}
	if fv.Return != 0 {
		return 0, c.ret("NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", int32(fv.Return))
	}
	return uint32(fv.Value), nil // uiVal: the union's low 4 bytes (little endian)
}

func (c nvmlCeilings) pcie() (uint32, uint32, error) {
	if c.n.pcieGen == nil || c.n.pcieWidth == nil {
		return 0, 0, fmt.Errorf("nvmlDeviceGetMaxPcieLink*: %w", errNoSymbol)
	}
	var gen, width uint32
	if err := c.ret("nvmlDeviceGetMaxPcieLinkGeneration", c.n.pcieGen(c.dev, &gen)); err != nil {
		return 0, 0, err
	}
	return gen, width, c.ret("nvmlDeviceGetMaxPcieLinkWidth", c.n.pcieWidth(c.dev, &width))
}
