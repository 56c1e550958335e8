// Package power says what a run could have caught (issue 52 item 1): for
// each gated perf family the smallest regression the gate would flag with
// 95 % power given its band (perf.txt) and this run's samples; for the
// litmus tests the rarest weak-outcome rate that the instances run would
// have shown at least once with 99.9 % confidence; for the counter and
// pattern families how many of their cases ran. A target (--power) names
// what the run must reach; a run that fell short says so on its verdict
// line instead of claiming the power. docs/GATING.md ("Power") is the
// user's view.
package power

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// Perf power: a regression is flagged once the run median is beyond the
// line's limit; at 95 % power the shifted median must be beyond it by
// zPower standard errors of the median (1.2533 σ/√n for normal samples).
const (
	zPower       = 1.645
	medianFactor = 1.2533
	// Confidence of the litmus statement: a weak outcome of rate p per
	// instance is seen at least once in N instances with probability
	// 1-(1-p)^N ≥ 99.9 % once p ≥ ln(1000)/N.
	Confidence = 0.999
)

// MaxLitmusInstances bounds what a litmus target may ask of one case: 16×
// the 3 145 728 instances the default runs (a vmm-host litmus case takes
// 1-2 s at that size on an H200; 16× is past any run's time).
const MaxLitmusInstances = 16 * 3145728

// ErrTarget is a --power value that is malformed or that no run can reach.
var ErrTarget = errors.New("--power")

// Target is a parsed --power: the largest perf regression every gated
// family must catch (a fraction, 0: none asked) and the rarest weak-outcome
// rate every litmus case must see (per instance, 0: none asked).
type Target struct {
	Perf   float64
	Litmus float64
	text   string
}

// String is the target as given ("" for today's sizes).
func (t Target) String() string { return t.text }

// Parse reads --power: "" (today's run sizes, power stated, no target), or
// a comma list of perf=P% (a regression of P % must be flagged with 95 %
// power in every gated family) and litmus=R (a weak outcome as rare as R
// must be seen with 99.9 % confidence; R per instance, or per million with
// /M: litmus=20/M). A target below what the gate can ever flag (the
// smallest family floor, perf.CopyOneWay's 8 %) or above what a case can
// run (MaxLitmusInstances) is unreachable: an ErrTarget error, one line.
func Parse(s string) (Target, error) {
	t := Target{text: s}
	if strings.TrimSpace(s) == "" {
		return Target{}, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Target{}, fmt.Errorf("%w=%s: %q is not perf=P%% or litmus=R", ErrTarget, s, part)
		}
		switch k {
		case "perf":
			p, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || !strings.HasSuffix(v, "%") || !(p > 0) || p >= 100 {
				return Target{}, fmt.Errorf("%w=%s: perf=%s: want a percentage between 0 and 100, such as perf=20%%", ErrTarget, s, v)
			}
			if floor := perf.CopyOneWay.Floor; p/100 < floor {
				return Target{}, fmt.Errorf("%w=%s: perf=%s is unreachable: no perf line gates tighter than %g %% (its family floor), so no run can flag a smaller regression", ErrTarget, s, v, floor*100)
			}
			t.Perf = p / 100
		case "litmus":
			scale := 1.0
			num := v
			if n, ok := strings.CutSuffix(v, "/M"); ok {
				num, scale = n, 1e-6
			}
			r, err := strconv.ParseFloat(num, 64)
			if err != nil || !(r > 0) || math.IsInf(r, 0) || r*scale >= 1 {
				return Target{}, fmt.Errorf("%w=%s: litmus=%s: want a rate per instance below 1 (litmus=1e-5) or per million (litmus=10/M)", ErrTarget, s, v)
			}
			r *= scale
			if need := Instances(r); need > MaxLitmusInstances {
				return Target{}, fmt.Errorf("%w=%s: litmus=%s is unreachable: it needs %d instances a case, over the %d a case may run", ErrTarget, s, v, need, MaxLitmusInstances)
			}
			t.Litmus = r
		default:
			return Target{}, fmt.Errorf("%w=%s: unknown part %q (want perf=P%% or litmus=R)", ErrTarget, s, k)
		}
	}
	return t, nil
}

// Instances is how many litmus instances see a weak outcome of rate p
// (per instance) at least once with Confidence: ⌈ln(1/(1-C))/p⌉.
func Instances(p float64) int {
	return int(math.Ceil(-math.Log(1-Confidence) / p))
}

// Seen is the rarest rate (per instance) n instances see with Confidence.
func Seen(n float64) float64 {
	if !(n > 0) {
		return math.Inf(1)
	}
	return -math.Log(1-Confidence) / n
}

// patternSpecs are the spec families counted as patterns' coverage.
var patternSpecs = map[string]bool{"pairs": true, "alltoall": true, "alltoall_atomic_rate": true, "allreduce": true, "spread": true, "fdexchange": true, "cpugpu": true}

// Of says what the judged results could have caught against lines (a
// perf.txt's, nil ungated) and whether they reached t.
func Of(results []report.Result, lines []perf.Line, t Target) *report.Power {
	p := &report.Power{Target: t.String()}
	byKey := map[string]report.Metric{}
	var cov = map[string]*report.Coverage{}
	var lit *report.LitmusPower
	for _, r := range results {
		id := r.ID()
		for name, m := range r.Metrics {
			byKey[id+" "+name] = m
		}
		countCoverage(cov, r)
		lit = addLitmus(lit, r)
	}
	p.Litmus = lit
	for _, g := range []string{"counter", "pattern"} {
		if c := cov[g]; c != nil {
			p.Coverage = append(p.Coverage, *c)
		}
	}
	p.Perf = perfPower(lines, byKey)
	p.Short = shortfalls(p, t)
	return p
}

// countCoverage counts r in its family's coverage (counter or pattern; a
// case of another spec is in neither): planned, and ran.
func countCoverage(cov map[string]*report.Coverage, r report.Result) {
	group := ""
	switch spec := r.Spec; {
	case spec == "counter":
		group = "counter"
	case patternSpecs[spec]:
		group = "pattern"
	}
	if group == "" {
		return
	}
	c := cov[group]
	if c == nil {
		c = &report.Coverage{Family: group}
		cov[group] = c
	}
	c.Planned++
	if ran(r.Outcome) {
		c.Ran++
	}
}

// addLitmus adds a litmus case that ran to lit (nil until the first):
// the rarest rate its instances see, and its mutants' rarest kill.
func addLitmus(lit *report.LitmusPower, r report.Result) *report.LitmusPower {
	if r.Spec != "litmus" {
		return lit
	}
	// A planted litmus bug (planted-nofence) is the control that
	// must show weak outcomes, not evidence of their absence.
	n := r.Metrics["instances"].Median
	if !(n > 0) || !ran(r.Outcome) || slices.Contains(r.Labels, "planted") {
		return lit
	}
	if lit == nil {
		lit = &report.LitmusPower{}
	}
	lit.Cases++
	if seen := Seen(n) * 1e6; seen > lit.SeenPerMillion {
		lit.SeenPerMillion, lit.Weakest, lit.Instances = round3(seen), r.ID(), int64(n)
	}
	for name, m := range r.Metrics {
		if strings.HasPrefix(name, "mutant.") && strings.HasSuffix(name, ".weak_per_million") && m.Median > 0 {
			if lit.RarestKilledPerMillion == 0 || m.Median < lit.RarestKilledPerMillion {
				lit.RarestKilledPerMillion = round3(m.Median)
			}
		}
	}
	return lit
}

// perfPower is, per family of lines, the weakest line's smallest
// regression it flags (MDE) against this run's metrics (byKey), by family.
func perfPower(lines []perf.Line, byKey map[string]report.Metric) []report.PerfPower {
	fam := map[string]*report.PerfPower{}
	for _, l := range lines {
		m, ok := byKey[l.Key()]
		if !ok || !(m.Median > 0) {
			continue
		}
		mde := MDE(l, m)
		f := fam[l.Family]
		if f == nil {
			f = &report.PerfPower{Family: l.Family}
			fam[l.Family] = f
		}
		f.Metrics++
		if mde > f.Regression {
			f.Regression, f.Weakest = round3(mde), l.Key()
		}
	}
	var out []report.PerfPower
	for _, f := range fam {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Family < out[j].Family })
	return out
}

// shortfalls are where p falls short of t: a perf family that sees a
// larger regression than t's, the litmus rate above t's.
func shortfalls(p *report.Power, t Target) []string {
	var short []string
	if t.Perf > 0 {
		for _, f := range p.Perf {
			if f.Regression > t.Perf {
				short = append(short, fmt.Sprintf("perf %s sees %s, not %s", f.Family, pct(f.Regression), pct(t.Perf)))
			}
		}
	}
	if lit := p.Litmus; t.Litmus > 0 && lit != nil && lit.SeenPerMillion > t.Litmus*1e6 {
		short = append(short, fmt.Sprintf("litmus %s sees %s/M, not %s/M", lit.Weakest, fmtRate(lit.SeenPerMillion), fmtRate(t.Litmus*1e6)))
	}
	return short
}

// MDE is the smallest regression (a fraction of this run's median) that
// line l flags with 95 % power, given this run's median and samples: the
// distance from the median to the limit, plus zPower standard errors of
// a run median of as many samples.
func MDE(l perf.Line, m report.Metric) float64 {
	var d float64
	if l.Op == ">=" {
		d = 1 - l.Limit/m.Median
	} else {
		d = l.Limit/m.Median - 1
	}
	return max(0, d) + noise(m)
}

// noise is what m's samples add to the regression a line flags with 95 %
// power: zPower standard errors of a median of as many samples (1.2533
// σ/√n), relative to their mean; 0 for fewer than two samples.
func noise(m report.Metric) float64 {
	n := float64(len(m.Samples))
	if n < 2 {
		return 0
	}
	mean, ss := 0.0, 0.0
	for _, s := range m.Samples {
		mean += s
	}
	mean /= n
	for _, s := range m.Samples {
		ss += (s - mean) * (s - mean)
	}
	if !(mean > 0) {
		return 0
	}
	return zPower * medianFactor * math.Sqrt(ss/(n-1)) / mean / math.Sqrt(n)
}

func ran(o report.Outcome) bool {
	switch o {
	case report.Skip, report.Incomplete, report.NotRunOutcome:
		return false
	}
	return true
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func pct(f float64) string { return report.Percent(f) }

func fmtRate(r float64) string { return report.Rate(r) }

// StrongInstances sizes a litmus case's strong kernel from power (issue 52
// item 2): the instances that see, with Confidence, a weak outcome as rare
// as the rarest mutant this case killed (rarestKilled, per instance; the
// measured kill rates set the target), or as target (per instance,
// --power's litmus) when that is rarer. 0 when neither is known (no
// mutant killed, no target): the case keeps its time budget.
func StrongInstances(rarestKilled, target float64) uint64 {
	p := rarestKilled
	if target > 0 && (p <= 0 || target < p) {
		p = target
	}
	if !(p > 0) {
		return 0
	}
	return uint64(Instances(p))
}

// MutantCap is where a mutant's run stops on a GPU when it is not killed
// first (issue 52 item 2): at the instances the strong kernel will run for
// the rarest rate killed so far in its case (or the target's, when rarer),
// at least one launch, within cap (the budget's instance cap). Run longer,
// a kill would only be a rate rarer than the case claims; run shorter, a
// mutant of the claimed rate could survive. Nothing known yet (no kill, no
// target): cap, so the first mutant runs as it always did.
func MutantCap(rarestKilled, target float64, launch, cap uint64) uint64 {
	n := StrongInstances(rarestKilled, target)
	if n == 0 {
		return cap
	}
	return min(cap, max(n, launch))
}

// StrongCap is where a litmus case's strong kernel stops on a GPU: the
// instances that see its rarest killed rate (or the target's) with
// Confidence, at least as many as a killed mutant ran (killedMost) and one
// launch, within cap. A mutant that survived sets nothing: its instances
// are evidence of no rate. With neither a kill nor a target there is no
// rate to size from: one launch, the least any case runs, so the run's
// stated litmus power (its weakest case's) is what it was.
func StrongCap(rarestKilled, target float64, killedMost, launch, cap uint64) uint64 {
	return min(cap, max(StrongInstances(rarestKilled, target), killedMost, launch))
}

// NoiseShare is how much of a perf line's tolerance the noise of a run's
// median may add to the smallest regression it flags with 95 % power when
// no --power perf target is set: a quarter (specs/sampling sizes the
// atomic samples' length by the same share).
const NoiseShare = 0.25

// Enough says whether samples, this run's timed samples so far of line l's
// metric, are enough for a gated run to stop sampling (issue 52 item 2):
// at least perf.MinSamples, and their median's noise (zPower standard
// errors, from their own spread: this machine's noise, measured) adds at
// most NoiseShare of the line's tolerance to the regression it flags; or,
// with a target (a fraction, --power's perf), the regression it flags
// (MDE: the distance from their median to the line's limit plus that
// noise) is within the target. A target the distance alone exceeds is
// never met: the case takes all its samples. A quiet machine stops at
// perf.MinSamples; the line's tolerance and limit are the baseline's.
func Enough(l perf.Line, samples []float64, target float64) bool {
	if len(samples) < perf.MinSamples {
		return false
	}
	m := report.Metric{Median: median(samples), Samples: samples, N: len(samples)}
	if target > 0 {
		return MDE(l, m) <= target
	}
	return noise(m) <= NoiseShare*l.Tol
}

// median of xs (not empty), xs left as it was.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
