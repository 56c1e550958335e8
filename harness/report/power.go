package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Power is what a run could have caught (harness/power, issue 52): per
// gated perf family the smallest regression flagged with 95 % power, the
// rarest litmus weak-outcome rate seen with 99.9 % confidence, the counter
// and pattern families' coverage, and what fell short of the --power
// target. summary.power in results.json; absent in records made before it.
type Power struct {
	// Target is --power as given ("" for today's sizes: power stated,
	// nothing asked).
	Target string `json:"target,omitempty"`
	// Perf is one row per gated perf family.
	Perf []PerfPower `json:"perf,omitempty"`
	// Litmus is over every litmus case that ran.
	Litmus *LitmusPower `json:"litmus,omitempty"`
	// Coverage is how many of the counter and pattern cases ran.
	Coverage []Coverage `json:"coverage,omitempty"`
	// Short says each way the run fell short of Target.
	Short []string `json:"short,omitempty"`
}

// PerfPower is one perf family's power: the smallest regression (a
// fraction of this run's median) each of its Metrics gated lines flags
// with 95 % power, the largest of them (Weakest's).
type PerfPower struct {
	Family     string  `json:"family"`
	Metrics    int     `json:"metrics"`
	Regression float64 `json:"regression"`
	Weakest    string  `json:"weakest"`
}

// LitmusPower: every one of Cases litmus cases would have shown a weak
// outcome as rare as SeenPerMillion (per million instances) at least once
// with 99.9 % confidence; Weakest ran the fewest instances (Instances).
// RarestKilledPerMillion is the rarest weak rate a killed mutant showed.
type LitmusPower struct {
	Cases                  int     `json:"cases"`
	SeenPerMillion         float64 `json:"seen_per_million"`
	Weakest                string  `json:"weakest"`
	Instances              int64   `json:"instances"`
	RarestKilledPerMillion float64 `json:"rarest_killed_per_million,omitempty"`
}

// Coverage is how many of a family's planned cases ran.
type Coverage struct {
	Family  string `json:"family"`
	Ran     int    `json:"ran"`
	Planned int    `json:"planned"`
}

// MarkPower states the run's power on the summary and its line.
func (s *Summary) MarkPower(p *Power) {
	s.Power = p
	s.Line = s.line()
}

// Percent is a fraction as the line says it ("12.5 %").
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + " %"
}

// Rate is a rate per million as the line says it (three digits).
func Rate(r float64) string { return strconv.FormatFloat(r, 'g', 3, 64) }

// line is the power as the verdict line says it: "; power: ..." and, when
// short of the target, "; SHORT of --power=...: ...".
func (p *Power) line() string {
	if p == nil {
		return ""
	}
	var parts []string
	if len(p.Perf) > 0 {
		lo, hi, worst := math.Inf(1), -1.0, ""
		for _, f := range p.Perf {
			lo = min(lo, f.Regression)
			if f.Regression > hi {
				hi, worst = f.Regression, f.Family
			}
		}
		parts = append(parts, fmt.Sprintf("perf flags %s-%s at 95 %% (widest: %s)", Percent(lo), Percent(hi), worst))
	}
	if l := p.Litmus; l != nil {
		parts = append(parts, fmt.Sprintf("litmus sees %s/M at 99.9 %%", Rate(l.SeenPerMillion)))
	}
	for _, c := range p.Coverage {
		parts = append(parts, fmt.Sprintf("%ss %d/%d", c.Family, c.Ran, c.Planned))
	}
	s := ""
	if len(parts) > 0 {
		s = "; power: " + strings.Join(parts, ", ")
	}
	if len(p.Short) > 0 {
		s += fmt.Sprintf("; SHORT of --power=%s: %s", p.Target, strings.Join(p.Short, "; "))
	}
	return s
}
