// Package perf holds the performance gate's baseline: the perf.txt file
// (a limit per metric recorded from several runs in fresh worlds: Record,
// Parse, Format), the metric families that set each line's tolerance
// (Classify), which metrics are gated (Gated), and the median every
// recorded metric is summarised by. The judge is harness/expect's
// (JudgeMetrics, and its two offline modes CompareRuns and Outliers), the
// same package that judges outcomes. Which way a metric is better is never
// decided here: it is declared with the metric (report.MetricKind) and
// read from report.Metric.Direction. docs/GATING.md ("The perf gate") is
// its user's view.
package perf

import (
	"slices"
	"sort"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// Family is a group of metrics that share a run-to-run noise and so a
// tolerance floor. The floors come from the seven committed 1×H200 runs,
// each on a different GPU (docs/GATING.md, "Run-to-run noise"): never below
// about four times the family's largest between-run CV, so three baseline
// runs cannot under-estimate a metric with two placement modes.
type Family struct {
	Name  string
	Floor float64 // least tolerance, a fraction
	// Paired is the floor a paired A/B judgement (harness/ab) holds the
	// family to, when it differs from Floor (0: Floor). A stored band
	// must absorb shifts of the whole machine between runs minutes apart;
	// A and B alternate in blocks on the same GPU and see such a shift
	// alike, so a family widened only for it keeps the narrower floor.
	Paired float64
}

// PairedFloor is f's floor for a paired A/B judgement: Paired, else Floor.
func (f Family) PairedFloor() float64 {
	if f.Paired > 0 {
		return f.Paired
	}
	return f.Floor
}

// Families, in the order Classify tries them.
var (
	CopyOneWay = Family{Name: "copy one direction", Floor: 0.08}
	// CopyHost is a one-direction copy whose memory is host memory
	// (backends.KindSpec.HostMemory: pinned CPU memory a GPU reaches over
	// PCIe or C2C). The host link and host memory are the machine's, shared
	// with whatever else runs there: on one H100 PCIe all four vmm-host
	// copy-engine medians fell together by up to 10.3 % below a three-run
	// band in two of ten healthy runs, minutes after it was recorded, while
	// every device-memory copy stayed in band (issue 48, docs/GATING.md).
	// 12 % clears that shift and still flags copy-engine ÷1.2 (-16.7 %);
	// a paired A/B keeps the device copies' 8 %.
	CopyHost         = Family{Name: "copy one direction, host memory", Floor: 0.12, Paired: 0.08}
	CopyBoth         = Family{Name: "copy both directions", Floor: 0.20}
	AtomicContended  = Family{Name: "atomic contended", Floor: 0.08}
	AtomicHost       = Family{Name: "atomic contended, vmm-host", Floor: 0.15}
	AtomicSpread     = Family{Name: "atomic spread", Floor: 0.40}
	RoundTripLaunch  = Family{Name: "round trip, one launch", Floor: 0.40}
	RoundTripProcess = Family{Name: "round trip, two processes", Floor: 0.10}
	Other            = Family{Name: "other", Floor: 0.20}
)

// families is every family, in the order perf.txt groups its lines.
var families = []Family{CopyOneWay, CopyHost, CopyBoth, AtomicContended, AtomicHost, AtomicSpread, RoundTripLaunch, RoundTripProcess, Other}

// Cap is the largest tolerance: beyond it a metric cannot show even a
// halving, and the line says so (insensitive).
const Cap = 0.40

// Insensitive is the tolerance above which a line cannot promise to see a
// 10-15 % change; it still gates, and every run lists it.
const Insensitive = 0.15

// Classify is the family of metric name on case id. Spread atomics and the
// one-launch round trip move 23-33 % between GPUs (placement modes), so
// their floor is the cap until same-GPU A/A runs show a machine scope can
// be tighter.
func Classify(id, name string) Family {
	switch {
	case strings.HasPrefix(name, "bw_") && strings.Contains(name, "bidir"), strings.HasPrefix(name, "bw_alltoall"):
		return CopyBoth
	case strings.HasPrefix(name, "bw_") && onHostMemory(id):
		return CopyHost
	case strings.HasPrefix(name, "bw_"):
		return CopyOneWay
	case name == "atomic_rate" && strings.Contains(id, ".atomic_spread"):
		return AtomicSpread
	case name == "atomic_rate" && strings.Contains(id, ".vmm-host."):
		return AtomicHost
	case name == "atomic_rate":
		return AtomicContended
	case name == "rtt_dev_us":
		return RoundTripLaunch
	case strings.HasPrefix(name, "rtt_"):
		return RoundTripProcess
	}
	return Other
}

// onHostMemory: case id ("backend.kind.…") is of a kind whose memory is
// host memory (backends.KindSpec.HostMemory), asked of the backend's row,
// never of the kind's name.
func onHostMemory(id string) bool {
	c := report.ParseCase(id, nil)
	return c.Backend != "" && backends.KindSpecOf(c.Backend, c.Kind).HostMemory
}

// Gated says whether a metric of r takes part in the perf gate: a perf
// case of a GPU backend, a declared direction (report.Metric.Direction),
// and at least MinSamples samples
// (counter.* rates from two launches and one-shot all-to-all copies stay
// informational).
func Gated(r report.Result, m report.Metric) bool {
	return report.LabelPerf.In(r.Labels) && backends.IsGPU(r.Backend) && m.Direction().Sign() != 0 && m.N >= MinSamples
}

// MinSamples is the least number of timed samples a gated metric has.
const MinSamples = 3

// MinRuns is the least number of runs in fresh worlds a perf.txt is
// recorded from: fewer cannot tell a run-to-run range from one run's luck.
const MinRuns = 3

// Median is the median of xs (0 for none): the one rule every recorded
// metric, the physics floor, the perf gate and p2pfleet use.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
