package expect

import (
	"fmt"
	"path/filepath"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// PerfFile is the perf baseline's name in an expectation folder
// (perf.FileName): a limit per gated metric, recorded from several runs.
const PerfFile = perf.FileName

// loadPerf reads a perf.txt into s; its "# stack:" header joins the
// others, so a perf baseline of another stack is refused like the rest.
func (s *Set) loadPerf(path string) error {
	b, err := report.ReadRegular(path, 16<<20)
	if err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	f, err := perf.Parse(path, b)
	if err != nil {
		return err
	}
	if s.Perf != nil {
		return fmt.Errorf("%s: a second perf baseline (the first is %s): gate against one", path, s.PerfSource)
	}
	if f.Stack != "" {
		if err := s.addStack(path+":1", f.Stack); err != nil {
			return err
		}
	}
	s.Sources = append(s.Sources, path)
	s.Perf, s.PerfSource = f, path
	return nil
}

// judgePerf adds the perf gate to a judged run: every perf.txt line is
// judged (JudgeMetrics) with the re-measurements the results carry
// (Result.PerfReruns: the suite's, recorded, so a re-render judges as the
// run did), the findings go into the summary, and a perf-regression or
// perf-missing fails the gate.
func judgePerf(s *Set, judged []report.Result, g *report.Gate, sum *report.Summary) {
	if s == nil || s.Perf == nil {
		return
	}
	p := JudgeMetrics(s.Perf, judged, PerfReruns(judged), s.PerfSource)
	sum.AddPerf(p)
	if g == nil {
		return
	}
	for _, f := range p.Failing() {
		g.Pass = false
		g.Reasons = append(g.Reasons, fmt.Sprintf("%s: %s; %s", f.Verdict, f.Named(), f.Detail))
	}
}

// checkPerfScope refuses a perf baseline recorded on other GPUs (a
// machine scope) or another SKU, unless allow (--allow-stack-mismatch).
func checkPerfScope(s *Set, env report.Environment, allow bool) error {
	if s == nil || s.Perf == nil || allow {
		return nil
	}
	return perf.CheckScope(s.Perf, env)
}

// WritePerf records dir/perf.txt from runs made in fresh worlds (names
// say which, in its header): perf.Record's rule, under the stack header
// of the first run; every run must be of that stack. Fewer than
// perf.MinRuns runs is perf.ErrTooFewRuns, and nothing is written.
func WritePerf(dir string, runs []*report.Report, names []string) (*perf.File, error) {
	return WritePerfWith(dir, runs, names, perf.Recording{})
}

// WritePerfWith is WritePerf under rc's metric predicate and scope
// (perf.Recording; the zero value is WritePerf's).
func WritePerfWith(dir string, runs []*report.Report, names []string, rc perf.Recording) (*perf.File, error) {
	if len(runs) == 0 {
		return nil, perf.ErrTooFewRuns
	}
	header, err := stackHeader(runs[0].Environment)
	if err != nil {
		return nil, err
	}
	stack := strings.TrimSpace(strings.TrimPrefix(header, "# stack:"))
	if stack != "" {
		want, err := ParseStack(stack)
		if err != nil {
			return nil, err
		}
		for i, r := range runs {
			if err := CheckStack(want, r.Environment, false); err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	f, err := rc.Record(runs, names, stack)
	if err != nil {
		return nil, err
	}
	return f, writeAtomic(filepath.Join(dir, PerfFile), perf.Format(f))
}

// PerfReruns is JudgeMetrics's rerun map (Line.Key → medians) from the
// re-measurements results carry; the last result of an id wins, as in
// JudgeMetrics.
func PerfReruns(results []report.Result) map[string][]float64 {
	last := map[string]report.Result{}
	for _, r := range results {
		last[r.ID()] = r
	}
	out := map[string][]float64{}
	for id, r := range last {
		for metric, meds := range r.PerfReruns {
			out[id+" "+metric] = meds
		}
	}
	return out
}

// PerfFlagged is the metrics of one finished result that the perf gate
// would call a regression before any re-measurement (JudgeMetrics offline):
// the ones the suite re-measures in fresh worlds. A perf-unstable metric
// (its samples straddle the limit) is not flagged: re-measuring cannot
// make one mode's median of it. nil when s has no perf.txt.
func PerfFlagged(s *Set, r report.Result) []string {
	if s == nil || s.Perf == nil || r.Outcome != report.Pass {
		return nil
	}
	var out []string
	for _, f := range JudgeMetrics(s.Perf, []report.Result{r}, nil, "").Findings {
		if f.Verdict == report.PerfRegression {
			out = append(out, f.Metric)
		}
	}
	return out
}
