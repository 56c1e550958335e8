package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// writeNode writes rep as node name's results.json under dir.
func writeNode(t *testing.T, dir, name string, rep *report.Report) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(filepath.Join(p, "results.json")); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, p string) *report.Report {
	t.Helper()
	r, err := report.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorded is a committed GPU run's record as the tests read it:
// testdata/runs holds them gzipped from results/, which tests never read.
func recorded(run string) string {
	return filepath.Join("..", "..", "testdata", "runs", run, "results.json.gz")
}

// scaleMetric multiplies one case's metric (median and samples' range).
func scaleMetric(rep *report.Report, id, name string, f float64) {
	for i := range rep.Results {
		if rep.Results[i].ID() == id {
			m := rep.Results[i].Metrics[name]
			m.Median, m.Min, m.Max = m.Median*f, m.Min*f, m.Max*f
			rep.Results[i].Metrics[name] = m
		}
	}
}

func setOutcome(rep *report.Report, id string, o report.Outcome, detail string) {
	for i := range rep.Results {
		if rep.Results[i].ID() == id {
			rep.Results[i].Outcome, rep.Results[i].Detail = o, detail
		}
	}
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHostFleet: a host run made here and copies of it under other stacks
// (the environment rewritten, as a canary node after a kernel upgrade):
// stacks are grouped, a case failing on one node only is listed, a planted
// slow node is flagged on the bad side, and the copies that only differ in
// stack flag nothing.
func TestHostFleet(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join("testdata", "host-a", "results.json")
	var nodes []string
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, writeNode(t, dir, n, load(t, base)))
	}
	canary := load(t, base)
	canary.Environment.OS.Kernel = "6.19.0-canary"
	const flaky = "host.memfd.counter.add_u64_relaxed_sys"
	setOutcome(canary, flaky, report.Fail, "expected 0x50000, got 0x4fff0; lost updates: 16")
	// A 5x drop on a metric whose samples are tight on every node.
	slowID, slowMetric := "host.memfd.counter.add_u32_relaxed_dev", "atomic_rate"
	scaleMetric(canary, slowID, slowMetric, 0.2)
	nodes = append(nodes, writeNode(t, dir, "canary-1", canary))

	jsonPath, htmlPath := filepath.Join(dir, "fleet.json"), filepath.Join(dir, "fleet.html")
	code, out, errs := runCLI(t, append([]string{"--gate", "--json=" + jsonPath, "--html=" + htmlPath}, nodes...)...)
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, stderr %q; want 1 (the gate fails on the canary)", code, errs)
	}
	var f Fleet
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("--json is not one JSON document: %v", err)
	}
	if len(f.Stacks) != 2 || !slices.Equal(f.Stacks[1].Nodes, []string{"canary-1"}) || f.Stacks[1].Stack.Kernel != "6.19.0-canary" {
		t.Errorf("stacks %+v: want the three copies in one group and the canary alone", f.Stacks)
	}
	if len(f.Inconsistent) != 1 || f.Inconsistent[0].ID != flaky || !slices.Equal(f.Inconsistent[0].Failing, []string{"canary-1"}) ||
		len(f.Inconsistent[0].Passing) != 3 {
		t.Errorf("inconsistent %+v: want only %s, failing on canary-1", f.Inconsistent, flaky)
	}
	var bad []string
	for _, m := range f.Metrics {
		for _, v := range m.Nodes {
			if v.Outlier != "" {
				bad = append(bad, m.Case+" "+m.Metric+" "+v.Node+" "+v.Outlier)
			}
		}
	}
	if want := []string{slowID + " " + slowMetric + " canary-1 low"}; !slices.Equal(bad, want) {
		t.Errorf("outliers %q, want %q", bad, want)
	}
	// The host backend's rates are the CPU's noise: the planted drop is
	// shown on the bad side but does not gate; the flaky case does.
	for _, r := range f.Reasons {
		if strings.Contains(r, slowMetric) {
			t.Errorf("a host-backend rate gated the fleet: %s", r)
		}
	}
	for _, want := range []string{"canary-1", "6.19.0-canary", flaky, "fleet: FAIL", "low (bad side; host backend: shown, not gating)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", "canary-1", flaky, "dot out"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
	for _, ext := range []string{"<script", "src=", "<link"} {
		if strings.Contains(string(page), ext) {
			t.Errorf("the HTML page is not self-contained: it has %q", ext)
		}
	}
	// The three identical nodes alone: a fleet that passes, exit 0.
	if code, out, _ := runCLI(t, append([]string{"--gate"}, nodes[:3]...)...); code != 0 || !strings.Contains(out, "fleet: PASS") {
		t.Errorf("three identical nodes: exit %d\n%s", code, out)
	}
}

// TestGPUFleet: the committed 2xH200 run as four nodes: two unchanged, one
// after a driver upgrade, one whose NVLink copy bandwidth sits at half.
// Only the slow node's bandwidth is flagged, and the driver upgrade makes
// its own stack group.
func TestGPUFleet(t *testing.T) {
	base := recorded("h200x2-580.159.04")
	rep := load(t, base)
	var bwID string
	for _, r := range rep.Results {
		if m, ok := r.Metrics["bw_ce_write_gbps"]; ok && slices.Contains(r.Labels, "perf") && m.N > 2 {
			bwID = r.ID()
			break
		}
	}
	if bwID == "" {
		t.Fatal("the committed run has no copy-engine bandwidth metric")
	}
	dir := t.TempDir()
	var nodes []string
	for _, n := range []string{"gpu-01", "gpu-02"} {
		nodes = append(nodes, writeNode(t, dir, n, load(t, base)))
	}
	up := load(t, base)
	up.Environment.Sections["nvidia"].(map[string]any)["driver"] = "590.48.01"
	nodes = append(nodes, writeNode(t, dir, "gpu-03", up))
	slow := load(t, base)
	scaleMetric(slow, bwID, "bw_ce_write_gbps", 0.5)
	nodes = append(nodes, writeNode(t, dir, "gpu-04", slow))
	var ns []Node
	for _, p := range nodes {
		ns = append(ns, Node{Name: filepath.Base(p), File: p, Report: load(t, filepath.Join(p, "results.json"))})
	}
	f := Merge(ns)
	var flagged []string
	for _, m := range f.Metrics {
		for _, v := range m.Nodes {
			if v.Outlier != "" {
				flagged = append(flagged, m.Case+" "+m.Metric+" "+v.Node+" "+v.Outlier)
			}
		}
	}
	if want := []string{bwID + " bw_ce_write_gbps gpu-04 low"}; !slices.Equal(flagged, want) {
		t.Errorf("outliers %q, want %q", flagged, want)
	}
	if len(f.Stacks) != 2 || f.Stacks[1].Stack.Driver != "590.48.01" || !strings.Contains(f.Stacks[0].Stack.GPU, "NVIDIA H200 ×2") {
		t.Errorf("stacks %+v: want 580.159.04 (3 nodes) and 590.48.01 (gpu-03), NVIDIA H200 ×2", f.Stacks)
	}
	if len(f.Inconsistent) != 0 {
		t.Errorf("copies of one run differ in %d cases", len(f.Inconsistent))
	}
	// The committed 4-GPU run merges with them (another shape: its case
	// ids carry .r4, so no case is compared across the two shapes).
	ns = append(ns, Node{Name: "h200x4", Report: load(t, recorded("h200x4-580.159.04"))})
	if f := Merge(ns); len(f.Stacks) != 3 || len(f.Inconsistent) != 0 {
		t.Errorf("with the 4-GPU run: %d stacks, %d inconsistent; want 3 and 0", len(f.Stacks), len(f.Inconsistent))
	}
}

// TestJudgeUsesSpread: the same 20% drop is an outlier where every node's
// samples are tight and is not one where a node's own samples spread
// that wide; a flat threshold could not tell the two apart.
func TestJudgeUsesSpread(t *testing.T) {
	mk := func(half float64) MetricDist {
		d := MetricDist{Unit: "GB/s", Better: "higher"}
		for i, v := range []float64{100, 101, 99, 100, 80} {
			d.Nodes = append(d.Nodes, NodeValue{Node: string(rune('a' + i)), Median: v, Min: v - half, Max: v + half, N: 6})
		}
		return d
	}
	tight, wide := mk(0.5), mk(25)
	judge(&tight)
	judge(&wide)
	if tight.Nodes[4].Outlier != "low" || !tight.Nodes[4].Bad || tight.Outliers != 1 {
		t.Errorf("tight samples: node e %+v (outliers %d), want the only low outlier", tight.Nodes[4], tight.Outliers)
	}
	if wide.Outliers != 0 {
		t.Errorf("wide samples: %d outliers, want none (node e's own samples reach the fleet median)", wide.Outliers)
	}
	// A time that rises is the bad side; one that falls is flagged but good.
	lat := mk(0.5)
	lat.Unit, lat.Better = "us", "lower"
	judge(&lat)
	if lat.Nodes[4].Outlier != "low" || lat.Nodes[4].Bad {
		t.Errorf("a faster latency was judged bad: %+v", lat.Nodes[4])
	}
	two := MetricDist{Better: "higher", Nodes: []NodeValue{{Median: 1, Min: 1, Max: 1}, {Median: 9, Min: 9, Max: 9}}}
	judge(&two)
	if two.Outliers != 0 {
		t.Error("two nodes have no majority, yet one was flagged")
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "n1")
	os.MkdirAll(bogus, 0o755)
	os.WriteFile(filepath.Join(bogus, "results.json"), []byte("{not json"), 0o644)
	a := writeNode(t, dir, "a", load(t, filepath.Join("testdata", "host-a", "results.json")))
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no node results"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{a, a}, "given twice"},
		{[]string{"--json=" + filepath.Join(dir, "no", "such", "dir.json"), a}, "no such file"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming %q", c.args, code, errs, c.want)
		}
	}
	code, out, _ := runCLI(t, "--json=-", a)
	var f Fleet
	if err := json.Unmarshal([]byte(out), &f); code != 0 || err != nil || len(f.Nodes) != 1 {
		t.Errorf("--json=- : exit %d, stdout is not one JSON document: %v", code, err)
	}
	if code, _, errs := runCLI(t, "--json=-", "--html=-", a); code != 2 || !strings.Contains(errs, "both want stdout") {
		t.Errorf("--json=- --html=-: exit %d, %q", code, errs)
	}
}

// A node whose run told its verdict (results.json summary) keeps it: an
// ungated H200 whose only unmet cases are not supported is "pass".
func TestNodeVerdictIsTheRunsSummary(t *testing.T) {
	res := []report.Result{
		{Case: report.ParseCase("cuda.vmm.cpugpu.add", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.ExpectedFail, NotSupported: "HOST_NATIVE 0"},
		{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected},
	}
	sum := report.Summarize(res, "", "out")
	f := Merge([]Node{{Name: "h200", Report: &report.Report{Schema: 1, Environment: report.Environment{}, Results: res, Summary: &sum}}})
	if f.Nodes[0].Verdict != "pass" {
		t.Errorf("node verdict %q, the run said %s", f.Nodes[0].Verdict, sum.Verdict)
	}
}

// A node whose results.json predates the summary is judged by the same
// verdict function: a skip for a missing capability is not-supported, not
// a failure, and a case that missed its outcome still fails the node.
func TestNodeVerdictWithoutSummary(t *testing.T) {
	skip := report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.add", nil), Outcome: report.Skip, Expected: report.Pass, Detail: "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is 0"}
	pass := report.Result{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Pass, Expected: report.Pass}
	lost := report.Result{Case: report.ParseCase("cuda.vmm.counter.sub", nil), Outcome: report.Fail, Expected: report.Pass, Detail: "lost 3"}
	node := func(rs ...report.Result) string {
		f := Merge([]Node{{Name: "old", Report: &report.Report{Schema: 1, Environment: report.Environment{}, Results: rs}}})
		return f.Nodes[0].Verdict
	}
	if v := node(skip, pass); v != "pass" {
		t.Errorf("only a not-supported skip unmet: node verdict %q, want pass", v)
	}
	if v := node(skip, pass, lost); v != "fail" {
		t.Errorf("a lost update: node verdict %q, want fail", v)
	}
}

// nodesOf reads the node folders as the CLI would (no result, exit_status).
func nodeFailures(f *Fleet) map[string][]string {
	m := map[string][]string{}
	for _, n := range f.Nodes {
		if len(n.Failures) > 0 {
			m[n.Name] = n.Failures
		}
	}
	return m
}

// TestIndependentHostRuns: three host runs made one after another on this
// (loaded, 2-core) machine, committed as testdata/indep-*: a clean fleet.
// On a44624c it failed on three one-sample pair_atomic_rate values (n 1,
// a cross-node scale of three noisy values) and a case_wall_ms.
func TestIndependentHostRuns(t *testing.T) {
	var args []string
	for _, n := range []string{"indep-1", "indep-2", "indep-3"} {
		args = append(args, filepath.Join("testdata", n))
	}
	code, out, errs := runCLI(t, append([]string{"--gate"}, args...)...)
	if code != 0 || errs != "" || !strings.Contains(out, "fleet: PASS") {
		t.Fatalf("three healthy host runs: exit %d, stderr %q\n%s", code, errs, out)
	}
	// Not only because host rates never gate: judged as if they did, no
	// one-sample metric is an outlier.
	var ns []Node
	for _, a := range args {
		ns = append(ns, Node{Name: filepath.Base(a), Report: load(t, filepath.Join(a, "results.json"))})
	}
	for _, m := range Merge(ns).Metrics {
		for _, v := range m.Nodes {
			if v.N == 1 && v.Outlier != "" {
				t.Errorf("%s %s: one-sample value of %s flagged %s (z %.1f)", m.Case, m.Metric, v.Node, v.Outlier, v.Z)
			}
		}
	}
}

// TestPerturbedGPUFleet: the committed 4xH200 run as five nodes, each of its
// one-sample metrics (pair_atomic_rate, case_wall_ms) moved by up to ±6%,
// as five healthy nodes differ; multi-sample metrics moved within their own
// samples' range. A clean fleet; a44624c flagged one-sample pair rates.
func TestPerturbedGPUFleet(t *testing.T) {
	base := recorded("h200x4-580.159.04")
	rng := rand.New(rand.NewPCG(27, 1))
	var ns []Node
	for i := range 5 {
		rep := load(t, base)
		for j := range rep.Results {
			for name, m := range rep.Results[j].Metrics {
				f := 1 + (rng.Float64()*2-1)*0.06
				if m.N > 1 && m.Median != 0 {
					// Stay inside the run's own spread.
					f = 1 + (rng.Float64()*2-1)*0.5*(m.Max-m.Min)/2/math.Abs(m.Median)
				}
				m.Median, m.Min, m.Max = m.Median*f, m.Min*f, m.Max*f
				rep.Results[j].Metrics[name] = m
			}
		}
		ns = append(ns, Node{Name: fmt.Sprintf("gpu-%02d", i+1), Report: rep})
	}
	// The run itself is ungated (its 52 vmm-host failures fail each node
	// alike); what must not appear is a metric reason.
	for _, r := range Merge(ns).Reasons {
		if strings.HasPrefix(r, "metric ") {
			t.Errorf("five perturbed healthy nodes: %s", r)
		}
	}
}

// TestOutlierRelativeFloor: a 5% difference on tight samples is not an
// outlier (a44624c flagged it: z -10); 20% still is. A spread atomic's
// floor is its perf family's (40 %: placement modes), so 20% is not.
func TestOutlierRelativeFloor(t *testing.T) {
	mk := func(last float64) MetricDist {
		d := MetricDist{Case: "cuda.vmm.perf.copy_ce_write.r0r1", Metric: "bw_ce_write_gbps", Unit: "GB/s", Better: "higher", Gating: true}
		for i, v := range []float64{100, 100.2, 99.8, 100, last} {
			d.Nodes = append(d.Nodes, NodeValue{Node: string(rune('a' + i)), Median: v, Min: v - 0.1, Max: v + 0.1, N: 5})
		}
		return d
	}
	small, big := mk(95), mk(80)
	judge(&small)
	judge(&big)
	if small.Outliers != 0 {
		t.Errorf("a 5%% drop was flagged: %+v", small.Nodes[4])
	}
	if big.Outliers != 1 || !big.Nodes[4].Bad {
		t.Errorf("a 20%% drop was not flagged: %+v", big.Nodes[4])
	}
	spread := mk(80)
	spread.Case, spread.Metric, spread.Unit = "cuda.ipc.perf.atomic_spread_peer_sys", "atomic_rate", "Mops/s"
	if judge(&spread); spread.Outliers != 0 {
		t.Errorf("a 20%% drop of a spread atomic (floor 40%%) was flagged: %+v", spread.Nodes[4])
	}
}

// TestBrokenNodeFailsFleet: a node whose suite exited 2 and tested nothing
// (a real run: --case=no.such.case, exit 2, results.json with no case and
// no summary, as a GPU node whose backend did not load writes) beside three
// healthy nodes. a44624c printed "pass 0 0" and fleet: PASS.
func TestBrokenNodeFailsFleet(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for _, n := range []string{"indep-1", "indep-2", "indep-3"} {
		args = append(args, filepath.Join("testdata", n))
	}
	for _, withStatus := range []bool{true, false} {
		b := filepath.Join(dir, fmt.Sprintf("broken-%v", withStatus))
		os.MkdirAll(b, 0o755)
		raw, _ := os.ReadFile(filepath.Join("testdata", "broken-exit2", "results.json"))
		os.WriteFile(filepath.Join(b, "results.json"), raw, 0o644)
		if withStatus {
			os.WriteFile(filepath.Join(b, "exit_status"), []byte("2\n"), 0o644)
		}
		code, out, _ := runCLI(t, append([]string{"--gate", "--drain"}, append(args, b)...)...)
		if code != 1 || !strings.Contains(out, "fleet: FAIL") || !strings.Contains(out, "no result: results.json holds no case") {
			t.Errorf("exit_status file %v: exit %d\n%s", withStatus, code, out)
		}
		if withStatus && !strings.Contains(out, "suite exit status 2") {
			t.Errorf("the exit_status file is not named:\n%s", out)
		}
		drain := "scontrol update nodename=" + filepath.Base(b) + " state=drain reason=\"p2patomics: "
		if !strings.Contains(out, drain) || strings.Count(out, "scontrol update") != 1 {
			t.Errorf("--drain: want one line starting %q:\n%s", drain, out)
		}
	}
}

// TestMissingNodeIsNoResult: one node's results.json missing, another's
// empty (kubectl logs of a pod that never ran), a third's not JSON: each
// is named "no result" and the other nodes are still merged. a44624c
// aborted with exit 2 and no report.
func TestMissingNodeIsNoResult(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join("testdata", "indep-1")
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "results.json"), nil, 0o644)
	bogus := filepath.Join(dir, "bogus")
	os.MkdirAll(bogus, 0o755)
	os.WriteFile(filepath.Join(bogus, "results.json"), []byte("{not json"), 0o644)
	for _, gate := range []string{"--gate", "--json=" + filepath.Join(dir, "f.json")} {
		code, out, errs := runCLI(t, gate, good, filepath.Join(dir, "absent"), empty, bogus)
		if code != 1 || errs != "" {
			t.Errorf("%s: exit %d, stderr %q; want 1 (nodes without a result), nothing on stderr", gate, code, errs)
		}
		for _, want := range []string{"indep-1", "node absent: no result: no results.json", "node empty: no result: results.json is empty", "node bogus: no result:", "fleet: FAIL"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the report lacks %q:\n%s", gate, want, out)
			}
		}
	}
}

// TestHostNodeInGPUFleet: two H200 nodes and one node that fell back to the
// host backend (its driver did not load): the host node fails. a44624c
// passed it (its cases ran on no other node, so none differed).
func TestHostNodeInGPUFleet(t *testing.T) {
	base := recorded("h200x2-580.159.04")
	f := Merge([]Node{{Name: "gpu-01", Report: load(t, base)}, {Name: "gpu-02", Report: load(t, base)},
		{Name: "gpu-03", Report: load(t, filepath.Join("testdata", "indep-1", "results.json"))}})
	if f.Pass {
		t.Fatal("a host-backend node passed in a GPU fleet")
	}
	if fl := nodeFailures(f); len(fl) != 1 || !strings.Contains(strings.Join(fl["gpu-03"], ";"), "host backend") {
		t.Errorf("failures %q, want gpu-03's host backend alone", fl)
	}
}

// TestShapeChecks: a node with fewer cases than its shape's majority, one
// with fewer GPUs than its model's majority, one whose suite exited 1
// though its results pass: each fails, alone.
func TestShapeChecks(t *testing.T) {
	base := recorded("h200x2-580.159.04")
	short := load(t, base)
	short.Results = short.Results[:len(short.Results)-10]
	lost := load(t, base)
	lost.Environment.GPUs = lost.Environment.GPUs[:1]
	lost.Environment.GPUs[0].Count = 1
	one := 1
	f := Merge([]Node{{Name: "a", Report: load(t, base)}, {Name: "b", Report: load(t, base)}, {Name: "c", Report: load(t, base)},
		{Name: "short", Report: short}, {Name: "lost", Report: lost}, {Name: "exit1", Report: load(t, base), ExitStatus: &one}})
	fl := nodeFailures(f)
	want := map[string]string{"short": "its shape's majority ran", "lost": "1 GPUs, its pool's majority has 2", "exit1": "suite exit status 1"}
	for n, w := range want {
		if !strings.Contains(strings.Join(fl[n], ";"), w) {
			t.Errorf("node %s: failures %q, want one naming %q", n, fl[n], w)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		if fl[n] != nil {
			t.Errorf("healthy node %s failed: %q", n, fl[n])
		}
	}
}

// Issue 38 item 12: two nodes, one gated against a baseline that lists an
// id it did not run (a missing entry in its results.json). The tie of
// case counts broke toward the gated node's larger count and failed the
// healthy node; the missing id is the gated node's own failure.
func TestTwoNodeTieCountsNoMissingID(t *testing.T) {
	base := recorded("h200x2-580.159.04")
	gated := load(t, base)
	ghost := report.Result{Case: report.ParseCase("cuda.vmm.counter.ghost_u64_relaxed_sys", nil), Labels: []string{}, Outcome: report.Skip,
		Expected: report.Pass, Verdict: report.Missing, Ranks: []report.Rank{}, Detail: "in the baseline, not run"}
	gated.Results = append(gated.Results, ghost)
	f := Merge([]Node{{Name: "healthy", Report: load(t, base)}, {Name: "gated", Report: gated}})
	fl := nodeFailures(f)
	if fl["healthy"] != nil {
		t.Errorf("the healthy node failed: %q", fl["healthy"])
	}
	for _, n := range f.Nodes {
		if n.Name == "gated" && n.Cases != len(gated.Results)-1 {
			t.Errorf("the gated node counts %d cases, want %d (its missing id is no case it ran)", n.Cases, len(gated.Results)-1)
		}
	}
}

// TestNotSupportedBesideAPass: the verdict's rule, not outcome == expected:
// a node that skips a case as not supported (its device lacks the
// capability) beside one that passes it does not fail the fleet; the case
// is listed as differing. a44624c failed the fleet on it.
func TestNotSupportedBesideAPass(t *testing.T) {
	pass := report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.add", nil), Outcome: report.Pass, Expected: report.Pass}
	skip := report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.add", nil), Outcome: report.Skip, Expected: report.Pass, Detail: "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is 0"}
	other := report.Result{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Pass, Expected: report.Pass}
	env := func() map[string]any { return map[string]any{"flags": map[string]any{"ranks": float64(2)}} }
	f := Merge([]Node{
		{Name: "a", Report: &report.Report{Schema: 1, Environment: report.EnvironmentOf(env()), Results: []report.Result{pass, other}}},
		{Name: "b", Report: &report.Report{Schema: 1, Environment: report.EnvironmentOf(env()), Results: []report.Result{skip, other}}},
	})
	if !f.Pass || len(f.Inconsistent) != 1 {
		t.Errorf("pass %v, reasons %q, %d differing cases; want a pass listing the one case", f.Pass, f.Reasons, len(f.Inconsistent))
	}
}

// TestMixedFleetNeedsCapability: two GPU nodes, one whose device answers
// host atomics yes (a coherent, NVLink-C2C part) and one that answers no
// (a PCIe H200). The vmm-host counter case passes on the first and loses
// updates on the second: the loss is what the second's hardware predicts
// (its needs= label names the capability, answered from the node's typed
// caps), so the fleet passes and lists the case as differing. The same
// loss on a node whose device says yes is a real failure, and fails the
// fleet naming the case. a44624c's p2pfleet failed the first fleet on
// outcome != expected; the attribute-keyed needs= rule failed it too.
func TestMixedFleetNeedsCapability(t *testing.T) {
	const id = "cuda.vmm-host.counter.add_u64_relaxed_sys"
	labels := []string{"cuda", "vmm-host", "counter", "atomics", report.Needs(device.CapHostAtomics)}
	env := func(hostAtomics bool) map[string]any {
		gpu := map[string]any{"vendor": "nvidia", "name": "NVIDIA H200", "arch": "sm_90", "ordinal": float64(0), "count": float64(1),
			"caps": map[string]any{"host_atomics": map[string]any{"ok": hostAtomics, "reason": fmt.Sprintf("host native atomics %v", hostAtomics)}}}
		return map[string]any{"vendor": "nvidia", "flags": map[string]any{"ranks": float64(2)}, "gpus": []any{gpu}}
	}
	pass := report.Result{Case: report.ParseCase(id, nil), Labels: labels, Outcome: report.Pass, Expected: report.Pass}
	lost := report.Result{Case: report.ParseCase(id, nil), Labels: labels, Outcome: report.Fail, Expected: report.Pass, Detail: "lost updates: 81760"}
	other := report.Result{Case: report.ParseCase("cuda.vmm.counter.add_u64_relaxed_sys", nil), Labels: []string{"cuda", "vmm", "counter"}, Outcome: report.Pass, Expected: report.Pass}
	fleet := func(lostOnCapable bool) *Fleet {
		return Merge([]Node{
			{Name: "c2c", Report: &report.Report{Schema: 1, Environment: report.EnvironmentOf(env(true)), Results: []report.Result{pass, other}}},
			{Name: "pcie", Report: &report.Report{Schema: 1, Environment: report.EnvironmentOf(env(lostOnCapable)), Results: []report.Result{lost, other}}},
		})
	}
	f := fleet(false)
	if !f.Pass || len(f.Inconsistent) != 1 || len(f.Inconsistent[0].Passing) != 2 {
		t.Fatalf("predicted loss: pass %v, reasons %q, differing %+v; want a pass listing the case met on both", f.Pass, f.Reasons, f.Inconsistent)
	}
	if f.Nodes[1].Verdict != "pass" || f.Nodes[1].Unmet != 0 {
		t.Errorf("node pcie: %+v, want pass (not supported is not unmet)", f.Nodes[1])
	}
	f = fleet(true)
	if f.Pass || len(f.Reasons) == 0 || !strings.Contains(strings.Join(f.Reasons, "\n"), "case "+id+": met on c2c, not on pcie") {
		t.Errorf("a real loss on a capable device: pass %v, reasons %q", f.Pass, f.Reasons)
	}
}

// A metric declared lower-is-better in a unit the old unit rule called a
// rate: the committed 2-GPU run's copy-engine bandwidth, re-declared
// lower in every node's results.json (written and read back, so the
// "better" field travels). A node at half the fleet is then a low outlier
// on the good side and the fleet's metrics do not fail it; a node at
// twice is a high outlier on the bad side and does. The unit rule
// flagged the halved node bad and passed the doubled one.
func TestFleetReadsTheDeclaredDirection(t *testing.T) {
	base := recorded("h200x2-580.159.04")
	const id, metric = "cuda.vmm.perf.copy_ce_write.r0r1", "bw_ce_write_gbps"
	declared := func() *report.Report {
		rep := load(t, base)
		for i := range rep.Results {
			if m, ok := rep.Results[i].Metrics[metric]; ok {
				m.Better = report.Lower
				rep.Results[i].Metrics[metric] = m
			}
		}
		return rep
	}
	for _, c := range []struct {
		f        float64
		side     string
		bad      bool
		reasoned bool
	}{{0.5, "low", false, false}, {2, "high", true, true}} {
		dir := t.TempDir()
		var ns []Node
		for _, n := range []string{"gpu-01", "gpu-02", "gpu-03", "gpu-04"} {
			rep := declared()
			if n == "gpu-04" {
				scaleMetric(rep, id, metric, c.f)
			}
			p := writeNode(t, dir, n, rep)
			ns = append(ns, Node{Name: n, File: p, Report: load(t, filepath.Join(p, "results.json"))})
		}
		f := Merge(ns)
		var got *NodeValue
		for i, m := range f.Metrics {
			if m.Case == id && m.Metric == metric {
				if m.Better != "lower" {
					t.Errorf("×%v: better %q, want lower (declared)", c.f, m.Better)
				}
				got = &f.Metrics[i].Nodes[3]
			}
		}
		if got == nil {
			t.Fatalf("×%v: no %s %s in the fleet's metrics", c.f, id, metric)
		}
		reasoned := strings.Contains(strings.Join(f.Reasons, "\n"), "metric "+id+" "+metric+": node gpu-04")
		if got.Outlier != c.side || got.Bad != c.bad || reasoned != c.reasoned {
			t.Errorf("×%v: gpu-04 %+v, a fleet reason %v; want a %s outlier, bad=%v, reason %v\n%s", c.f, *got, reasoned, c.side, c.bad, c.reasoned, strings.Join(f.Reasons, "\n"))
		}
	}
}

// Issue 49 S3: a node whose record lies (a passing case recorded as a
// crash, its verdict left "expected", its summary PASS) fails --gate: the
// fleet judges every node again from its outcomes. Before: fleet: PASS.
func TestGateRejudgesARecordedLie(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Dir(fixture.Planted(t, filepath.Join(dir, "a"), nil))
	b := filepath.Dir(fixture.Planted(t, filepath.Join(dir, "b"), fixture.CrashMarkedExpected(t)))
	code, out, errs := runCLI(t, "--gate", a, b)
	if code != 1 || !strings.Contains(out, "\nfleet: FAIL") || !strings.Contains(out, "b: 1 case of 14 did not meet") {
		t.Errorf("a lying node: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--gate", a); code != 0 {
		t.Errorf("the fixture alone: exit %d\n%s%s", code, out, errs)
	}
}

// Issue 49 B6: --html and --json never write through another user's
// symlink in a sticky folder: one line, exit 2, the target untouched.
// Before: os.Create followed the link and root's file held the page.
func TestFleetOutputsRefuseAForeignLink(t *testing.T) {
	node := filepath.Dir(fixture.Planted(t, filepath.Join(t.TempDir(), "n1"), nil))
	for _, flag := range []string{"--html", "--json"} {
		victim := fixture.Victim(t)
		link := fixture.ForeignLink(t, "fleet.out", victim)
		code, _, errs := runCLI(t, flag+"="+link, node)
		if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, flag+"="+link) {
			t.Errorf("%s through a foreign link: exit %d, stderr %q", flag, code, errs)
		}
		fixture.Untouched(t, victim)
	}
}

// Issue 49 U21: the report ends on the verdict, counted, not on one line
// per case met on some nodes only (a broken path ended a 3-node report on
// 123 such lines); each per-case list shows shownCases and counts the rest.
func TestReportEndsOnTheVerdict(t *testing.T) {
	saved := shownCases
	t.Cleanup(func() { shownCases = saved })
	shownCases = 3
	dir := t.TempDir()
	var nodes []string
	for _, n := range []string{"a", "b", "c"} {
		nodes = append(nodes, filepath.Dir(fixture.Planted(t, filepath.Join(dir, n), func(d map[string]any) {
			if n != "c" {
				return
			}
			for _, r := range d["results"].([]any) {
				if m := r.(map[string]any); strings.HasSuffix(m["id"].(string), ".after") {
					m["outcome"] = "fail"
				}
			}
		})))
	}
	code, out, _ := runCLI(t, append([]string{"--gate"}, nodes...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.HasPrefix(last, "fleet: FAIL — 1 of 3 nodes failing (c); 7 cases met on some nodes and missed on others; 0 gating outliers") {
		t.Errorf("exit %d, last line %q", code, last)
	}
	if n := strings.Count(out, "\n  case host.memfd.canary."); n != 3 || !strings.Contains(out, "… and 4 more cases met on some nodes") || !strings.Contains(out, "  … and 4 more (--json lists every one)") {
		t.Errorf("%d per-case reason lines, want 3 and a count of the rest:\n%s", n, out)
	}
	if code, out, _ := runCLI(t, nodes[:2]...); code != 0 || !strings.HasPrefix(lines0(out), "fleet: PASS — 2 nodes") {
		t.Errorf("two healthy nodes: exit %d, last line %q", code, lines0(out))
	}
}

// lines0 is the last line of out.
func lines0(out string) string {
	l := strings.Split(strings.TrimSpace(out), "\n")
	return l[len(l)-1]
}
