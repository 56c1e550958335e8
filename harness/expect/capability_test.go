package expect

import (
	"strings"
	"testing"

	"p2patomics/internal/device"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// h200Run is the committed one-GPU H200 run (testdata/runs: gzipped from
// results/, which tests never read) and its baseline: the device
// answers HOST_NATIVE_ATOMIC_SUPPORTED 0, the six cpugpu cases skip, and
// fails.txt lists them as skip.
const (
	h200Run      = "../../testdata/runs/h200x1-580.159.04/results.json.gz"
	h200Baseline = "../../expectations/nvidia-sm_90-580-x1"
)

// advertiseHostAtomics is adversary 2026-12c 2d's edit of the committed
// run: the device now advertises host atomics, yet the six cpugpu cases
// still skip, with the launch's own not-supported. It returns how many
// results it changed.
func advertiseHostAtomics(rep *report.Report) int {
	for i := range rep.Environment.GPUs {
		rep.Environment.GPUs[i].Caps.HostAtomics = device.Yes(`device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "1"`)
	}
	n := 0
	for i, r := range rep.Results {
		if r.Spec == "cpugpu" && r.Outcome == report.Skip {
			rep.Results[i].Detail = "cuLaunchKernel: CUDA_ERROR_NOT_SUPPORTED (801)"
			n++
		}
	}
	return n
}

// TestCapabilityLostGatesTheH200Repro (issue 37 item 2): a recorded run
// whose device advertises host-native atomics but whose cpugpu cases still
// skip as not supported FAILs against the baseline that lists them as
// skip, gated and ungated, each case capability-lost naming the attribute
// and what the call said; the committed run as recorded still PASSes.
// Fails on the old behaviour (JudgeOne without the CapabilityLost check:
// PASS — 371 cases, 0 unexpected, 6 not supported).
func TestCapabilityLostGatesTheH200Repro(t *testing.T) {
	set, err := Load([]string{h200Baseline})
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := report.Read(h200Run)
	if err != nil {
		t.Fatal(err)
	}
	if err := JudgeReport(healthy, Rejudge{Set: set, Gate: h200Baseline}); err != nil {
		t.Fatal(err)
	}
	if healthy.Summary.Verdict != report.VerdictPass || len(healthy.Summary.NotSupported) != 6 {
		t.Fatalf("the committed run: %s", healthy.Summary.Line)
	}
	for _, gated := range []bool{true, false} {
		rep, err := report.Read(h200Run)
		if err != nil {
			t.Fatal(err)
		}
		if n := advertiseHostAtomics(rep); n != 6 {
			t.Fatalf("edited %d cpugpu skips, want 6", n)
		}
		rj := Rejudge{}
		if gated {
			rj = Rejudge{Set: set, Gate: h200Baseline}
		}
		if err := JudgeReport(rep, rj); err != nil {
			t.Fatal(err)
		}
		sum := rep.Summary
		if sum.Verdict != report.VerdictFail || sum.ByVerdict[report.CapabilityLost] != 6 || len(sum.NotSupported) != 0 {
			t.Errorf("gated=%v: %s (by verdict %v)", gated, sum.Line, sum.ByVerdict)
		}
		for _, r := range rep.Results {
			if r.Spec != "cpugpu" || r.Outcome != report.Skip {
				continue
			}
			if !strings.Contains(r.CapabilityLost, "host_atomics") || !strings.Contains(r.CapabilityLost, `SUPPORTED is "1"`) ||
				!strings.Contains(r.CapabilityLost, "CUDA_ERROR_NOT_SUPPORTED (801)") {
				t.Errorf("gated=%v %s: %q does not name the attribute and what the call said", gated, r.ID(), r.CapabilityLost)
			}
		}
		if gated && (rep.Gate == nil || rep.Gate.Pass || !strings.HasPrefix(rep.Gate.Reasons[0], "capability lost: ")) {
			t.Errorf("gate %+v", rep.Gate)
		}
	}
}

// TestCapabilityLostOnHost: the host backend's capability table lists
// memfd, so a not-supported reply on its import (what an injected
// NOT_SUPPORTED gives) is capability-lost, ungated and gated, planted
// bugs and controls included; a device's own "no" in the detail, a needs=
// capability the device answered no, a missing entry and a GPU backend's
// refusal of a kind are not. Fails on the old behaviour (ungated: PASS,
// every case not supported).
func TestCapabilityLostOnHost(t *testing.T) {
	hostEnv := report.Environment{GPUs: []report.GPU{{Info: device.Info{Vendor: backends.HostName, Caps: device.Caps{HostAtomics: device.Yes("host: the CPU is the device (sync/atomic)")}}}}}
	refused := "rank 1 import: host: fstat imported fd: not supported"
	mk := func(id string, expected report.Outcome, labels ...string) report.Result {
		r := res(id, report.Skip, expected)
		r.Labels, r.Detail = labels, refused
		return r
	}
	results := []report.Result{
		mk("host.memfd.counter.add_u64_relaxed_sys", report.Pass),
		mk("host.memfd.planted.racy_u64_plain_sys", report.Fail, "control", "planted"),
		mk("host.memfd.noaccess.write", report.Crash, "control"),
	}
	for _, s := range []*Set{nil, NewSet()} {
		_, _, sum := JudgeRun(results, s, hostEnv, nil, "", "")
		if sum.Verdict != report.VerdictFail || sum.ByVerdict[report.CapabilityLost] != 3 || len(sum.NotSupported) != 0 {
			t.Errorf("gated=%v: %s", s != nil, sum.Line)
		}
		if !strings.Contains(sum.Line, "capability lost: the host backend's capability table lists kind memfd") {
			t.Errorf("the line does not say what was lost: %s", sum.Line)
		}
	}
	gpuNo := report.Environment{GPUs: []report.GPU{{Info: device.Info{Caps: device.Caps{HostAtomics: device.No("device 0: HOST_NATIVE is 0")}}}}}
	gpuYes := report.Environment{GPUs: []report.GPU{{Info: device.Info{Caps: device.Caps{HostAtomics: device.Yes("device 0: HOST_NATIVE is 1")}}}}}
	cpugpu := func(detail string) report.Result {
		r := res("cuda.vmm-host.cpugpu.add_u64_relaxed_sys", report.Skip, report.Pass)
		r.Labels, r.Detail = []string{"needs=host_atomics"}, detail
		return r
	}
	missing := mk("host.memfd.gone", report.Pass)
	missing.Verdict = report.Missing
	for name, c := range map[string]struct {
		r   report.Result
		env report.Environment
	}{
		"the device said no":              {cpugpu("device 0: HOST_NATIVE is 0"), gpuNo},
		"the needed capability is no":     {cpugpu("cuLaunchKernel: CUDA_ERROR_NOT_SUPPORTED (801)"), gpuNo},
		"the kind's own alloc refused":    {cpugpu("rank 0 alloc: cuda: CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0 on device 0"), gpuYes},
		"a gate's missing entry":          {missing, hostEnv},
		"a GPU kind with no needs= label": {res("cuda.dmabuf.fdexchange.pattern", report.Skip, report.Pass), gpuYes},
	} {
		if got := CapabilityLost(c.r, c.env); got != "" {
			t.Errorf("%s: capability-lost %q", name, got)
		}
	}
	if got := CapabilityLost(cpugpu("cuLaunchKernel: CUDA_ERROR_NOT_SUPPORTED (801)"), gpuYes); got == "" {
		t.Error("a launch refused on a device that advertises host atomics is not capability-lost")
	}
}

// TestNotRunAndLostControls (issue 37 item 3): a case judged without
// running is outcome not-run, never an improvement and never expected on
// its own; a control, planted bug or expected failure that ends skip,
// error or not-run is a regression saying "control lost"; only a pass is
// an improvement. Fails on the old behaviour (the judged case was a skip
// and an expected crash ending skip or error was unexpected-improvement).
func TestNotRunAndLostControls(t *testing.T) {
	s := NewSet()
	s.Fails["host.memfd.skipped.kind"] = report.Skip
	s.Fails["host.memfd.known.crash"] = report.Crash
	notRun := func(id string, expected, from report.Outcome, labels ...string) report.Result {
		r := res(id, report.NotRunOutcome, expected)
		r.Labels = append([]string{}, labels...)
		r.JudgedFrom = &report.JudgedFrom{Case: "host.memfd.first", Outcome: from}
		r.Detail = "not run: judged from host.memfd.first"
		return r
	}
	control := res("host.memfd.noaccess.write", report.Error, report.Crash)
	control.Labels = []string{"control"}
	for _, c := range []struct {
		r    report.Result
		want report.Verdict
		says string
	}{
		{notRun("host.memfd.counter.add", report.Pass, report.Error), report.Regression, "judged from host.memfd.first, which ended error"},
		{notRun("host.memfd.planted.racy", report.Fail, report.Skip, "planted"), report.Regression, "control lost"},
		{notRun("host.memfd.skipped.kind", report.Pass, report.Skip), report.ExpectedFail, "expected fail"},
		{notRun("host.memfd.skipped.kind", report.Pass, report.Error), report.Regression, "skip → not-run"},
		{control, report.Regression, "control lost"},
		{res("host.memfd.known.crash", report.Skip, report.Pass), report.Regression, "control lost"},
		{res("host.memfd.known.crash", report.Pass, report.Pass), report.UnexpectedPass, "unexpected pass"},
	} {
		out, _ := Gate([]report.Result{c.r}, s, nil)
		if got := out[0].Verdict; got != c.want || !strings.Contains(Reason(out[0], s), c.says) {
			t.Errorf("%s %s: %s (%s), want %s saying %q", c.r.ID(), c.r.Outcome, got, Reason(out[0], s), c.want, c.says)
		}
	}
	// Ungated, a judged control is lost even where its kind was not
	// supported; a judged ordinary case of a not-supported kind is
	// not-supported, as the case it was judged from.
	_, _, sum := JudgeRun([]report.Result{notRun("cuda.vmm.planted.racy", report.Fail, report.Skip, "planted")}, nil, report.Environment{}, nil, "", "")
	if sum.Verdict != report.VerdictFail || !strings.Contains(sum.Line, "control lost: not run, judged from host.memfd.first") {
		t.Errorf("ungated judged control: %s", sum.Line)
	}
	_, _, sum = JudgeRun([]report.Result{notRun("cuda.dmabuf.counter.add", report.Pass, report.Skip)}, nil, report.Environment{}, nil, "", "")
	if sum.Verdict != report.VerdictPass || len(sum.NotSupported) != 1 {
		t.Errorf("ungated judged not-supported case: %s", sum.Line)
	}
}
