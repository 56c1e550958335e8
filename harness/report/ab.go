package report

import (
	"fmt"
	"io"
	"strings"
)

// AB is an A/B run's judgement (--ab, harness/ab): every selected case
// ran on stack A (what the run loads without --ab) and on stack B, in
// alternating worlds, Blocks times each; B is judged against A. The run's
// results are A's (gated as any run's are); this section carries both
// stacks and every pair. Absent from every run without --ab.
type AB struct {
	// Spec is --ab as given: a library file or folder, same, or
	// inject:RULES.
	Spec   string  `json:"spec"`
	Blocks int     `json:"blocks"`
	A      ABStack `json:"a"`
	B      ABStack `json:"b"`
	// Pairs is one row per case, in the run's order.
	Pairs []ABPair `json:"pairs"`
	// Regressions and Improvements count the cases whose outcome differs
	// (B worse, B better); PerfRegressions and PerfImprovements the paired
	// metrics whose confidence interval lies wholly beyond the minimum
	// effect.
	Regressions      int `json:"regressions"`
	Improvements     int `json:"improvements"`
	PerfRegressions  int `json:"perf_regressions"`
	PerfImprovements int `json:"perf_improvements"`
}

// ABStack is one side's stack: the library its ranks loaded (empty: the
// backend's own search), the injector rules its ranks ran under, and what
// its ranks reported of the driver (the stack check's facts).
type ABStack struct {
	Side    string   `json:"side"` // "A" or "B"
	Library string   `json:"library,omitempty"`
	Inject  []string `json:"inject,omitempty"`
	Driver  string   `json:"driver,omitempty"`
	Runtime string   `json:"runtime,omitempty"`
	Device  string   `json:"device,omitempty"`
}

// Line is the stack in one phrase: "A: driver 550.54.15 (libcuda.so.1)".
func (s ABStack) Line() string {
	var parts []string
	if s.Driver != "" {
		parts = append(parts, "driver "+s.Driver)
	}
	if s.Runtime != "" {
		parts = append(parts, "runtime "+s.Runtime)
	}
	if s.Library != "" {
		parts = append(parts, s.Library)
	}
	if len(s.Inject) > 0 {
		parts = append(parts, "inject "+strings.Join(s.Inject, ","))
	}
	if len(parts) == 0 {
		parts = append(parts, "as loaded")
	}
	return s.Side + ": " + strings.Join(parts, ", ")
}

// AB pair changes: how B's outcome compares with A's.
const (
	ABSame        = "same"
	ABRegression  = "regression"
	ABImprovement = "improvement"
)

// ABPair is one case on both stacks.
type ABPair struct {
	ID string `json:"id"`
	A  ABSide `json:"a"`
	B  ABSide `json:"b"`
	// Change is ABSame, ABRegression (B fails, crashes, times out or is
	// not supported where A met its expected outcome, or worse than A) or
	// ABImprovement (the reverse).
	Change  string     `json:"change"`
	Metrics []ABMetric `json:"metrics,omitempty"`
	// Repro runs the case on both stacks (the case's repro with --ab).
	Repro string `json:"repro,omitempty"`
}

// ABSide is one side's outcome of a case over its blocks: the worst of
// them (Outcomes lists each block's, in block order).
type ABSide struct {
	Outcome      Outcome   `json:"outcome"`
	Outcomes     []Outcome `json:"outcomes"`
	Detail       string    `json:"detail,omitempty"`
	NotSupported string    `json:"not_supported,omitempty"`
}

// AB metric verdicts.
const (
	ABNoDifference    = "no-difference"
	ABPerfRegression  = "perf-regression"
	ABPerfImprovement = "perf-improvement"
	// ABUnjudged: fewer than two blocks with the metric on both sides.
	ABUnjudged = "unjudged"
	// ABNotGated: paired and shown, not judged: a metric the perf gate
	// does not gate either (perf.Gated: the host backend's).
	ABNotGated = "not-gated"
)

// ABMetric is one metric paired per block: A's and B's medians of each
// block, their ratio B/A, the mean change (B against A, as a fraction, the
// geometric mean of the ratios less one) with its confidence interval, and
// the verdict against the minimum effect (Tolerance, the perf gate's
// family floor).
type ABMetric struct {
	Name      string    `json:"name"`
	Unit      string    `json:"unit"`
	Better    Direction `json:"better,omitempty"`
	A         []float64 `json:"a"`
	B         []float64 `json:"b"`
	Ratios    []float64 `json:"ratios"`
	Change    float64   `json:"change"`
	Low       float64   `json:"ci_low"`
	High      float64   `json:"ci_high"`
	Level     float64   `json:"ci_level"`
	Family    string    `json:"family"`
	Tolerance float64   `json:"tolerance"`
	Verdict   string    `json:"verdict"`
}

// Words is the metric's change for a line: "copy_ce_read -18% ±2%".
func (m ABMetric) Words() string {
	half := (m.High - m.Low) / 2
	return fmt.Sprintf("%s %+.0f%% ±%.0f%%", m.Name, m.Change*100, half*100)
}

// Differs reports whether B differs from A anywhere: an outcome or a
// paired metric beyond its minimum effect either way.
func (a *AB) Differs() bool {
	return a != nil && a.Regressions+a.Improvements+a.PerfRegressions+a.PerfImprovements > 0
}

// Fails reports whether B is worse than A anywhere (the run then fails).
func (a *AB) Fails() bool { return a != nil && a.Regressions+a.PerfRegressions > 0 }

// Words is the A/B judgement for the verdict line: "B: 3 regressions, 2
// perf regressions (copy_ce_read -18% ±2%)", or "B: no difference from A".
func (a *AB) Words() string {
	if !a.Differs() {
		return fmt.Sprintf("B: no difference from A (%s over %d blocks)", plural(len(a.Pairs), "case"), a.Blocks)
	}
	var parts []string
	var named []string
	for _, p := range a.Pairs {
		if p.Change == ABRegression && len(named) < 3 {
			named = append(named, p.ID+" "+string(p.A.Outcome)+"→"+string(p.B.Outcome))
		}
	}
	if a.Regressions > 0 {
		parts = append(parts, plural(a.Regressions, "regression")+" ("+strings.Join(named, ", ")+")")
	}
	if a.Improvements > 0 {
		parts = append(parts, plural(a.Improvements, "improvement"))
	}
	var perf, better []string
	for _, p := range a.Pairs {
		for _, m := range p.Metrics {
			switch {
			case m.Verdict == ABPerfRegression && len(perf) < 3:
				perf = append(perf, p.ID+" "+m.Words())
			case m.Verdict == ABPerfImprovement && len(better) < 3:
				better = append(better, p.ID+" "+m.Words())
			}
		}
	}
	if a.PerfRegressions > 0 {
		parts = append(parts, plural(a.PerfRegressions, "perf regression")+" ("+strings.Join(perf, ", ")+")")
	}
	if a.PerfImprovements > 0 {
		parts = append(parts, plural(a.PerfImprovements, "perf improvement")+" ("+strings.Join(better, ", ")+")")
	}
	return "B: " + strings.Join(parts, ", ")
}

// ApplyAB folds an A/B judgement into the run's summary: a B worse than A
// fails the run (exit 1) whatever A's own verdict, and the verdict line
// names side B and its differences. A run already interrupted or without
// a result keeps its verdict; the line still says what B did.
func ApplyAB(s *Summary, a *AB) {
	if s == nil || a == nil {
		return
	}
	if a.Fails() && s.Verdict == VerdictPass {
		s.Verdict, s.ExitStatus = VerdictFail, ExitFail
		s.Line = strings.Replace(s.Line, "p2patomics: PASS", "p2patomics: FAIL", 1)
	}
	s.Line += " — A/B " + a.Words()
}

// WriteAB writes an A/B run's section of summary.txt: both stacks, the
// judgement in words, then one line per case whose outcome differs or
// with a paired metric beyond its minimum effect (A's outcome, B's, each
// such metric's change and interval) and its repro on both stacks.
// Nothing without --ab.
func WriteAB(w io.Writer, a *AB) {
	if a == nil {
		return
	}
	fmt.Fprintf(w, "\nA/B: --ab=%s, %d blocks per case\n  %s\n  %s\n  %s\n", a.Spec, a.Blocks, a.A.Line(), a.B.Line(), a.Words())
	for _, p := range a.Pairs {
		var ms []string
		for _, m := range p.Metrics {
			if m.Verdict == ABPerfRegression || m.Verdict == ABPerfImprovement {
				ms = append(ms, fmt.Sprintf("%s [%+.1f%%, %+.1f%%] %s", m.Words(), m.Low*100, m.High*100, m.Verdict))
			}
		}
		if p.Change == ABSame && len(ms) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s: A %s, B %s (%s)", p.ID, p.A.Outcome, p.B.Outcome, p.Change)
		if len(ms) > 0 {
			fmt.Fprintf(w, "; %s", strings.Join(ms, "; "))
		}
		if p.Repro != "" {
			fmt.Fprintf(w, "\n    repro (both stacks): %s", p.Repro)
		}
		fmt.Fprintln(w)
	}
}
