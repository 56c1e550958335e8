package htmlreport

import (
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// TestRenderAB: an A/B run's page has the side-by-side table: both
// stacks, the case B failed with each side's outcome and the repro on
// both stacks, the copy metric B halved with its interval and minimum
// effect; a case the same on both sides without metrics is counted, not
// listed. A run without --ab has no such section.
func TestRenderAB(t *testing.T) {
	rep := sample()
	rep.AB = &report.AB{Spec: "/opt/b", Blocks: 3,
		A: report.ABStack{Side: "A", Driver: "580.159.04"},
		B: report.ABStack{Side: "B", Driver: "580.159.04", Library: "/opt/b/libcuda.so.1"},
		Pairs: []report.ABPair{
			{ID: "cuda.vmm.counter.add_u64_relaxed_sys", Change: report.ABRegression,
				A:     report.ABSide{Outcome: report.Pass, Outcomes: []report.Outcome{report.Pass, report.Pass, report.Pass}},
				B:     report.ABSide{Outcome: report.Fail, Outcomes: []report.Outcome{report.Pass, report.Fail, report.Pass}, Detail: "lost updates"},
				Repro: "./specs.test --case=cuda.vmm.counter.add_u64_relaxed_sys --ab=/opt/b"},
			{ID: "cuda.vmm.perf.copy_ce_write.r0r1", Change: report.ABSame,
				A: report.ABSide{Outcome: report.Pass}, B: report.ABSide{Outcome: report.Pass},
				Metrics: []report.ABMetric{{Name: "bw_ce_write_gbps", Change: -0.5, Low: -0.52, High: -0.48, Tolerance: 0.08, Verdict: report.ABPerfRegression}}},
			{ID: "cuda.vmm.info", Change: report.ABSame, A: report.ABSide{Outcome: report.Pass}, B: report.ABSide{Outcome: report.Pass}},
		}, Regressions: 1, PerfRegressions: 1}
	page := render(t, rep, "")
	for _, want := range []string{
		`<h2 id="ab">A/B: stack B against stack A</h2>`,
		`<td>B</td><td>driver 580.159.04, /opt/b/libcuda.so.1</td>`,
		`<tr class="ab regression"><td>cuda.vmm.counter.add_u64_relaxed_sys</td><td>pass</td><td>fail <small>(pass, fail, pass)</small><br><small>lost updates</small></td><td>regression</td>`,
		`--ab=/opt/b</code>`,
		`<tr class="ab perf-regression"><td>cuda.vmm.perf.copy_ce_write.r0r1</td>`,
		`bw_ce_write_gbps -50.0% [-52.0%, -48.0%] (±8%): perf-regression`,
		`<p>1 more case(s) had the same outcome on both stacks and no paired metric.</p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(render(t, sample(), ""), `id="ab"`) {
		t.Error("a run without --ab has an A/B section")
	}
}
