package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// abReport is a record with an A/B section: one case that regressed on B
// and one paired metric beyond its minimum effect.
func abReport() *report.Report {
	r := goodReport()
	r.AB = &report.AB{Spec: "inject:corrupt-read:0", Blocks: 2,
		A: report.ABStack{Side: "A", Driver: "550.54.15"},
		B: report.ABStack{Side: "B", Inject: []string{"corrupt-read:0"}, Driver: "550.54.15"},
		Pairs: []report.ABPair{{ID: "host.memfd.copy.one", Change: report.ABRegression,
			A:     report.ABSide{Outcome: report.Pass, Outcomes: []report.Outcome{report.Pass, report.Pass}},
			B:     report.ABSide{Outcome: report.Fail, Outcomes: []report.Outcome{report.Fail, report.Pass}, Detail: "word 0 differs"},
			Repro: "./specs.test --case=host.memfd.copy.one --ab=inject:corrupt-read:0",
			Metrics: []report.ABMetric{{Name: "bw_copy_gbps", Unit: "GB/s", Better: report.Higher, A: []float64{10, 10}, B: []float64{5, 5},
				Ratios: []float64{0.5, 0.5}, Change: -0.5, Low: -0.5, High: -0.5, Level: 0.95, Family: "copy one direction", Tolerance: 0.08,
				Verdict: report.ABPerfRegression}}}},
		Regressions: 1, PerfRegressions: 1}
	return r
}

func TestSchemaAcceptsAB(t *testing.T) {
	schema := loadSchema(t)
	b, _ := json.Marshal(abReport())
	if errs := validateJSON(t, schema, b); len(errs) > 0 {
		t.Fatalf("report with an ab section rejected:\n%s", strings.Join(errs, "\n"))
	}
	// Planted: a change and a verdict the model has no name for.
	for _, c := range []struct {
		edit func(m map[string]any)
		want string
	}{
		{func(m map[string]any) { abPair(m)["change"] = "worse" }, `/ab/pairs/0/change: "worse" not in enum`},
		{func(m map[string]any) { abPair(m)["metrics"].([]any)[0].(map[string]any)["verdict"] = "slower" }, `/ab/pairs/0/metrics/0/verdict: "slower" not in enum`},
		{func(m map[string]any) { m["ab"].(map[string]any)["b"].(map[string]any)["side"] = "C" }, `/ab/b/side: "C" not in enum`},
	} {
		var m map[string]any
		json.Unmarshal(b, &m)
		c.edit(m)
		bb, _ := json.Marshal(m)
		if errs := validateJSON(t, schema, bb); !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("errors %q lack %q", errs, c.want)
		}
	}
	// Byte-compatible: a report without --ab writes no ab key at all.
	b, _ = json.Marshal(goodReport())
	if strings.Contains(string(b), `"ab"`) {
		t.Fatalf("a report without an A/B run writes an ab key")
	}
}

func abPair(m map[string]any) map[string]any {
	return m["ab"].(map[string]any)["pairs"].([]any)[0].(map[string]any)
}

// TestApplyAB: a B worse than A fails a passing run and the line names
// side B and its differences; an A/A run keeps PASS and says so.
func TestApplyAB(t *testing.T) {
	r := abReport()
	s := report.Summary{Verdict: report.VerdictPass, ExitStatus: report.ExitPass, Line: "p2patomics: PASS — 2 cases, 0 unexpected (no baseline)"}
	report.ApplyAB(&s, r.AB)
	if s.Verdict != report.VerdictFail || s.ExitStatus != report.ExitFail {
		t.Fatalf("B regressed but the run is %s/%d", s.Verdict, s.ExitStatus)
	}
	for _, want := range []string{"p2patomics: FAIL", "B: 1 regression (host.memfd.copy.one pass→fail)", "1 perf regression (host.memfd.copy.one bw_copy_gbps -50% ±0%)"} {
		if !strings.Contains(s.Line, want) {
			t.Errorf("line %q lacks %q", s.Line, want)
		}
	}
	same := &report.AB{Spec: "same", Blocks: 3, Pairs: []report.ABPair{{ID: "x", Change: report.ABSame}}}
	s = report.Summary{Verdict: report.VerdictPass, ExitStatus: report.ExitPass, Line: "p2patomics: PASS — 1 case"}
	report.ApplyAB(&s, same)
	if s.Verdict != report.VerdictPass || !strings.HasSuffix(s.Line, "A/B B: no difference from A (1 case over 3 blocks)") {
		t.Fatalf("A/A: %s %q", s.Verdict, s.Line)
	}
}

// TestWriteAB: summary.txt's A/B section names both stacks, the verdict
// words, and each differing case with its outcomes, its metric beyond the
// minimum effect and its repro on both stacks.
func TestWriteAB(t *testing.T) {
	var b strings.Builder
	report.WriteAB(&b, abReport().AB)
	for _, want := range []string{
		"A/B: --ab=inject:corrupt-read:0, 2 blocks per case\n  A: driver 550.54.15\n  B: driver 550.54.15, inject corrupt-read:0\n",
		"  host.memfd.copy.one: A pass, B fail (regression); bw_copy_gbps -50% ±0% [-50.0%, -50.0%] perf-regression\n",
		"    repro (both stacks): ./specs.test --case=host.memfd.copy.one --ab=inject:corrupt-read:0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary.txt's A/B section lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	report.WriteAB(&b, nil)
	if b.Len() != 0 {
		t.Errorf("a run without --ab writes %q", b.String())
	}
}
