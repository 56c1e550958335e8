package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

func r(id string, got, want report.Outcome, metrics map[string]report.Metric) report.Result {
	return report.Result{Case: report.ParseCase(id, nil), Labels: []string{}, Outcome: got, Expected: want, Ranks: []report.Rank{}, Metrics: metrics}
}

func m(unit string, median float64) report.Metric {
	return report.Metric{Unit: unit, Median: median, Min: median, Max: median, N: 3, Method: "wall"}
}

func env(driver string) map[string]any {
	return map[string]any{"vendor": "nvidia", "nvidia": map[string]any{"driver": driver}, "gpus": []any{map[string]any{"arch": "sm_90"}}}
}

// Two recorded runs: before and after a driver upgrade.
func runs() (*report.Report, *report.Report) {
	old := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(env("570.86.15")), Results: []report.Result{
		r("cuda.vmm.counter.add_u64_relaxed_sys", report.Pass, report.Pass, nil),
		r("cuda.ipc.counter.add_u64_relaxed_sys", report.Pass, report.Pass, nil),
		r("cuda.vmm-host.counter.add_u64_relaxed_sys", report.Crash, report.Pass, nil),
		r("cuda.vmm.canary.no_access", report.Crash, report.Crash, nil),
		r("cuda.vmm.old.only", report.Pass, report.Pass, nil),
		r("cuda.vmm.bw.ce_write.g0g1", report.Pass, report.Pass, map[string]report.Metric{
			"bw_ce_write_gbps": m("GB/s", 396), "bw_sm_write_gbps": m("GB/s", 370), "lat_rt_us": m("us", 0.90),
			"lat_local_us": m("us", 0.15), "atomics_mops": m("Mops/s", 100), "odd": m("widgets", 10), "gone": m("GB/s", 1),
		}),
		r("cuda.vmm.counter.add_u32_relaxed_sys", report.Pass, report.Pass, map[string]report.Metric{"atomic_rate": m("Mops/s", 38866)}),
	}}
	old.Results[5].Labels = []string{"cuda", "perf"}
	old.Results[3].Fault = &report.Fault{Vendor: "nvidia", Kind: "gpu", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}
	neu := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(env("580.159.04")), Results: []report.Result{
		r("cuda.vmm.counter.add_u64_relaxed_sys", report.Fail, report.Pass, nil),      // regression
		r("cuda.ipc.counter.add_u64_relaxed_sys", report.Skip, report.Pass, nil),      // regression (pass < skip)
		r("cuda.vmm-host.counter.add_u64_relaxed_sys", report.Pass, report.Pass, nil), // fix
		r("cuda.vmm.canary.no_access", report.Crash, report.Crash, nil),               // change: other fault
		r("cuda.vmm.new.only", report.Pass, report.Pass, nil),                         // enabled
		r("cuda.vmm.bw.ce_write.g0g1", report.Pass, report.Pass, map[string]report.Metric{
			"bw_ce_write_gbps": m("GB/s", 300),   // -24%: regression
			"bw_sm_write_gbps": m("GB/s", 350),   // -5.4%: within threshold
			"lat_rt_us":        m("us", 1.2),     // +33%: regression
			"lat_local_us":     m("us", 0.10),    // -33%: improvement
			"atomics_mops":     m("Mops/s", 150), // +50%: improvement
			"odd":              m("widgets", 20), // unknown direction: change
			"newm":             m("GB/s", 5),     // new metric: change
		}),
		// -21% on a case that is not perf: a change, not a regression
		r("cuda.vmm.counter.add_u32_relaxed_sys", report.Pass, report.Pass, map[string]report.Metric{"atomic_rate": m("Mops/s", 30595)}),
	}}
	neu.Results[5].Labels = []string{"cuda", "perf"}
	neu.Results[3].Fault = &report.Fault{Vendor: "nvidia", Kind: "gpu", Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED"}
	return old, neu
}

func ids(cs []Change) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.ID)
	}
	return strings.Join(s, " ")
}

func metrics(ms []MetricChange) string {
	var s []string
	for _, c := range ms {
		s = append(s, c.Metric)
	}
	return strings.Join(s, " ")
}

func TestCompare(t *testing.T) {
	old, neu := runs()
	c := Compare(old, neu, Options{Threshold: 0.1})
	checks := []struct{ name, got, want string }{
		{"regressions", ids(c.Regressions), "cuda.ipc.counter.add_u64_relaxed_sys cuda.vmm.counter.add_u64_relaxed_sys"},
		{"fixes", ids(c.Fixes), "cuda.vmm-host.counter.add_u64_relaxed_sys"},
		{"changes", ids(c.Changes), "cuda.vmm.canary.no_access"},
		{"enabled", ids(c.Enabled), "cuda.vmm.new.only"},
		{"disabled", ids(c.Disabled), "cuda.vmm.old.only"},
		{"metric regressions", metrics(c.MetricRegressions), "bw_ce_write_gbps lat_rt_us"},
		{"metric improvements", metrics(c.MetricImprovements), "atomics_mops lat_local_us"},
		{"metric changes", metrics(c.MetricChanges), "gone newm odd atomic_rate"},
		{"old driver", c.OldStack["driver"], "570.86.15"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if !c.Regressed {
		t.Error("not regressed")
	}
	if !strings.Contains(c.Changes[0].Detail, "CUDA_ERROR_LAUNCH_FAILED(719)") {
		t.Errorf("change detail = %q", c.Changes[0].Detail)
	}
	// A looser threshold hides the metric regressions; the case regressions stay.
	if c := Compare(old, neu, Options{Threshold: 0.5}); len(c.MetricRegressions) != 0 || !c.Regressed {
		t.Errorf("threshold 0.5: %+v", c.MetricRegressions)
	}
	// Only a metric regression, one run a side: listed, unconfirmed, not
	// regressed (issue 36: one world each cannot tell a change from noise).
	o2, n2 := runs()
	o2.Results, n2.Results = o2.Results[5:6], n2.Results[5:6]
	if c := Compare(o2, n2, Options{Threshold: 0.1}); c.Regressed || !c.Unconfirmed || len(c.MetricRegressions) == 0 || len(c.Regressions) != 0 {
		t.Errorf("metric-only regression, one run a side: regressed %v, unconfirmed %v, %d listed", c.Regressed, c.Unconfirmed, len(c.MetricRegressions))
	}
	// Identical runs: nothing.
	if c := Compare(old, old, Options{Threshold: 0.1}); c.Regressed || len(c.Fixes)+len(c.Changes)+len(c.MetricChanges) != 0 {
		t.Errorf("self-compare: %+v", c)
	}
}

func files(t *testing.T) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	old, neu := runs()
	po, pn := filepath.Join(dir, "old", "results.json"), filepath.Join(dir, "new", "results.json")
	if err := old.Write(po); err != nil {
		t.Fatal(err)
	}
	if err := neu.Write(pn); err != nil {
		t.Fatal(err)
	}
	return dir, po, pn
}

func TestRunTable(t *testing.T) {
	_, po, pn := files(t)
	var so, se bytes.Buffer
	if rc := run([]string{"--metric-threshold=0.1", po, pn}, &so, &se); rc != 1 {
		t.Fatalf("rc = %d, stderr %s", rc, se.String())
	}
	out := so.String()
	t.Log("\n" + out)
	if first, _, _ := strings.Cut(out, "\n"); first != "p2pcompare: REGRESSED — 2 case regressions, 2 metric regressions (unconfirmed: one run a side)" {
		t.Errorf("first line %q: the verdict comes first", first)
	}
	for _, want := range []string{
		"case regressions (2):", "cuda.vmm.counter.add_u64_relaxed_sys", "pass → fail", "pass → skip",
		"unconfirmed metric regressions (2):", "396 → 300 GB/s", "-24.2% (no samples; ranges 396–396 and 300–300 do not overlap)", "(higher is better)", "+33.3%",
		"driver=570.86.15", "driver=580.159.04",
		"also: 1 fix, 1 change, 0 known flakes, 1 enabled, 1 disabled, 2 metric improvements, 4 informational metric changes, 1 metrics unchanged (~); -v lists them",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Informational sections only with -v.
	for _, quiet := range []string{"fixes (1):", "enabled (only in new)", "metric improvements (", "metric changes ("} {
		if strings.Contains(out, quiet) {
			t.Errorf("without -v the table lists %q", quiet)
		}
	}
	so.Reset()
	run([]string{"-v", "--metric-threshold=0.1", po, pn}, &so, &se)
	for _, want := range []string{"fixes (1):", "crash → pass", "changes (1):", "enabled (only in new) (1):", "disabled (only in old) (1):",
		"metric improvements (2):", "metric changes (informational) (4):", "informational: not a perf case of a GPU backend"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("-v lacks %q:\n%s", want, so.String())
		}
	}
	if se.Len() != 0 {
		t.Errorf("stderr: %s", se.String())
	}
	// Same run twice: exit 0.
	so.Reset()
	if rc := run([]string{pn, pn}, &so, &se); rc != 0 || !strings.HasPrefix(so.String(), "p2pcompare: no regression") {
		t.Errorf("self rc = %d: %s", rc, so.String())
	}
}

// samples returns n samples around v, spread by ±spread (deterministic).
func samples(v, spread float64, n int) report.Metric {
	s := make([]float64, n)
	for i := range s {
		s[i] = v + spread*(float64(i%5)-2)/2
	}
	mm := report.Metric{Unit: "GB/s", Samples: s, N: n, Method: "cuda-events", Median: v, Min: v - spread, Max: v + spread}
	return mm
}

// TestJudge: the U test on samples, ranges without them.
func TestJudge(t *testing.T) {
	opt := Options{Threshold: 0.05, Alpha: 0.05}
	// A real drop: five samples each, no overlap → p=0.008 (the smallest a
	// 5+5 U test can give), -10%.
	if mc := Judge(samples(390, 2, 5), samples(351, 2, 5), opt); mc.Delta != "-10.0% (p=0.008, n=5+5)" || !mc.Significant() {
		t.Errorf("drop: %+v", mc)
	}
	// Noise: the same distribution shifted by less than its spread.
	if mc := Judge(samples(390, 8, 5), samples(391, 8, 5), opt); !strings.HasPrefix(mc.Delta, "~ (p=") || mc.Significant() {
		t.Errorf("noise: %+v", mc)
	}
	// A median 7.7% up, inside a ±15% spread: the U test says noise.
	if mc := Judge(samples(390, 60, 5), samples(420, 60, 5), opt); !strings.HasPrefix(mc.Delta, "~ (p=") || mc.Significant() || mc.P < 0.1 {
		t.Errorf("wide noise: %+v", mc)
	}
	// Significant but small: within the threshold, so ~.
	if mc := Judge(samples(390, 0.2, 5), samples(392, 0.2, 5), opt); mc.Significant() || !strings.Contains(mc.Delta, "is within 5%") {
		t.Errorf("small: %+v", mc)
	}
	// No samples: overlapping ranges are ~ however far the medians moved…
	o, n := report.Metric{Median: 100, Min: 80, Max: 120, N: 5}, report.Metric{Median: 115, Min: 100, Max: 130, N: 5}
	if mc := Judge(o, n, opt); mc.Delta != "~ (no samples)" {
		t.Errorf("overlap: %+v", mc)
	}
	// …and ranges apart count.
	n = report.Metric{Median: 60, Min: 55, Max: 65, N: 5}
	if mc := Judge(o, n, opt); mc.Delta != "-40.0% (no samples; ranges 80–120 and 55–65 do not overlap)" {
		t.Errorf("apart: %+v", mc)
	}
	// One run with samples, one without: judged by ranges.
	if mc := Judge(samples(390, 2, 5), report.Metric{Median: 389, Min: 380, Max: 395, N: 5}, opt); mc.Judged != "ranges" || mc.Significant() {
		t.Errorf("mixed: %+v", mc)
	}
	// One sample: no spread, never a change.
	if mc := Judge(report.Metric{Median: 7.53, Min: 7.53, Max: 7.53, N: 1}, report.Metric{Median: 5.8, Min: 5.8, Max: 5.8, N: 1, Samples: []float64{5.8}}, opt); mc.Delta != "~ (n=1+1: too few samples to judge)" {
		t.Errorf("n=1: %+v", mc)
	}
}

// TestFlakes: a case that changed outcome and is a known flake (flakes.txt
// or the old run's verdict) is not a regression.
func TestFlakes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "flakes.txt"), []byte("# spread: timing decides\ncuda\\.vmm\\.counter\\..*\n"), 0o644)
	set, err := expect.Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	old, neu := runs()
	c := Compare(old, neu, Options{Threshold: 0.1, Flakes: set, FlakesFrom: dir})
	if ids(c.Regressions) != "cuda.ipc.counter.add_u64_relaxed_sys" || ids(c.Flaky) != "cuda.vmm.counter.add_u64_relaxed_sys" {
		t.Errorf("regressions %q flaky %q", ids(c.Regressions), ids(c.Flaky))
	}
	if !strings.Contains(c.Flaky[0].Detail, "spread: timing decides") {
		t.Errorf("flaky detail %q", c.Flaky[0].Detail)
	}
	old.Results[1].Verdict = report.KnownFlake
	c = Compare(old, neu, Options{Threshold: 0.1, Flakes: set})
	if len(c.Regressions) != 0 || len(c.Flaky) != 2 {
		t.Errorf("old verdict known-flake: regressions %q flaky %q", ids(c.Regressions), ids(c.Flaky))
	}
}

// TestCommittedRuns: the two committed 2xH200 runs of one driver (no
// samples; four vmm-host cases that flakes.txt lists changed outcome) are
// not a regression; without flakes.txt the flakes would say REGRESSED.
func TestCommittedRuns(t *testing.T) {
	root := filepath.Join("..", "..")
	// testdata/runs: the two runs, gzipped from results/ for the tests.
	oldp := filepath.Join(root, "testdata", "runs", "h200x2-580.159.04", "run-d9c5274", "results.json.gz")
	newp := filepath.Join(root, "testdata", "runs", "h200x2-580.159.04", "results.json.gz")
	var so, se bytes.Buffer
	exps := "--expectations=" + filepath.Join(root, "expectations", "nvidia-sm_90-580")
	if rc := run([]string{exps, oldp, newp}, &so, &se); rc != 0 || !strings.HasPrefix(so.String(), "p2pcompare: no regression — 0 case regressions, 0 metric regressions") {
		t.Errorf("rc %d:\n%s%s", rc, so.String(), se.String())
	}
	if strings.Count(so.String(), "\n") > 8 {
		t.Errorf("not quiet (%d lines):\n%s", strings.Count(so.String(), "\n"), so.String())
	}
	so.Reset()
	if rc := run([]string{"--expectations=none", oldp, newp}, &so, &se); rc != 1 {
		t.Errorf("without flakes.txt: rc %d (the two flaky vmm-host cases should regress)", rc)
	}
}

func TestRunJSON(t *testing.T) {
	_, po, pn := files(t)
	var so, se bytes.Buffer
	if rc := run([]string{po, "--json", pn}, &so, &se); rc != 1 {
		t.Fatalf("rc = %d %s", rc, se.String())
	}
	var c Comparison
	if err := json.Unmarshal(so.Bytes(), &c); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, so.String())
	}
	if len(c.Regressions) != 2 || len(c.MetricRegressions) != 3 || !c.Regressed || c.Old != po || c.Threshold != 0.05 || c.Alpha != 0.05 {
		t.Errorf("json = %+v", c)
	}
}

func TestRunUsage(t *testing.T) {
	dir, po, _ := files(t)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema":1,"results":[`), 0o644)
	for _, args := range [][]string{
		{},
		{po},
		{po, po, po},
		{"--metric-threshold=abc", po, po},
		{"--metric-threshold=-1", po, po},
		{"--alpha=1.5", po, po},
		{"--expectations=" + filepath.Join(dir, "nowhere"), po, po},
		{"--nope", po, po},
		{po, filepath.Join(dir, "missing.json")},
		{po, bad},
	} {
		var so, se bytes.Buffer
		if rc := run(args, &so, &se); rc != 2 {
			t.Errorf("%v: rc = %d", args, rc)
		}
		if n := strings.Count(se.String(), "\n"); n != 1 || so.Len() != 0 {
			t.Errorf("%v: stderr %d lines %q, stdout %q", args, n, se.String(), so.String())
		}
	}
}

// Issue 26 item 12: a detail's escape codes are never printed raw.
func TestFirstLineHasNoControls(t *testing.T) {
	if got := firstLine("\x1b]0;pwned\a\x1b[31mred\nsecond"); strings.ContainsAny(got, "\x1b\a\n") {
		t.Fatalf("firstLine kept control bytes: %q", got)
	}
}

// A perf case's GB/s metric declared lower-is-better (bytes re-sent per
// second) that doubled is a metric regression, and its "better" column
// says lower; the same rise of a metric recorded without a declaration (a
// run from before metrics declared one) is read by the unit rule, as
// then: an improvement. The unit rule alone called both improvements.
func TestCompareReadsTheDeclaredDirection(t *testing.T) {
	for _, c := range []struct {
		better report.Direction
		words  string
		regr   bool
	}{{report.Lower, "lower", true}, {"", "higher", false}} {
		pair := func(v float64) *report.Report {
			mm := samples(v, 0.2, 5)
			mm.Better = c.better
			res := r("cuda.vmm.perf.resent.r0r1", report.Pass, report.Pass, map[string]report.Metric{"resent_gbps": mm})
			res.Labels = []string{"cuda", "perf"}
			return &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(env("580.159.04")), Results: []report.Result{res}}
		}
		cmp := Compare(pair(10), pair(20), Options{Threshold: 0.1})
		list := cmp.MetricImprovements
		if c.regr {
			list = cmp.MetricRegressions
		}
		if len(list) != 1 || list[0].Metric != "resent_gbps" || list[0].Better != c.words {
			t.Errorf("declared %q, 10 → 20 GB/s: regressions %s, improvements %s; want it a %s with better=%s",
				c.better, metrics(cmp.MetricRegressions), metrics(cmp.MetricImprovements), map[bool]string{true: "regression", false: "improvement"}[c.regr], c.words)
		}
	}
}
