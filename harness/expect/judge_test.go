package expect

import (
	"strings"
	"testing"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// h200Env is a PCIe H200's environment ("0": no host-native atomics) in
// its results.json shape: the typed answer the verdict reads, the raw
// attribute beside it.
func h200Env(hostNative string) map[string]any {
	return map[string]any{"vendor": "nvidia", "gpus": []any{
		map[string]any{"ordinal": 0, "arch": "sm_90", "attrs": map[string]any{"host_native_atomic_supported": hostNative},
			"caps": map[string]any{"host_atomics": map[string]any{"ok": hostNative == "1", "reason": "HOST_NATIVE_ATOMIC_SUPPORTED is " + hostNative}}}}}
}

var (
	needsLabel = []string{"cuda", "vmm-host", "counter", "atomics", report.Needs(device.CapHostAtomics)}
	vmmHostAdd = report.Result{Case: report.ParseCase("cuda.vmm-host.counter.add_u64_relaxed_sys", nil), Labels: needsLabel,
		Outcome: report.Fail, Expected: report.Pass, Detail: "lost updates: 81760"}
	cpugpu = report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.add_u64_relaxed_sys", nil), Labels: []string{"cuda", "vmm", "cpugpu"},
		Outcome: report.Skip, Expected: report.Pass, Detail: `device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0", need 1`}
	canary = report.Result{Case: report.ParseCase("cuda.vmm.canary.purego_segv", nil), Outcome: report.Crash, Expected: report.Crash}
	pass   = report.Result{Case: report.ParseCase("cuda.vmm.counter.add_u64_relaxed_sys", nil), Outcome: report.Pass, Expected: report.Pass}
)

// A healthy 2xH200 without a baseline: the cpugpu skips and the vmm-host
// losses are not-supported (evidence kept), the canary met: PASS, exit 0.
func TestJudgeRunUngatedNotSupported(t *testing.T) {
	results, g, s := JudgeRun([]report.Result{pass, canary, cpugpu, vmmHostAdd}, nil, report.EnvironmentOf(h200Env("0")), nil, "", "out")
	if g != nil || s.ExitStatus != 0 || s.Verdict != "PASS" {
		t.Fatalf("healthy H200 without baseline: %s exit %d, line %q", s.Verdict, s.ExitStatus, s.Line)
	}
	if len(s.NotSupported) != 2 {
		t.Errorf("not-supported listed apart: %+v", s.NotSupported)
	}
	if v := results[3]; v.Verdict != report.ExpectedFail || !strings.Contains(v.NotSupported, "lost updates: 81760") || v.Outcome != report.Fail {
		t.Errorf("vmm-host loss: verdict %s, reason %q, outcome %s (want expected-fail, evidence kept, outcome fail)", v.Verdict, v.NotSupported, v.Outcome)
	}
	// The same loss where the device says it has the capability is a
	// regression.
	_, _, s = JudgeRun([]report.Result{pass, vmmHostAdd}, nil, report.EnvironmentOf(h200Env("1")), nil, "", "out")
	if s.ExitStatus != 1 || !strings.HasPrefix(s.Line, "p2patomics: FAIL — 1 regression: cuda.vmm-host.counter.add_u64_relaxed_sys pass → fail (out/cases/cuda.vmm-host.counter.add_u64_relaxed_sys/)") {
		t.Errorf("loss with the capability present: exit %d, line %q", s.ExitStatus, s.Line)
	}
	// An unexpected crash is never excused.
	crash := pass
	crash.Outcome = report.Crash
	if _, _, s := JudgeRun([]report.Result{crash}, nil, report.EnvironmentOf(h200Env("0")), nil, "", "out"); s.ExitStatus != 1 {
		t.Errorf("unexpected crash passed: %q", s.Line)
	}
}

func gateSet(t *testing.T, fails string) *Set {
	dir := t.TempDir()
	write(t, dir, FailsFile, "# stack: vendor=nvidia arch=sm_90 driver=580\n"+fails)
	write(t, dir, CasesFile, strings.Join([]string{pass.ID(), canary.ID(), cpugpu.ID(), vmmHostAdd.ID()}, "\n")+"\n")
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Gated: the gate decides. Expected failures give exit 0; a planted
// unexpected pass and a case that passed in the baseline and is not
// supported now give exit 1.
func TestJudgeRunGated(t *testing.T) {
	s := gateSet(t, "# no host-native atomics\n"+cpugpu.ID()+",skip\n"+vmmHostAdd.ID()+",fail\n")
	all := []report.Result{pass, canary, cpugpu, vmmHostAdd}
	results, g, sum := JudgeRun(all, s, report.EnvironmentOf(h200Env("0")), nil, "expectations/x", "out")
	if g == nil || !g.Pass || sum.ExitStatus != 0 {
		t.Fatalf("gated run with expected failures: exit %d, %q, gate %+v", sum.ExitStatus, sum.Line, g)
	}
	if results[3].Verdict != report.ExpectedFail || results[3].Baseline != report.Fail {
		t.Errorf("listed fail: verdict %s baseline %q", results[3].Verdict, results[3].Baseline)
	}
	// Planted unexpected pass: the baseline says fail, it passed.
	fixed := vmmHostAdd
	fixed.Outcome, fixed.Detail = report.Pass, ""
	_, _, sum = JudgeRun([]report.Result{pass, canary, cpugpu, fixed}, s, report.EnvironmentOf(h200Env("0")), nil, "expectations/x", "out")
	if sum.ExitStatus != 1 || !strings.Contains(sum.Line, "1 unexpected-pass: "+fixed.ID()+" fail → pass") {
		t.Errorf("planted unexpected pass: exit %d, line %q", sum.ExitStatus, sum.Line)
	}
	// A baseline where cpugpu passed: not supported now is a regression.
	s2 := gateSet(t, "")
	_, _, sum = JudgeRun([]report.Result{pass, canary, cpugpu}, s2, report.EnvironmentOf(h200Env("0")), func(string) bool { return false }, "expectations/y", "out")
	if sum.ExitStatus != 1 || len(sum.Unexpected) != 1 || sum.Unexpected[0].ID != cpugpu.ID() || sum.Unexpected[0].Verdict != report.Regression {
		t.Errorf("passed in the baseline, not supported now: %+v", sum)
	}
	if len(sum.NotSupported) != 1 {
		t.Errorf("the regression is still named not-supported: %+v", sum.NotSupported)
	}
}

// failures.csv (the suite's, deqp-runner's shape) loads as a fails.txt.
func TestFailuresCSVIsABaseline(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, FailuresCSV, vmmHostAdd.ID()+",Fail\n"+cpugpu.ID()+",Skip\n")
	s, err := Load([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	if s.Fails[vmmHostAdd.ID()] != report.Fail || s.Fails[cpugpu.ID()] != report.Skip {
		t.Errorf("failures.csv as baseline: %v", s.Fails)
	}
}
