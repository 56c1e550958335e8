package heatmap

import (
	"strings"
	"testing"

	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

func res(id string, out, exp report.Outcome, detail string, labels ...string) report.Result {
	return report.Result{Case: report.ParseCase(id, labels), Outcome: out, Expected: exp, Detail: detail, Labels: labels}
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
	if c := g.Cells[[2]string{"cpugpu", "cuda.vmm"}]; c.Worst != pairs.NotSupported {
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
