package harness

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"p2patomics/harness/report"
)

// Physical ceilings of bandwidth metrics. A copy run by one GPU reads each
// byte where its source lives and writes it where its destination lives;
// every resource on the way (a GPU's HBM, its NVLinks or PCIe link in one
// direction) carries some bytes per byte copied. The ceiling is the
// smallest capacity / load over those resources: a bound no measurement
// can beat. The capacities come from the ranks' device facts (rank/cuda
// reads them through NVML: hbm_gbps, nvlink_gbps, pcie_gbps); a resource
// whose capacity is unknown is left out, which only loosens the bound, and
// with none known there is no ceiling (the host backend: nothing to read
// honestly about a CPU's memory bandwidth from userspace).

// Loc is where a buffer's bytes live: rank's GPU memory, or host memory
// (vmm-host) reached from the GPU that runs the copy.
type Loc struct {
	Rank int
	Host bool
}

// Flow is one of several copies of equal size running at once: run by
// Exec's GPU, from Src to Dst.
type Flow struct {
	Exec     int
	Src, Dst Loc
}

// MemLoc is where memory of the case's kind owned by rank lives.
func (c *Ctx) MemLoc(rank int) Loc { return Loc{Rank: rank, Host: c.Kind == "vmm-host"} }

type resource struct {
	name, basis string
	gbps        float64
}

// attrGBps reads one of rank r's capacities (key hbm, nvlink or pcie):
// GB/s and how it was read; 0 when the rank reported none.
func attrGBps(c *Ctx, r int, key string) (float64, string) {
	v, err := strconv.ParseFloat(c.Attr(r, key+"_gbps"), 64)
	if err != nil || v <= 0 {
		return 0, ""
	}
	return v, c.Attr(r, key+"_basis")
}

// CopyCeiling is the ceiling of the total bytes copied by flows running at
// once (each flow copying the same number of bytes), in GB/s; nil when no
// resource on the way has a known capacity.
func (c *Ctx) CopyCeiling(flows ...Flow) *report.Ceiling {
	load := map[string]float64{}
	res := map[string]resource{}
	use := func(r int, key, dir string) {
		gbps, basis := attrGBps(c, r, key)
		if gbps == 0 {
			return
		}
		name := fmt.Sprintf("%s%s of %s", key, dir, c.DeviceKey(r))
		res[name] = resource{name, basis, gbps}
		load[name] += 1 / float64(len(flows))
	}
	// link is the route between two GPUs: NVLink when both have active
	// links (on NVSwitch and direct-link machines every peer is reached
	// through them), else PCIe.
	link := func(a, b int) string {
		ga, _ := attrGBps(c, a, "nvlink")
		gb, _ := attrGBps(c, b, "nvlink")
		if ga > 0 && gb > 0 {
			return "nvlink"
		}
		return "pcie"
	}
	// move accounts bytes travelling between the executing GPU e and l;
	// read says they flow from l to e.
	move := func(e int, l Loc, read bool) {
		out, in := " out", " in"
		switch {
		case l.Host:
			// Host memory is reached over the GPU's PCIe link, except
			// where the GPU is coherent with the CPU (NVLink-C2C, which
			// reports native host atomics): no ceiling is read for that.
			if c.W.Infos[e].Caps.HostAtomics.OK {
				return
			}
			if read {
				use(e, "pcie", in)
			} else {
				use(e, "pcie", out)
			}
		case c.DeviceKey(l.Rank) == c.DeviceKey(e):
			use(e, "hbm", "")
		default:
			use(l.Rank, "hbm", "")
			k := link(e, l.Rank)
			if read {
				use(l.Rank, k, out)
				use(e, k, in)
			} else {
				use(e, k, out)
				use(l.Rank, k, in)
			}
		}
	}
	for _, f := range flows {
		move(f.Exec, f.Src, true)
		move(f.Exec, f.Dst, false)
	}
	var best *report.Ceiling
	names := make([]string, 0, len(load))
	for name := range load {
		names = append(names, name)
	}
	sort.Strings(names) // ties name the same resource every run
	for _, name := range names {
		l := load[name]
		r := res[name]
		v := r.gbps / l
		if best == nil || v < best.Value {
			per := ""
			if l != 1 {
				per = fmt.Sprintf(", %.4g bytes of its traffic per byte copied", l)
			}
			best = &report.Ceiling{Value: math.Round(v*10) / 10, Basis: fmt.Sprintf("%s: %.1f GB/s (%s)%s", r.name, r.gbps, r.basis, per)}
		}
	}
	return best
}

// Bandwidth records a bandwidth sample (GB/s) under name with the
// ceiling; a sample above the ceiling is a measurement error: the metric
// is dropped from the case and the case ends with the error.
func (c *Ctx) Bandwidth(name, method string, ceil *report.Ceiling, v float64) error {
	if ceil != nil && v > ceil.Value {
		delete(c.Metrics, name)
		return fmt.Errorf("measurement error: %s read %.1f GB/s, above the physical ceiling of %.1f GB/s (%s); the timing does not measure what ran", name, v, ceil.Value, ceil.Basis)
	}
	c.Metric(name, "GB/s", method, v)
	if ceil != nil {
		m := c.Metrics[name]
		m.Ceiling = ceil
		c.Metrics[name] = m
	}
	return nil
}
