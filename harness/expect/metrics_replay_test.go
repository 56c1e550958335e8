package expect

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// committedRuns are the seven healthy 1×H200 runs (each on another GPU)
// the perf gate is replayed on, as testdata/runs holds them (gzipped from
// results/, which tests never read).
var committedRuns = []string{
	"results.json.gz", "run-54c2e67/results.json.gz", "run-83641a1/results.json.gz", "run-8e5cbb8/results.json.gz",
	"run-a4fbedb/results.json.gz", "run-d20e28f/results.json.gz", "onegpu-dev/results.json.gz",
}

func loadCommitted(t *testing.T) []*report.Report {
	t.Helper()
	var reps []*report.Report
	for _, p := range committedRuns {
		rep, err := report.Read(filepath.Join("..", "..", "testdata", "runs", "h200x1-580.159.04", p))
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	return reps
}

// plant is a slowdown applied to a copy of a run: every metric sel picks
// has its samples, median, min and max multiplied by f.
type plant struct {
	name string
	sel  func(id, metric string) bool
	f    float64
	// must: the metrics that must be named perf-regression every time.
	must func(l perf.Line) bool
	// least: how many metrics must be named (the design's promise: all 15
	// copy-engine copies at ÷2, the 12 one-direction ones at ÷1.2).
	least int
}

func scaled(rep *report.Report, p plant) []report.Result {
	out := make([]report.Result, len(rep.Results))
	for i, r := range rep.Results {
		ms := map[string]report.Metric{}
		for name, m := range r.Metrics {
			if p.sel != nil && p.sel(r.ID(), name) {
				m.Median, m.Min, m.Max = m.Median*p.f, m.Min*p.f, m.Max*p.f
				s := make([]float64, len(m.Samples))
				for j, v := range m.Samples {
					s[j] = v * p.f
				}
				m.Samples = s
			}
			ms[name] = m
		}
		r.Metrics = ms
		out[i] = r
	}
	return out
}

func ce(_, m string) bool        { return strings.HasPrefix(m, "bw_ce_") }
func atomic(_, m string) bool    { return m == "atomic_rate" }
func roundTrip(_, m string) bool { return strings.HasPrefix(m, "rtt_") }

// TestPerfGateCommittedRuns replays the perf gate on the committed runs:
// a perf.txt from every 3 of the 7, judged on each of the other 4 (140
// combinations), offline (no reruns). Healthy: no perf-regression. Planted
// slowdowns: every combination has a perf-regression, naming at least the
// metrics the design promises to see.
func TestPerfGateCommittedRuns(t *testing.T) {
	reps := loadCommitted(t)
	plants := []plant{
		{name: "healthy"},
		{name: "copy engine ÷2", sel: ce, f: 0.5, must: func(l perf.Line) bool { return strings.HasPrefix(l.Metric, "bw_ce_") }, least: 15},
		{name: "copy engine ÷1.2", sel: ce, f: 1 / 1.2, must: func(l perf.Line) bool { return strings.HasPrefix(l.Metric, "bw_ce_") && !l.Insensitive() }, least: 12},
		{name: "atomic rate ÷2", sel: atomic, f: 0.5, must: func(l perf.Line) bool { return l.Metric == "atomic_rate" && l.Family != perf.AtomicSpread.Name }, least: 18},
		{name: "round trip ×2", sel: roundTrip, f: 2, must: func(l perf.Line) bool { return strings.HasPrefix(l.Metric, "rtt_") }, least: 9},
	}
	counts := map[string]int{}
	for a := 0; a < len(reps); a++ {
		for b := a + 1; b < len(reps); b++ {
			for c := b + 1; c < len(reps); c++ {
				base := []*report.Report{reps[a], reps[b], reps[c]}
				f, err := perf.Record(base, []string{committedRuns[a], committedRuns[b], committedRuns[c]}, "")
				if err != nil {
					t.Fatal(err)
				}
				for h := range reps {
					if h == a || h == b || h == c {
						continue
					}
					for _, p := range plants {
						counts[p.name] += replayOne(t, f, reps[h], p, fmt.Sprintf("%s vs %d,%d,%d", committedRuns[h], a, b, c))
					}
				}
			}
		}
	}
	t.Logf("combinations failing: %v", counts)
}

// replayOne judges one planted held-out run; 1 when it failed the gate.
func replayOne(t *testing.T, f *perf.File, held *report.Report, p plant, what string) int {
	t.Helper()
	ps := JudgeMetrics(f, scaled(held, p), nil, "replay")
	regressed := map[string]bool{}
	for _, fd := range ps.Failing() {
		regressed[fd.ID+" "+fd.Metric] = true
	}
	if p.sel == nil {
		if len(regressed) > 0 {
			t.Errorf("healthy %s: %d perf failures, first %s", what, len(regressed), ps.Failing()[0].Named())
			return 1
		}
		return 0
	}
	if len(regressed) == 0 {
		t.Errorf("%s %s: gate passed", p.name, what)
		return 0
	}
	named := 0
	for _, l := range f.Lines {
		if _, ran := findIn(held, l.ID); ran && p.must(l) {
			if !regressed[l.Key()] {
				t.Errorf("%s %s: %s not named", p.name, what, l.Key())
			}
			named++
		}
	}
	if named < p.least {
		t.Errorf("%s %s: %d metrics named, want at least %d", p.name, what, named, p.least)
	}
	return 1
}

func findIn(rep *report.Report, id string) (report.Result, bool) {
	for i := len(rep.Results) - 1; i >= 0; i-- {
		if rep.Results[i].ID() == id {
			return rep.Results[i], true
		}
	}
	return report.Result{}, false
}

// A line whose case did not pass is left to the correctness verdict: the
// copy-times:2 run on the H200 failed its 15 copy cases on the physics
// floor and, judged for speed as well, listed them again as perf
// regressions "unconfirmed: no re-measurement recorded" beside "rerun
// fail". The same halved copies on cases that passed are still named.
func TestFailedCaseLeftToCorrectness(t *testing.T) {
	reps := loadCommitted(t)
	f, err := perf.Record(reps[:3], committedRuns[:3], "")
	if err != nil {
		t.Fatal(err)
	}
	halved := scaled(reps[3], plant{sel: ce, f: 0.5})
	named := len(JudgeMetrics(f, halved, nil, "x").Failing())
	failed := 0
	for i, r := range halved {
		if _, ok := r.Metrics["bw_ce_write_gbps"]; ok && r.Outcome == report.Pass {
			halved[i].Outcome = report.Fail
			failed++
		}
	}
	if named == 0 || failed == 0 {
		t.Fatalf("the plant named %d findings over %d copy cases", named, failed)
	}
	for _, fd := range JudgeMetrics(f, halved, nil, "x").Findings {
		for _, r := range halved {
			if r.ID() == fd.ID && r.Outcome != report.Pass {
				t.Errorf("%s failed and was judged for speed too: %s", fd.ID, fd.Named())
			}
		}
	}
}
