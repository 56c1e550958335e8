package suite

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

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

// perfPasses are --perf-runs' extra passes, each the results of the
// gated perf cases measured again in fresh worlds, by case id.
type perfPasses struct {
	passes []map[string]report.Result
	// ungated says why there was nothing to measure (not an error);
	// stopped, why the passes did not finish (perf.txt refused).
	ungated, stopped string
}

// PerfPasses is --perf-runs=N with --update-expectations: after the main
// pass, every case of the selection with a gated metric (perf.Gated) runs
// N-1 more times, each pass in fresh worlds (againGroup: the kind's
// runner closed first, as the perf gate's re-measurements are). Each
// pass's results are kept for perf.txt (recordPerf); each extra median
// also joins the case's result as evidence (Result.PerfReruns), which no
// verdict reads while recording: the correctness baseline and the run's
// verdict are the main pass's alone.
func (r *Run) PerfPasses() {
	n := r.Opts.PerfRuns
	if n < perf.MinRuns || !r.Opts.UpdateExpectations {
		return
	}
	ps := r.gatedCases()
	if len(ps) == 0 {
		r.perf.ungated = "no case of this run has a gated perf metric (perf.Gated: the perf cases of GPU backends; the host backend's are not gated)"
		return
	}
	fmt.Fprintf(r.stdout(), "--perf-runs=%d: measuring %d perf case(s) %d more times for perf.txt, each pass in fresh worlds\n", n, len(ps), n-1)
	for pass := 2; pass <= n; pass++ {
		got := map[string]report.Result{}
		keep := func(p pendingPerf, again report.Result) {
			got[p.c.ID] = again
			r.keepReruns(p, again)
			if again.Outcome != report.Pass {
				// Not judged (the verdict is the main pass's), but said.
				fmt.Fprintf(r.stdout(), "--perf-runs pass %d: %s %s (left out of perf.txt for this pass)\n", pass, p.c.ID, again.Outcome)
			}
		}
		for _, g := range r.byGroup(ps) {
			if !r.againGroup(g, keep) {
				r.perf.stopped = fmt.Sprintf("pass %d did not finish: interrupted, or the machine stopped being trustworthy", pass)
				return
			}
		}
		r.perf.passes = append(r.perf.passes, got)
	}
	r.checkpoint()
}

// gatedCases are the planned cases whose main-pass result has a gated
// metric, in plan order, each with those metrics.
func (r *Run) gatedCases() []pendingPerf {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []pendingPerf
	for _, c := range r.planned {
		res, ok := r.results[c.ID]
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

// recordPerf writes perf.txt beside cases.txt from the main pass (rep) and
// the extra passes, each a report of the same environment holding its
// pass's results: the exit status it adds (0 written or nothing to
// record, 1 when the passes or the record failed).
func (r *Run) recordPerf(rep *report.Report) int {
	if r.Opts.PerfRuns < perf.MinRuns {
		return 0
	}
	dir := r.updateDir()
	if r.perf.ungated != "" {
		fmt.Fprintf(r.stdout(), "--perf-runs: perf.txt not written: %s\n", r.perf.ungated)
		return 0
	}
	if len(r.perf.passes) != r.Opts.PerfRuns-1 {
		why := r.perf.stopped
		if why == "" {
			why = "the extra passes did not run"
		}
		fmt.Fprintf(os.Stderr, "p2patomics: --perf-runs: perf.txt not written: %d of %d passes ran (%s)\n", 1+len(r.perf.passes), r.Opts.PerfRuns, why)
		return 1
	}
	runs, names := []*report.Report{rep}, []string{fmt.Sprintf("pass 1 (the --update-expectations run started %s)", rep.Environment.Started)}
	for i, got := range r.perf.passes {
		results := make([]report.Result, 0, len(got))
		for _, id := range slices.Sorted(maps.Keys(got)) {
			results = append(results, got[id])
		}
		runs = append(runs, &report.Report{Schema: report.Schema, Environment: rep.Environment, Results: results})
		names = append(names, fmt.Sprintf("pass %d", i+2))
	}
	f, err := expect.WritePerfWith(dir, runs, names, recording)
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: --perf-runs: perf.txt not written: %v\n", err)
		return 1
	}
	fmt.Fprintf(r.stdout(), "perf baseline of %d metrics from %d passes in fresh worlds (%s) written to %s\n", len(f.Lines), len(runs), f.Scope, filepath.Join(dir, expect.PerfFile))
	return 0
}
