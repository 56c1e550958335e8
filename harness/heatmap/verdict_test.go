package heatmap

import (
	"encoding/json"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

func res(id string, out, exp report.Outcome, detail string, labels ...string) report.Result {
	return report.Result{Case: report.ParseCase(id, nil), Outcome: out, Expected: exp, Detail: detail, Labels: labels}
}

// TestClassify: the four states from outcome, expected outcome and verdict,
// by the run's verdict rule (report.Unexpected, report.NotSupportedReason).
func TestClassify(t *testing.T) {
	attr := `device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0", need 1 for CPU and GPU system-scope atomics on one word`
	cases := []struct {
		r    report.Result
		want State
	}{
		{res("a", report.Pass, report.Pass, ""), Met},
		{res("planted", report.Fail, report.Fail, ""), Met},
		{res("canary", report.Crash, report.Crash, ""), Met},
		{res("lost", report.Fail, report.Pass, "lost 9"), Unmet},
		{res("crash", report.Crash, report.Pass, ""), Unmet},
		{res("cpugpu", report.Skip, report.Pass, attr), NotSupported},
		{res("racy_cpu", report.Skip, report.Fail, attr), NotSupported},
		{res("hip", report.Skip, report.Pass, "hipMemAllocationTypeUncached not supported by this runtime"), NotSupported},
		// Any skip is not-supported, as the verdict line counts it (the
		// harness skips only for a capability the machine lacks), whatever
		// words its reason uses; gated, one that passed in the baseline is
		// a regression and unmet.
		{res("why", report.Skip, report.Pass, "backend cuda unavailable: no device"), NotSupported},
		{func() report.Result {
			r := res("gone", report.Skip, report.Pass, "backend cuda unavailable: no device")
			r.Verdict, r.NotSupported = report.Regression, r.Detail
			return r
		}(), Unmet},
		// A fail a device's missing needs= attribute predicts: judged
		// expected-fail and not-supported, it is not-supported.
		{func() report.Result {
			r := res("needs", report.Fail, report.Pass, "lost 3")
			r.Verdict, r.NotSupported = report.ExpectedFail, "device 0: HOST_NATIVE_ATOMIC_SUPPORTED is 0"
			return r
		}(), NotSupported},
		{func() report.Result {
			r := res("known", report.Fail, report.Pass, "")
			r.Verdict = report.ExpectedFail
			return r
		}(), ExpectedFail},
		{func() report.Result {
			r := res("flaky", report.Fail, report.Pass, "")
			r.Verdict = report.KnownFlake
			return r
		}(), Met},
		{func() report.Result {
			r := res("regressed", report.Fail, report.Pass, "")
			r.Verdict = report.Regression
			return r
		}(), Unmet},
		{func() report.Result {
			r := res("fixed", report.Pass, report.Pass, "")
			r.Verdict = report.UnexpectedPass
			return r
		}(), Unmet},
	}
	for _, c := range cases {
		if got := Classify(c.r); got != c.want {
			t.Errorf("%s (%s, expected %s, verdict %q): %s, want %s", c.r.ID(), c.r.Outcome, c.r.Expected, c.r.Verdict, got, c.want)
		}
	}
}

func run4() []report.Result {
	var rs []report.Result
	for _, kind := range []string{"vmm", "vmm-host"} {
		rs = append(rs,
			res("cuda."+kind+".counter.add_u64_relaxed_sys", report.Pass, report.Pass, ""),
			res("cuda."+kind+".counter.add_u32_relaxed_sys", report.Pass, report.Pass, ""),
			res("cuda."+kind+".pairs.add_u64_relaxed_sys.r0r1", report.Pass, report.Pass, "", "atomics", "pair=0-1"),
			res("cuda."+kind+".pairs.add_u64_relaxed_sys.r1r0", report.Pass, report.Pass, "", "atomics", "pair=1-0"),
			res("cuda."+kind+".perf.copy_ce_write.r0r1", report.Pass, report.Pass, "", "perf", "pair=0-1"),
			res("cuda."+kind+".cpugpu.add_u64_relaxed_sys", report.Skip, report.Pass, "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is 0"),
		)
	}
	return rs
}

// TestVerdictMatrix: a planted unmet case turns its family × kind cell
// unmet, names the outcome and counts; the other cells stay met.
func TestVerdictMatrix(t *testing.T) {
	rs := run4()
	g := VerdictMatrix(rs)
	if strings.Join(g.Rows, " ") != "counter pairs perf cpugpu" || strings.Join(g.Cols, " ") != "cuda.vmm cuda.vmm-host" {
		t.Fatalf("rows %v cols %v", g.Rows, g.Cols)
	}
	if len(g.Unmet()) != 0 {
		t.Fatalf("clean run has unmet cells %v", g.Unmet())
	}
	if c := g.Cells[[2]string{"cpugpu", "cuda.vmm"}]; c.Worst != NotSupported {
		t.Errorf("cpugpu: %+v", c)
	}
	rs[7].Outcome = report.Crash // planted: cuda.vmm-host.counter.add_u32_relaxed_sys crashes
	g = VerdictMatrix(rs)
	if u := g.Unmet(); len(u) != 1 || u[0] != [2]string{"counter", "cuda.vmm-host"} {
		t.Fatalf("unmet cells %v", u)
	}
	text := parse(t, g.SVG("test machine"))
	for _, want := range []string{"UNMET: crash", "1 unmet, 1 met", "all met", "2 met", "not supported: skip", "test machine", "expected-fail"} {
		if !strings.Contains(text, want) {
			t.Errorf("verdict SVG lacks %q:\n%s", want, text)
		}
	}
}

// TestPairVerdicts: one grid per kind, ordered pairs as rows, atomics specs
// first, the outcome word in each cell and the planted unmet pair marked.
func TestPairVerdicts(t *testing.T) {
	rs := run4()
	rs[9].Outcome = report.Fail // cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0
	gs := PairVerdicts(rs)
	if len(gs) != 2 || gs[1].Kind != "cuda.vmm-host" || gs[1].File != "verdict.cuda.vmm-host.pairs.svg" {
		t.Fatalf("grids %+v", gs)
	}
	g := gs[1]
	if strings.Join(g.Rows, " ") != "0→1 1→0" || strings.Join(g.Cols, " ") != "pairs.add_u64_relaxed_sys perf.copy_ce_write" {
		t.Fatalf("rows %v cols %v", g.Rows, g.Cols)
	}
	if u := g.Unmet(); len(u) != 1 || u[0] != [2]string{"1→0", "pairs.add_u64_relaxed_sys"} {
		t.Fatalf("unmet %v", u)
	}
	text := parse(t, g.SVG(""))
	if !strings.Contains(text, "fail\nUNMET") || !strings.Contains(text, "none") {
		t.Errorf("pair grid text:\n%s", text)
	}
	if len(gs[0].Unmet()) != 0 {
		t.Errorf("vmm grid: %v", gs[0].Unmet())
	}
}

// TestExport: nvbandwidth's shape, nulls where no case measured a pair.
func TestExport(t *testing.T) {
	rs := []report.Result{
		bw("c.k.perf.copy_ce_read.r0r1", nil, map[string]report.Metric{"bw_ce_read_gbps": gbps(380)}),
		bw("c.k.perf.copy_ce_read.r1r0", nil, map[string]report.Metric{"bw_ce_read_gbps": gbps(390)}),
		bw("c.k.perf.copy_ce_read.r2r0", nil, map[string]report.Metric{"bw_ce_read_gbps": gbps(400)}),
	}
	ms := Export(rs)
	if len(ms) != 1 {
		t.Fatalf("%+v", ms)
	}
	m := ms[0]
	b, _ := json.Marshal(m.Matrix)
	if string(b) != "[[null,380,null],[390,null,null],[400,null,null]]" {
		t.Errorf("matrix %s", b)
	}
	if m.Sum != 1170 || m.Min != 380 || m.Max != 400 || m.Average != 390 || m.Direction != "GPU(row) <- GPU(column)" ||
		m.Unit != "GB/s" || m.Metric != "bw_ce_read_gbps" || m.Name != "c.k.perf.copy_ce_read" {
		t.Errorf("%+v", m)
	}
	if Export(nil) != nil {
		t.Error("no pairs: want nil (omitted)")
	}
}
