package harness

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// Physical ceilings of bandwidth metrics. A copy run by one GPU reads each
// byte where its source lives and writes it where its destination lives;
// every resource on the way (a GPU's HBM, its NVLinks or PCIe link in one
// direction) carries some bytes per byte copied. The ceiling is the
// smallest capacity / load over those resources: a bound no measurement
// can beat. The capacities come from the ranks' device facts
// (device.Info.Ceilings; rank/cuda reads them through NVML); a resource
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
func (c *Ctx) MemLoc(rank int) Loc { return Loc{Rank: rank, Host: c.KindSpec().HostMemory} }

// resource is what a copy's bytes cross: a GPU's HBM, or its NVLinks or
// PCIe link in one direction.
type resource int

const (
	hbm resource = iota
	nvlink
	pcie
)

func (k resource) String() string { return [...]string{"hbm", "nvlink", "pcie"}[k] }

// of is k's capacity among a device's ceilings.
func (k resource) of(cs device.Ceilings) device.Bandwidth {
	switch k {
	case hbm:
		return cs.HBM
	case nvlink:
		return cs.NVLink
	}
	return cs.PCIe
}

// use is one resource of one device a set of flows loads.
type use struct {
	name string // "nvlink out of GPU-a": names it in the ceiling's basis
	bw   device.Bandwidth
}

// route accumulates, over the flows of one copy, each resource's load: the
// bytes it carries per byte copied.
type route struct {
	c     *Ctx
	share float64 // one flow's part of the bytes copied
	load  map[string]float64
	uses  map[string]use
}

// CopyCeiling is the ceiling of the total bytes copied by flows running at
// once (each flow copying the same number of bytes), in GB/s; nil when no
// resource on the way has a known capacity.
func (c *Ctx) CopyCeiling(flows ...Flow) *report.Ceiling {
	rt := &route{c: c, share: 1 / float64(len(flows)), load: map[string]float64{}, uses: map[string]use{}}
	for _, f := range flows {
		rt.move(f.Exec, f.Src, true)
		rt.move(f.Exec, f.Dst, false)
	}
	return rt.tightest()
}

// add loads resource k of rank r's device (dir " in", " out" or "" for
// HBM) with one flow's share; a capacity the rank did not read is left out.
func (rt *route) add(r int, k resource, dir string) {
	bw := k.of(rt.c.W.Infos[r].Ceilings)
	if bw.GBps <= 0 {
		return
	}
	name := fmt.Sprintf("%s%s of %s", k, dir, rt.c.W.DeviceKey(r))
	rt.uses[name] = use{name, bw}
	rt.load[name] += rt.share
}

// link is the route between two GPUs: NVLink when both have active links
// (on NVSwitch and direct-link machines every peer is reached through
// them), else PCIe.
func (rt *route) link(a, b int) resource {
	if nvlink.of(rt.c.W.Infos[a].Ceilings).GBps > 0 && nvlink.of(rt.c.W.Infos[b].Ceilings).GBps > 0 {
		return nvlink
	}
	return pcie
}

// move accounts bytes travelling between the executing GPU e and l; read
// says they flow from l to e.
func (rt *route) move(e int, l Loc, read bool) {
	// The direction each end's link carries the bytes: read, out of l
	// into e; written, out of e into l.
	lDir, eDir := " out", " in"
	if !read {
		lDir, eDir = " in", " out"
	}
	switch {
	case l.Host:
		// Host memory is reached over the GPU's PCIe link, except where
		// the GPU is coherent with the CPU (NVLink-C2C, which reports
		// native host atomics): no ceiling is read for that.
		if rt.c.W.Infos[e].Caps.HostAtomics.OK {
			return
		}
		rt.add(e, pcie, eDir)
	case rt.c.W.DeviceKey(l.Rank) == rt.c.W.DeviceKey(e):
		rt.add(e, hbm, "")
	default:
		rt.add(l.Rank, hbm, "")
		k := rt.link(e, l.Rank)
		rt.add(l.Rank, k, lDir)
		rt.add(e, k, eDir)
	}
}

// tightest is the smallest capacity / load over the loaded resources, nil
// when none has a known capacity.
func (rt *route) tightest() *report.Ceiling {
	var best *report.Ceiling
	names := make([]string, 0, len(rt.load))
	for name := range rt.load {
		names = append(names, name)
	}
	sort.Strings(names) // ties name the same resource every run
	for _, name := range names {
		l, u := rt.load[name], rt.uses[name]
		v := u.bw.GBps / l
		if best == nil || v < best.Value {
			per := ""
			if l != 1 {
				per = fmt.Sprintf(", %.4g bytes of its traffic per byte copied", l)
			}
			best = &report.Ceiling{Value: math.Round(v*10) / 10, Basis: fmt.Sprintf("%s: %.1f GB/s (%s)%s", u.name, u.bw.GBps, u.bw.Basis, per)}
		}
	}
	return best
}

// Bandwidth records a bandwidth sample under name with the ceiling: a
// bandwidth is declared in GB/s, higher is better; a sample above the ceiling is a measurement error: the metric
// is dropped from the case and the case ends with the error.
func (c *Ctx) Bandwidth(name, method string, ceil *report.Ceiling, v float64) error {
	if ceil != nil && v > ceil.Value {
		delete(c.Metrics, name)
		return fmt.Errorf("measurement error: %s read %.1f GB/s, above the physical ceiling of %.1f GB/s (%s); the timing does not measure what ran", name, v, ceil.Value, ceil.Basis)
	}
	c.Metric(report.MetricKind{Name: name, Unit: "GB/s", Better: report.Higher}, method, v)
	if ceil != nil {
		m := c.Metrics[name]
		m.Ceiling = ceil
		c.Metrics[name] = m
	}
	return nil
}

// FloorFraction is the physics floor: a bandwidth metric whose median is
// below this fraction of its physical ceiling ends its case fail, with no
// baseline needed, so an ungated run also catches a halved copy engine.
// Half, because on the committed 1xH200 runs every healthy bandwidth
// median sits at 59.0-87.6% of its ceiling and every halved one at
// 29.5-43.8%: 0.5 leaves 9 points either side (docs/GATING.md, "The
// physics floor", lists each metric's healthy fraction;
// TestFloorBelowEveryCommittedHealthyMetric fails if it is raised past
// the lowest). A metric with no ceiling (the host backend, AMD) has no floor.
const FloorFraction = 0.5

// FloorMinSamples is the fewest samples a metric needs to meet the floor:
// the perf gate's own rule (perf.MinSamples). A one-sample metric is one
// window, and the all-to-all copies' window spans two processes' launch
// skew on one clock: on the 1xH200 the ipc all-to-all kernel copy read
// 60.9-69.8% of its ceiling in 27 healthy runs and 46.0% in the 28th
// (results/h200x1-580.159.04/, the gated run at 51dd52b: a new-flake
// whose rerun passed). That is the harness's window, not the device's
// bandwidth, so such a metric is reported against its ceiling but not
// floored; the copy engines' and kernels' copies (5 samples) are.
const FloorMinSamples = 3

// belowFloor is the case's failure when a bandwidth metric's median is
// below FloorFraction of its ceiling, naming each such metric with its
// value, ceiling and fraction; nil when none is.
func belowFloor(c *Ctx) error {
	names := make([]string, 0, len(c.Metrics))
	for name := range c.Metrics {
		names = append(names, name)
	}
	sort.Strings(names)
	var low []string
	for _, name := range names {
		m := c.Metrics[name]
		if m.Ceiling == nil || m.Ceiling.Value <= 0 || len(m.Samples) < FloorMinSamples {
			continue
		}
		med := perf.Median(m.Samples)
		if frac := med / m.Ceiling.Value; frac < FloorFraction {
			low = append(low, fmt.Sprintf("%s %.1f %s is %.1f%% of its %.1f %s ceiling (%s): below the %.0f%% physics floor",
				name, med, m.Unit, 100*frac, m.Ceiling.Value, m.Unit, m.Ceiling.Basis, 100*FloorFraction))
		}
	}
	if len(low) == 0 {
		return nil
	}
	return Failf("%s", strings.Join(low, "; "))
}

// floorCheck is the body's result with the physics floor applied: a body
// that passed fails when a bandwidth metric is below its floor; any other
// result stands (the floor never hides an error or a crash).
func floorCheck(c *Ctx, body error) error {
	if body != nil {
		return body
	}
	return belowFloor(c)
}
