package report

import (
	"fmt"
	"strings"
)

// Perf verdicts of one gated metric (harness/expect.JudgeMetrics): the
// same Verdict a case's outcome is judged to, by the same package. The
// first two fail the gate (MetricFails); the others are reported.
const (
	PerfRegression  Verdict = "perf-regression"
	PerfMissing     Verdict = "perf-missing"
	PerfNoise       Verdict = "perf-noise"
	PerfUnstable    Verdict = "perf-unstable"
	PerfImprovement Verdict = "perf-improvement"
)

// MetricFails reports whether a metric's verdict fails the gate.
func MetricFails(v Verdict) bool { return v == PerfRegression || v == PerfMissing }

// PerfFinding is one metric the perf gate did not find in band.
type PerfFinding struct {
	ID      string  `json:"id"`
	Metric  string  `json:"metric"`
	Verdict Verdict `json:"verdict"`
	Unit    string  `json:"unit"`
	Was     float64 `json:"was"` // the baseline band's edge nearest the limit
	Now     float64 `json:"now"` // this run's median (0 when missing)
	Percent float64 `json:"percent"`
	Op      string  `json:"op"`
	Limit   float64 `json:"limit"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	// Confirmed: re-measurements in fresh worlds agreed (Reruns are
	// their medians); false with none to ask (an offline re-judgement).
	Confirmed bool      `json:"confirmed"`
	Reruns    []float64 `json:"reruns,omitempty"`
	Detail    string    `json:"detail"`
}

// PerfSummary is the perf gate's part of a run's summary.
type PerfSummary struct {
	Baseline    string        `json:"baseline"` // the perf.txt judged against
	Gated       int           `json:"gated"`
	InBand      int           `json:"in_band"`
	Insensitive int           `json:"insensitive"`
	Findings    []PerfFinding `json:"findings"`
	// Bands is every judged metric against its perf.txt line, in band or
	// not (report.html's perf table); absent in runs recorded before it.
	Bands []PerfBand `json:"bands,omitempty"`
}

// PerfBand is one gated metric against its perf.txt line: this run's
// median (Now), the band lo..hi it was recorded with, the limit, and the
// verdict ("in-band" or the finding's).
type PerfBand struct {
	ID      string  `json:"id"`
	Metric  string  `json:"metric"`
	Unit    string  `json:"unit"`
	Now     float64 `json:"now"`
	Op      string  `json:"op"`
	Limit   float64 `json:"limit"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	Verdict Verdict `json:"verdict"`
}

// InBand is PerfBand.Verdict for a metric within its limit.
const InBand Verdict = "in-band"

// Failing is the findings that fail the gate.
func (p *PerfSummary) Failing() []PerfFinding {
	var out []PerfFinding
	if p == nil {
		return nil
	}
	for _, f := range p.Findings {
		if MetricFails(f.Verdict) {
			out = append(out, f)
		}
	}
	return out
}

// Count is how many findings have verdict v.
func (p *PerfSummary) Count(v Verdict) int {
	n := 0
	if p != nil {
		for _, f := range p.Findings {
			if f.Verdict == v {
				n++
			}
		}
	}
	return n
}

// Named is a finding as the verdict line names it: "id metric 2069 → 1031
// GB/s (−50.2%, limit 1882; unconfirmed)".
func (f PerfFinding) Named() string {
	if f.Verdict == PerfMissing {
		return fmt.Sprintf("%s %s missing (%s)", f.ID, f.Metric, f.Detail)
	}
	conf := "unconfirmed: no re-measurement recorded"
	if f.Confirmed {
		conf = "confirmed by reruns " + strings.Join(fmtAll(f.Reruns), ", ")
	}
	return fmt.Sprintf("%s %s %s → %s %s (%+.1f%%, limit %s %s; %s)", f.ID, f.Metric, fmtNum(f.Was), fmtNum(f.Now), f.Unit, f.Percent, f.Op, fmtNum(f.Limit), conf)
}

func fmtNum(v float64) string { return fmt.Sprintf("%.4g", v) }

func fmtAll(vs []float64) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmtNum(v)
	}
	return out
}

// AddPerf records the perf gate's findings: a failing one fails the run
// (exit 1) unless the run was interrupted, and the verdict line names
// them after any correctness finding.
func (s *Summary) AddPerf(p *PerfSummary) {
	if p == nil {
		return
	}
	s.Perf = p
	if len(p.Failing()) > 0 && s.Interrupted == "" {
		s.Verdict, s.ExitStatus = VerdictFail, ExitFail
	}
	s.Line = s.line()
}

// perfLine is the perf part of the verdict line ("" when there is none).
func (s Summary) perfLine() string {
	p := s.Perf
	if p == nil {
		return ""
	}
	fail := p.Failing()
	if len(fail) == 0 {
		l := fmt.Sprintf("perf: %d of %d in band", p.InBand, p.Gated)
		for _, v := range []Verdict{PerfNoise, PerfUnstable, PerfImprovement} {
			if n := p.Count(v); n > 0 {
				l += fmt.Sprintf(", %d %s", n, v)
			}
		}
		return l
	}
	var named []string
	for i, f := range fail {
		if i == maxNamed {
			named = append(named, fmt.Sprintf("+%d more", len(fail)-maxNamed))
			break
		}
		named = append(named, f.Named())
	}
	return fmt.Sprintf("%s: %s", plural(len(fail), "perf regression"), strings.Join(named, ", "))
}
