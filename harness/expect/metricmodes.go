package expect

import (
	"fmt"
	"math"
	"strings"

	"golang.org/x/perf/benchmath"

	"p2patomics/harness/pairs"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// Worse says whether v is worse than ref for a metric declared better
// in direction d: the one rule Judge (a median against a limit),
// CompareRuns (a new run against an old one) and Outliers (a node against
// the fleet) decide by. An undeclared direction is never worse.
func Worse(d report.Direction, v, ref float64) bool { return float64(d.Sign())*(v-ref) < 0 }

// The offline modes. Judge needs a perf.txt: a limit recorded from runs in
// fresh worlds. p2pcompare without one has two runs, one a side, and
// p2pfleet has one run per node and no baseline at all, so their
// decisions differ in what a change is measured against (the other run's
// samples; the fleet's median and spread) — never in which way is worse
// (Worse) or which metrics count (Gated), which are the gate's.

// RunChange is CompareRuns's answer for one metric of two runs.
type RunChange struct {
	Rel float64 // (new−old)/|old|; 0 when old is 0
	// Judged: "u-test" (Mann-Whitney U on both runs' samples, as benchstat
	// does), "ranges" (a run without samples: a change counts only when
	// the two min–max ranges do not overlap) or "too-few" (a run measured
	// once: never counts).
	Judged string
	P      float64
	N1, N2 int
	// Delta is the change as printed: "+5.1% (p=0.008, n=5+5)", "~ (p=0.69,
	// n=5+5)", "~ (no samples)"; "~" leads every change that does not count.
	Delta string
	// Verdict of a change that counts: report.PerfRegression (worse by the
	// metric's declared direction), report.PerfImprovement, or "" for an
	// undeclared direction; "" too when nothing changed.
	Verdict report.Verdict
}

// Significant: the change counts (a regression or improvement by
// direction, or a change of an undeclared metric).
func (c RunChange) Significant() bool { return !strings.HasPrefix(c.Delta, "~") }

// CompareRuns is the two-run mode: o and n are one metric of an old and a
// new run, judged against their spread, not a flat threshold — the U test
// (p < alpha) with the median moved by more than threshold; without
// samples, only non-overlapping min–max ranges; one sample never counts.
// The direction is n's declared one.
func CompareRuns(o, n report.Metric, threshold, alpha float64) RunChange {
	c := RunChange{}
	if o.Median != 0 {
		c.Rel = (n.Median - o.Median) / math.Abs(o.Median)
	}
	big := math.Abs(c.Rel) > threshold
	pct := fmt.Sprintf("%+.1f%%", c.Rel*100)
	switch {
	case len(o.Samples) >= 2 && len(n.Samples) >= 2:
		th := benchmath.DefaultThresholds
		th.CompareAlpha = alpha
		cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(o.Samples, &th), benchmath.NewSample(n.Samples, &th))
		c.Judged, c.P, c.N1, c.N2 = "u-test", cmp.P, cmp.N1, cmp.N2
		stat := fmt.Sprintf("p=%.3f, n=%d+%d", cmp.P, cmp.N1, cmp.N2)
		switch {
		case cmp.P < alpha && big:
			c.Delta = pct + " (" + stat + ")"
		case cmp.P < alpha:
			c.Delta = fmt.Sprintf("~ (%s; %s is within %.0f%%)", stat, pct, threshold*100)
		default:
			c.Delta = "~ (" + stat + ")"
		}
	case o.N < 2 || n.N < 2:
		// One sample has no spread to judge a change against.
		c.Judged, c.N1, c.N2 = "too-few", o.N, n.N
		c.Delta = fmt.Sprintf("~ (n=%d+%d: too few samples to judge)", o.N, n.N)
	default:
		c.Judged, c.Delta = "ranges", "~ (no samples)"
		if apart := n.Max < o.Min || n.Min > o.Max; apart && big && o.Median != 0 {
			c.Delta = fmt.Sprintf("%s (no samples; ranges %s–%s and %s–%s do not overlap)", pct,
				pairs.Format(o.Min), pairs.Format(o.Max), pairs.Format(n.Min), pairs.Format(n.Max))
		}
	}
	if c.Significant() && n.Direction().Sign() != 0 {
		c.Verdict = report.PerfImprovement
		if Worse(n.Direction(), n.Median, o.Median) {
			c.Verdict = report.PerfRegression
		}
	}
	return c
}

// NodeValue is one node's value of a metric in the fleet mode
// (p2pfleet's --json "nodes").
type NodeValue struct {
	Node    string  `json:"node"`
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	N       int     `json:"n"`
	Z       float64 `json:"z"`                 // (median − fleet median) / scale
	Outlier string  `json:"outlier,omitempty"` // "low" or "high"
	Bad     bool    `json:"bad,omitempty"`     // the outlier is worse by the metric's declared direction
}

// Spread is the fleet's centre and spread of one metric.
type Spread struct {
	Median float64 // of the node medians
	// Scale is the larger of the robust spread across node medians
	// (1.4826 × MAD) and the median within-node half range.
	Scale    float64
	Min, Max float64 // of the node medians
	Outliers int
}

// OutlierZ is how many scales from the fleet median a node must sit.
const OutlierZ = 3

// OutlierRel is how far from the fleet median, relative to it, a node must
// also sit: the scale of a handful of nodes can be tiny by chance, and a
// difference of a few percent is no reason to stop a rollout. A gated
// metric's own family floor (Classify) replaces it when larger.
const OutlierRel = 0.10

// Outliers is the fleet mode: it sets each node's z and outlier flag in
// nodes, Bad where the outlier is worse (Worse) by d. rel is the least
// relative distance from the fleet median an outlier has (OutlierRel,
// or a gated metric's family floor).
func Outliers(nodes []NodeValue, d report.Direction, rel float64) Spread {
	meds := make([]float64, len(nodes))
	halves := make([]float64, len(nodes))
	for i, v := range nodes {
		meds[i] = v.Median
		halves[i] = (v.Max - v.Min) / 2
	}
	s := Spread{Median: perf.Median(meds), Min: math.Inf(1), Max: math.Inf(-1)}
	dev := make([]float64, len(meds))
	for i, m := range meds {
		dev[i] = math.Abs(m - s.Median)
		s.Min, s.Max = math.Min(s.Min, m), math.Max(s.Max, m)
	}
	s.Scale = math.Max(1.4826*perf.Median(dev), perf.Median(halves))
	if len(nodes) < 3 {
		// Two nodes have no majority to stand out from.
		return s
	}
	for i := range nodes {
		v := &nodes[i]
		if s.Scale > 0 {
			v.Z = math.Round((v.Median-s.Median)/s.Scale*1000) / 1000
		}
		reaches := v.Min <= s.Median && s.Median <= v.Max
		// One sample has no spread of its own: the scale is then only the
		// spread of a few nodes' single values, near zero by chance (three
		// healthy nodes' pair rates were flagged so). Shown, not judged.
		oneSample := v.N == 1 || v.N == 0 && v.Min == v.Max
		if reaches || s.Scale == 0 && v.Median == s.Median || oneSample || math.Abs(v.Median-s.Median) <= rel*math.Abs(s.Median) {
			continue
		}
		if s.Scale == 0 || math.Abs(v.Median-s.Median) > OutlierZ*s.Scale {
			v.Outlier = "high"
			if v.Median < s.Median {
				v.Outlier = "low"
			}
			v.Bad = Worse(d, v.Median, s.Median)
			s.Outliers++
		}
	}
	return s
}
