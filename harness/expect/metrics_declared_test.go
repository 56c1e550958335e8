package expect

import (
	"strings"
	"testing"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// resent is a metric whose unit the old unit rule called higher-is-better
// ("/s": a rate) but which is declared lower: bytes a link had to re-send
// per second. The gate must read the declaration, never the unit.
func resent(median float64, better report.Direction) report.Result {
	s := []float64{median * 0.99, median, median * 1.01}
	return report.Result{Case: report.ParseCase("cuda.vmm.perf.resent.r0r1", nil), Labels: []string{"perf"}, Outcome: report.Pass,
		Metrics: map[string]report.Metric{"resent_gbps": {Unit: "GB/s", Better: better, Median: median, Min: s[0], Max: s[2], N: 3, Samples: s}}}
}

// TestDeclaredDirectionRecordsAndJudges: a GB/s metric declared
// lower-is-better is recorded with a "<=" limit above its band, the
// perf.txt line reads back, and a run where it doubled is a
// perf-regression, one where it fell far a perf-improvement. The unit
// rule (perf.Direction before directions were declared) recorded ">=" and
// called the doubling an improvement.
func TestDeclaredDirectionRecordsAndJudges(t *testing.T) {
	var runs []*report.Report
	for _, m := range []float64{10, 11, 12} {
		runs = append(runs, &report.Report{Results: []report.Result{resent(m, report.Lower)}})
	}
	f, err := perf.Recording{Scope: "sku test"}.Record(runs, []string{"a", "b", "c"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Lines) != 1 || f.Lines[0].Op != "<=" || f.Lines[0].Limit < 12 {
		t.Fatalf("recorded %+v, want one <= line with its limit above the band's 12", f.Lines)
	}
	back, err := perf.Parse("perf.txt", perf.Format(f))
	if err != nil {
		t.Fatalf("the recorded line does not read back: %v\n%s", err, perf.Format(f))
	}
	verdict := func(r report.Result) report.Verdict {
		p := JudgeMetrics(back, []report.Result{r}, nil, "perf.txt")
		if len(p.Findings) == 0 {
			return report.InBand
		}
		return p.Findings[0].Verdict
	}
	for _, c := range []struct {
		r    report.Result
		want report.Verdict
	}{
		{resent(24, report.Lower), report.PerfRegression},
		{resent(1, report.Lower), report.PerfImprovement},
		{resent(11, report.Lower), report.InBand},
	} {
		if got := verdict(c.r); got != c.want {
			t.Errorf("declared lower, median %v: %s, want %s", c.r.Metrics["resent_gbps"].Median, got, c.want)
		}
	}
	// Declared the other way now: the baseline no longer measures it.
	p := JudgeMetrics(back, []report.Result{resent(11, report.Higher)}, nil, "perf.txt")
	if len(p.Findings) != 1 || p.Findings[0].Verdict != report.PerfMissing || !strings.Contains(p.Findings[0].Detail, "declared higher-is-better now") {
		t.Errorf("a direction changed since recording: %+v, want perf-missing naming it", p.Findings)
	}
}

// TestOfflineModesReadTheDeclaration: the two-run mode (p2pcompare) and
// the fleet mode (p2pfleet) call a rise of a GB/s metric declared lower
// worse, and of one recorded without a declaration (a committed run)
// better, by the unit rule's fallback.
func TestOfflineModesReadTheDeclaration(t *testing.T) {
	for _, c := range []struct {
		better report.Direction
		want   report.Verdict
		bad    bool
	}{{report.Lower, report.PerfRegression, true}, {"", report.PerfImprovement, false}} {
		o, n := resent(10, c.better).Metrics["resent_gbps"], resent(20, c.better).Metrics["resent_gbps"]
		o.Samples, n.Samples = nil, nil // judged by their ranges: three samples a side cannot reach p < 0.05
		if got := CompareRuns(o, n, 0.05, 0.05); got.Verdict != c.want || got.Judged != "ranges" {
			t.Errorf("two runs, declared %q, 10 → 20 GB/s: %+v, want %s", c.better, got, c.want)
		}
		var nodes []NodeValue
		for i, v := range []float64{10, 10.1, 9.9, 10, 20} {
			nodes = append(nodes, NodeValue{Node: string(rune('a' + i)), Median: v, Min: v - 0.05, Max: v + 0.05, N: 5})
		}
		Outliers(nodes, n.Direction(), OutlierRel)
		if nodes[4].Outlier != "high" || nodes[4].Bad != c.bad {
			t.Errorf("fleet, declared %q, one node at 20 GB/s among 10: %+v, want a high outlier, bad=%v", c.better, nodes[4], c.bad)
		}
	}
}
