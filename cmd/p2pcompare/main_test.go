package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

func r(id string, got, want report.Outcome, metrics map[string]report.Metric) report.Result {
	return report.Result{ID: id, Labels: []string{}, Outcome: got, Expected: want, Ranks: []report.Rank{}, Metrics: metrics}
}

func m(unit string, median float64) report.Metric {
	return report.Metric{Unit: unit, Median: median, Min: median, Max: median, N: 3, Method: "wall"}
}

func env(driver string) map[string]any {
	return map[string]any{"vendor": "nvidia", "nvidia": map[string]any{"driver": driver}, "gpus": []any{map[string]any{"arch": "sm_90"}}}
}

// Two recorded runs: before and after a driver upgrade.
func runs() (*report.Report, *report.Report) {
	old := &report.Report{Schema: report.Schema, Environment: env("570.86.15"), Results: []report.Result{
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
	neu := &report.Report{Schema: report.Schema, Environment: env("580.159.04"), Results: []report.Result{
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
	c := Compare(old, neu, 0.1)
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
	if c := Compare(old, neu, 0.5); len(c.MetricRegressions) != 0 || !c.Regressed {
		t.Errorf("threshold 0.5: %+v", c.MetricRegressions)
	}
	// Only a metric regression: still regressed.
	o2, n2 := runs()
	o2.Results, n2.Results = o2.Results[5:6], n2.Results[5:6]
	if c := Compare(o2, n2, 0.1); !c.Regressed || len(c.Regressions) != 0 {
		t.Error("metric-only regression not flagged")
	}
	// Identical runs: nothing.
	if c := Compare(old, old, 0.1); c.Regressed || len(c.Fixes)+len(c.Changes)+len(c.MetricChanges) != 0 {
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
	if rc := run([]string{po, pn}, &so, &se); rc != 1 {
		t.Fatalf("rc = %d, stderr %s", rc, se.String())
	}
	out := so.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"regressions (2):", "cuda.vmm.counter.add_u64_relaxed_sys", "pass → fail", "pass → skip",
		"fixes (1):", "crash → pass", "changes (1):", "enabled (only in new) (1):", "disabled (only in old) (1):",
		"metric regressions (2, threshold 10.0%):", "396 → 300 GB/s", "-24.2%", "(higher is better)", "+33.3%",
		"driver=570.86.15", "driver=580.159.04",
		"summary: 2 regressions, 1 fix, 1 change, 1 enabled, 1 disabled, 2 metric regressions, 2 metric improvements: REGRESSED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if se.Len() != 0 {
		t.Errorf("stderr: %s", se.String())
	}
	// Same run twice: exit 0.
	so.Reset()
	if rc := run([]string{"--metric-threshold=0.2", pn, pn}, &so, &se); rc != 0 || !strings.Contains(so.String(), "no regression") {
		t.Errorf("self rc = %d: %s", rc, so.String())
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
	if len(c.Regressions) != 2 || len(c.MetricRegressions) != 2 || !c.Regressed || c.Old != po || c.Threshold != 0.1 {
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
