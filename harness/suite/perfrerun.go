package suite

import (
	"fmt"
	"strings"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// PerfReruns is how many times a case with a flagged perf metric is
// re-measured, each in a fresh world, before the perf gate calls it: the
// median of the first pass and these decides (docs/GATING.md, "The perf
// gate"). Fixed before any rerun is seen, so a slow metric is never
// retried until it passes.
const PerfReruns = 2

// pendingPerf is a passed perf case whose median of some metric is past
// its perf.txt limit, waiting for its re-measurements.
type pendingPerf struct {
	c       *harness.Case
	metrics []string
}

// flagPerf queues res's case for re-measurement when the perf gate flags
// any of its metrics (expect.PerfFlagged).
func (r *Run) flagPerf(c *harness.Case, res report.Result) {
	flagged := expect.PerfFlagged(r.gate, res)
	if len(flagged) == 0 {
		return
	}
	r.mu.Lock()
	r.perfPending = append(r.perfPending, pendingPerf{c: c, metrics: flagged})
	r.mu.Unlock()
}

// RemeasurePerf re-measures every case with a flagged perf metric
// PerfReruns times, after the last spec and the correctness reruns. Each
// round starts every kind's runner afresh (one new world per backend and
// kind per round, as the correctness reruns do), so each re-measurement is
// in a world neither the first pass nor another round used. The medians
// join the case's result (Result.PerfReruns); the perf gate judges them
// with the first pass's (perf.Judge): perf-regression when the median of
// all is still past the limit, perf-noise when not. Both are reported.
func (r *Run) RemeasurePerf() {
	r.mu.Lock()
	pending := r.perfPending
	r.perfPending = nil
	r.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(r.stdout(), "re-measuring %d perf case(s) with a metric past its perf.txt limit, %d times each, each in a fresh world\n", len(pending), PerfReruns)
	for round := 1; round <= PerfReruns; round++ {
		for _, ps := range r.byGroup(pending) {
			if !r.remeasureGroup(ps) {
				return
			}
		}
	}
	for _, p := range pending {
		r.mu.Lock()
		res := r.results[p.c.ID]
		r.mu.Unlock()
		for _, m := range p.metrics {
			fmt.Fprintf(r.stdout(), "perf rerun %s %s: %s → reruns %s\n", p.c.ID, m, fmtMedian(res.Metrics[m].Median), fmtMedians(res.PerfReruns[m]))
		}
	}
	r.checkpoint()
}

// byGroup is pending in the plan's group order, one slice per kind.
func (r *Run) byGroup(pending []pendingPerf) [][]pendingPerf {
	by := map[string][]pendingPerf{}
	var order []string
	for _, p := range pending {
		k := p.c.Backend + "." + p.c.Kind
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], p)
	}
	var out [][]pendingPerf
	for _, g := range r.Groups {
		if ps, ok := by[g.Name]; ok {
			out = append(out, ps)
			delete(by, g.Name)
		}
	}
	for _, k := range order { // a case outside the groups (never, but never lost)
		if ps, ok := by[k]; ok {
			out = append(out, ps)
		}
	}
	return out
}

// remeasureGroup runs one kind's flagged cases once more in a fresh world
// and adds each flagged metric's median to the case's result. A rerun that
// did not pass, or lacks the metric in its unit, adds nothing (the gate
// then has fewer reruns to judge by, and says how many). false when the
// run was interrupted or the machine stopped being trustworthy.
func (r *Run) remeasureGroup(ps []pendingPerf) bool {
	return r.againGroup(ps, r.keepReruns)
}

// keepReruns adds again's medians of p's metrics to the case's result
// (Result.PerfReruns); called with r.mu held.
func (r *Run) keepReruns(p pendingPerf, again report.Result) {
	res := r.results[p.c.ID]
	res.PerfReruns = addReruns(res, again, p.metrics)
	r.results[p.c.ID] = res
}

// againGroup runs one kind's cases ps once more, in a world fresh for this
// round (the kind's runner closed first), and hands each result to keep,
// with r.mu held, unless the run finished meanwhile. The perf gate's
// re-measurements and --perf-runs' extra passes both run this way. false
// when the run was interrupted or the machine stopped being trustworthy.
func (r *Run) againGroup(ps []pendingPerf, keep func(p pendingPerf, again report.Result)) bool {
	rn := r.runner(ps[0].c.Backend)
	rn.Close() // this round's fresh world for the kind
	for _, p := range ps {
		r.mu.Lock()
		stop := r.finished || rn.Abort != ""
		r.current = p.c.ID
		r.mu.Unlock()
		if stop {
			return false
		}
		again := rn.Rerun(p.c)
		r.mu.Lock()
		late := r.finished
		if !late {
			keep(p, again)
		}
		r.current = ""
		r.mu.Unlock()
		if late {
			return false
		}
	}
	return true
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
