package suite

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// PerfReruns is how many times a case with a flagged perf metric is
// re-measured, each in a fresh world, before the perf gate calls it: the
// median of the first pass and these decides (docs/GATING.md, "The perf
// gate"). Fixed before any rerun is seen, so a slow metric is never
// retried until it passes.
const PerfReruns = 2

// recording is how --perf-runs picks the cases it measures again and
// writes perf.txt: the zero value is the perf gate's own (perf.Gated, the
// scope of the run's GPU UUIDs). Only a test sets it (export_test.go), to
// drive the writing path on a machine whose host metrics are not gated.
var recording perf.Recording

func gatedMetric(r report.Result, m report.Metric) bool {
	if recording.Gated != nil {
		return recording.Gated(r, m)
	}
	return perf.Gated(r, m)
}

// pendingPerf is a case with some metrics to measure again: a passed perf
// case whose median is past its perf.txt limit (the gate), or a gated
// case of a --perf-runs recording.
type pendingPerf struct {
	c       *harness.Case
	metrics []string
}

func (p pendingPerf) caseOf() *harness.Case { return p.c }

// againFunc runs one kind's cases once more, in a world fresh for the
// round, and records each case's result as keep makes it from the new
// run and the recorded result (a perf pass's CaseDone); false when the run
// was interrupted or the machine stopped being trustworthy (the
// executor's again).
type againFunc func(ps []pendingPerf, keep func(p pendingPerf, again, recorded report.Result) report.Result) bool

// perfWork is the run's perf work after the main pass: the perf gate's
// re-measurements of flagged cases, and --perf-runs' extra passes with
// the perf.txt they record.
type perfWork struct {
	mu      sync.Mutex
	pending []pendingPerf
	// passes are --perf-runs' extra passes, each the results of the
	// gated perf cases measured again in fresh worlds, by case id.
	passes []map[string]report.Result
	// ungated says why there was nothing to measure (not an error);
	// stopped, why the passes did not finish (perf.txt refused).
	ungated, stopped string
}

// flag queues res's case for re-measurement when the perf gate flags any
// of its metrics (expect.PerfFlagged).
func (w *perfWork) flag(gate *expect.Set, c *harness.Case, res report.Result) {
	flagged := expect.PerfFlagged(gate, res)
	if len(flagged) == 0 {
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, pendingPerf{c: c, metrics: flagged})
	w.mu.Unlock()
}

// remeasure re-measures every case with a flagged perf metric PerfReruns
// times, after the last spec and the correctness reruns. Each round starts
// every kind's runner afresh (one new world per backend and kind per
// round, as the correctness reruns do), so each re-measurement is in a
// world neither the first pass nor another round used. The medians join
// the case's result (Result.PerfReruns); the perf gate judges them with
// the first pass's (expect.JudgeMetrics): perf-regression when the median of all is
// still past the limit, perf-noise when not. Both are reported.
func (w *perfWork) remeasure(out io.Writer, p *Plan, l *ledger, again againFunc) {
	w.mu.Lock()
	pending := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(out, "re-measuring %d perf case(s) with a metric past its perf.txt limit, %d times each, each in a fresh world\n", len(pending), PerfReruns)
	for round := 1; round <= PerfReruns; round++ {
		for _, ps := range inGroups(p, pending, pendingPerf.caseOf) {
			if !again(ps, keepReruns) {
				return
			}
		}
	}
	for _, pp := range pending {
		res, _ := l.result(pp.c.ID)
		for _, m := range pp.metrics {
			fmt.Fprintf(out, "perf rerun %s %s: %s → reruns %s\n", pp.c.ID, m, fmtMedian(res.Metrics[m].Median), fmtMedians(res.PerfReruns[m]))
		}
	}
}

// keepReruns is the case's recorded result with again's medians of p's
// metrics added (Result.PerfReruns).
func keepReruns(p pendingPerf, again, recorded report.Result) report.Result {
	recorded.PerfReruns = addReruns(recorded, again, p.metrics)
	return recorded
}

// addReruns is res.PerfReruns with again's median of each metric added
// (copied: the map is shared with earlier snapshots of the result).
func addReruns(res, again report.Result, metrics []string) map[string][]float64 {
	out := map[string][]float64{}
	for k, v := range res.PerfReruns {
		out[k] = append([]float64(nil), v...)
	}
	for _, name := range metrics {
		m, ok := again.Metrics[name]
		if again.Outcome != report.Pass || !ok || m.Unit != res.Metrics[name].Unit {
			continue
		}
		out[name] = append(out[name], m.Median)
	}
	return out
}

func fmtMedian(v float64) string { return fmt.Sprintf("%.4g", v) }

func fmtMedians(vs []float64) string {
	if len(vs) == 0 {
		return "none (no rerun passed with the metric)"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmtMedian(v)
	}
	return strings.Join(s, ", ")
}

// extraPasses is --perf-runs=N with --update-expectations: after the main
// pass, every case of the selection with a gated metric (perf.Gated) runs
// N-1 more times, each pass in fresh worlds (again: the kind's runner
// closed first, as the perf gate's re-measurements are). Each pass's
// results are kept for perf.txt (record); each extra median also joins
// the case's result as evidence (Result.PerfReruns), which no verdict
// reads while recording: the correctness baseline and the run's verdict
// are the main pass's alone.
func (w *perfWork) extraPasses(out io.Writer, p *Plan, l *ledger, again againFunc) {
	n := p.Opts.PerfRuns
	if n < perf.MinRuns || !p.Opts.UpdateExpectations {
		return
	}
	ps := gatedCases(p, l)
	if len(ps) == 0 {
		w.ungated = "no case of this run has a gated perf metric (perf.Gated: the perf cases of GPU backends; the host backend's are not gated)"
		return
	}
	fmt.Fprintf(out, "--perf-runs=%d: measuring %d perf case(s) %d more times for perf.txt, each pass in fresh worlds\n", n, len(ps), n-1)
	for pass := 2; pass <= n; pass++ {
		got := map[string]report.Result{}
		keep := func(pp pendingPerf, again, recorded report.Result) report.Result {
			got[pp.c.ID] = again
			if again.Outcome != report.Pass {
				// Not judged (the verdict is the main pass's), but said.
				fmt.Fprintf(out, "--perf-runs pass %d: %s %s (left out of perf.txt for this pass)\n", pass, pp.c.ID, again.Outcome)
			}
			return keepReruns(pp, again, recorded)
		}
		for _, g := range inGroups(p, ps, pendingPerf.caseOf) {
			if !again(g, keep) {
				w.stopped = fmt.Sprintf("pass %d did not finish: interrupted, or the machine stopped being trustworthy", pass)
				return
			}
		}
		w.passes = append(w.passes, got)
	}
}

// gatedCases are the planned cases whose main-pass result has a gated
// metric, in plan order, each with those metrics.
func gatedCases(p *Plan, l *ledger) []pendingPerf {
	var out []pendingPerf
	for _, c := range p.planned {
		res, ok := l.result(c.ID)
		if !ok {
			continue
		}
		var ms []string
		for _, name := range slices.Sorted(maps.Keys(res.Metrics)) {
			if gatedMetric(res, res.Metrics[name]) {
				ms = append(ms, name)
			}
		}
		if len(ms) > 0 {
			out = append(out, pendingPerf{c: c, metrics: ms})
		}
	}
	return out
}

// record writes perf.txt beside cases.txt from the main pass (rep) and the
// extra passes, each a report of the same environment holding its pass's
// results: the exit status it adds (0 written or nothing to record, 1 when
// the passes or the record failed).
func (w *perfWork) record(out io.Writer, p *Plan, rep *report.Report) int {
	if p.Opts.PerfRuns < perf.MinRuns {
		return 0
	}
	dir := p.updateDir()
	if w.ungated != "" {
		fmt.Fprintf(out, "--perf-runs: perf.txt not written: %s\n", w.ungated)
		return 0
	}
	if len(w.passes) != p.Opts.PerfRuns-1 {
		why := w.stopped
		if why == "" {
			why = "the extra passes did not run"
		}
		fmt.Fprintf(os.Stderr, "p2patomics: --perf-runs: perf.txt not written: %d of %d passes ran (%s)\n", 1+len(w.passes), p.Opts.PerfRuns, why)
		return 1
	}
	runs, names := []*report.Report{rep}, []string{fmt.Sprintf("pass 1 (the --update-expectations run started %s)", rep.Environment.Started)}
	for i, got := range w.passes {
		results := make([]report.Result, 0, len(got))
		for _, id := range slices.Sorted(maps.Keys(got)) {
			results = append(results, got[id])
		}
		runs = append(runs, &report.Report{Schema: report.Schema, Environment: rep.Environment, Results: results})
		names = append(names, fmt.Sprintf("pass %d", i+2))
	}
	path, f, err := expect.WritePerfAt(dir, runs, names, recording)
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: --perf-runs: perf.txt not written: %v\n", err)
		return 1
	}
	fmt.Fprintf(out, "perf baseline of %d metrics from %d passes in fresh worlds (%s) written to %s\n", len(f.Lines), len(runs), f.Scope, path)
	return 0
}
