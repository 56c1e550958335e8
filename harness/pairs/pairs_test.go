package pairs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

func bw(id string, labels []string, metrics map[string]report.Metric) report.Result {
	return report.Result{Case: report.ParseCase(id, labels), Labels: labels, Outcome: report.Pass, Expected: report.Pass, Metrics: metrics}
}

func gbps(v float64) report.Metric {
	return report.Metric{Unit: "GB/s", Median: v, Min: v - 1, Max: v + 1, N: 5, Method: "cuda-events"}
}

func sample() []report.Result {
	return []report.Result{
		bw("cuda.vmm.perf.copy_ce_write.r0r1", []string{"cuda", "vmm", "perf", "pair=0-1"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(396.2), "lat_rt_us": {Unit: "us", Median: 0.91, Min: 0.9, Max: 0.95, N: 9, Method: "ping-pong"}}),
		bw("cuda.vmm.perf.copy_ce_write.r1r0", []string{"cuda", "vmm", "perf", "pair=1-0"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(391.7), "lat_rt_us": {Unit: "us", Median: 0.93, N: 9}}),
		bw("cuda.vmm.perf.copy_ce_write.r0r0", []string{"cuda", "vmm", "perf", "pair=0-0"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(1800)}),
		bw("cuda.ipc.perf.copy_ce_write.r0r1", []string{"cuda", "ipc", "perf"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(390.1)}),
		bw("cuda.vmm.counter.add_u64_relaxed_sys", []string{"cuda", "vmm"}, map[string]report.Metric{"ops": {Unit: "Mops/s", Median: 3}}), // no pair: ignored
		bw("cuda.vmm.perf.sm_copy.x", []string{"pair=0-1", "<&>"}, nil), // no metrics: ignored
	}
}

func TestPairAndFamily(t *testing.T) {
	cases := []struct {
		r      report.Result
		s, d   int
		ok     bool
		family string
	}{
		{bw("a.b.c.v", []string{"pair=1-2"}, nil), 1, 2, true, "a.b.c.v"},
		// The spellings nothing produces are no pair: src=/dst= labels,
		// a g<i>g<j> field, a malformed label.
		{bw("a.b.c.v", []string{"src=4", "dst=0"}, nil), 0, 0, false, "a.b.c.v"},
		{bw("a.b.c.v.g2g7", nil, nil), 0, 0, false, "a.b.c.v.g2g7"},
		{bw("a.b.c.v", []string{"pair=x-1"}, nil), 0, 0, false, "a.b.c.v"},
		// The suite's own ids: rank pairs, and ".r4" for a 4-rank world,
		// which is part of the family (a single number, not a pair).
		{bw("cuda.vmm.perf.copy_ce_write.r2r3.r4", nil, nil), 2, 3, true, "cuda.vmm.perf.copy_ce_write.r4"},
		{bw("cuda.vmm.perf.copy_ce_write.r1r0", []string{"pair=1-0"}, nil), 1, 0, true, "cuda.vmm.perf.copy_ce_write"},
		// A pair case whose id names no pair is its own family.
		{bw("host.memfd.perf.pingpong_latency_local", []string{"pair=0-0"}, nil), 0, 0, true, "host.memfd.perf.pingpong_latency_local"},
	}
	for _, c := range cases {
		s, d, ok := Pair(c.r)
		if s != c.s || d != c.d || ok != c.ok {
			t.Errorf("Pair(%s %v) = %d %d %v", c.r.ID(), c.r.Labels, s, d, ok)
		}
		if f := Family(c.r); f != c.family {
			t.Errorf("Family(%s) = %s, want %s", c.r.ID(), f, c.family)
		}
	}
}

func TestMatrices(t *testing.T) {
	ms := Matrices(sample())
	var files []string
	for _, m := range ms {
		files = append(files, m.File)
	}
	// One naming scheme: <family>.<metric>.svg even where a metric occurs
	// in one family only (a single-family run names files as the suite does).
	want := []string{"cuda.ipc.perf.copy_ce_write.bw_ce_write_gbps.svg", "cuda.vmm.perf.copy_ce_write.bw_ce_write_gbps.svg", "cuda.vmm.perf.copy_ce_write.lat_rt_us.svg"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files = %v", files)
	}
	vmm := ms[1]
	if vmm.Size != 2 || len(vmm.Cells) != 3 || vmm.Cells[[2]int{1, 0}].Metric.Median != 391.7 || vmm.Unit != "GB/s" {
		t.Errorf("vmm matrix = %+v", vmm)
	}
}

// TestFlow: every copy direction is captioned the way its data moves.
func TestFlow(t *testing.T) {
	for fam, want := range map[string]string{
		"cuda.vmm.perf.copy_ce_read.r4":      "GPU(row) <- GPU(column)",
		"cuda.vmm.perf.copy_kernel_write":    "GPU(row) -> GPU(column)",
		"cuda.vmm.perf.copy_ce_bidir":        "GPU(row) <-> GPU(column)",
		"cuda.vmm.perf.pingpong_latency":     "GPU(row) <-> GPU(column)",
		"cuda.vmm.pairs.add_u64_relaxed_sys": "GPU(row) -> GPU(column)",
	} {
		if got, _ := (&Matrix{Family: fam}).Flow(); got != want {
			t.Errorf("%s: %s, want %s", fam, got, want)
		}
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{396.24: "396", 39.64: "39.6", 3.964: "3.96", 1.2: "1.2", 10.04: "10", 0.9123: "0.912", 0.0412: "0.0412", 0: "0"} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %s, want %s", v, got, want)
		}
	}
}

// TestPairRows: rows per backend, kind and ordered pair, worst outcome,
// misses counted, metrics carried; ids without a pair stay out.
func TestPairRows(t *testing.T) {
	m := map[string]report.Metric{"bw_ce_write_gbps": {Unit: "GB/s", Median: 390}}
	rs := []report.Result{
		{Case: report.ParseCase("cuda.vmm.pairs.add.r0r1", nil), Outcome: report.Pass, Expected: report.Pass},
		{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r0r1", nil), Outcome: report.Pass, Expected: report.Pass, Metrics: m},
		{Case: report.ParseCase("cuda.vmm.pairs.add.r1r0", nil), Outcome: report.Crash, Expected: report.Pass},
		{Case: report.ParseCase("cuda.ipc.pairs.add.r1r0", nil), Outcome: report.Fail, Expected: report.Fail},
		{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Fail, Expected: report.Pass},
	}
	rows := PairRows(rs)
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	want := []struct {
		kind     string
		src, dst int
		cases    int
		unmet    int
		worst    report.Outcome
	}{{"ipc", 1, 0, 1, 0, report.Fail}, {"vmm", 0, 1, 2, 0, report.Pass}, {"vmm", 1, 0, 1, 1, report.Crash}}
	for i, w := range want {
		r := rows[i]
		if r.Kind != w.kind || r.Src != w.src || r.Dst != w.dst || r.Cases != w.cases || r.Unmet != w.unmet || r.Worst != w.worst {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	if rows[1].Metrics["bw_ce_write_gbps"].Median != 390 {
		t.Errorf("metric not carried: %+v", rows[1].Metrics)
	}
}

// TestWritePairTable: one table per backend and kind, a row per pair with
// its counts and worst outcome, a column per metric with its unit, "-"
// where a pair has no such metric.
func TestWritePairTable(t *testing.T) {
	rows := []report.PairRow{
		{Backend: "cuda", Kind: "ipc", Src: 1, Dst: 0, Cases: 1, Worst: report.Pass},
		{Backend: "cuda", Kind: "vmm", Src: 0, Dst: 1, Cases: 8, Unmet: 1, Worst: report.Crash,
			Metrics: map[string]report.Metric{"bw_ce_write_gbps": {Unit: "GB/s", Median: 389.57}}},
		{Backend: "cuda", Kind: "vmm", Src: 1, Dst: 0, Cases: 6, Worst: report.Pass},
	}
	var b strings.Builder
	WritePairTable(&b, rows)
	out := b.String()
	for _, want := range []string{"pairs cuda.ipc:", "pairs cuda.vmm:", "bw_ce_write_gbps", "GB/s", "0>1", "crash", "389.6", "1>0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "pairs cuda.") != 2 {
		t.Errorf("want two tables:\n%s", out)
	}
	last := strings.Split(strings.TrimSpace(out), "\n")
	if row := last[len(last)-1]; !strings.HasPrefix(row, "1>0") || !strings.HasSuffix(strings.TrimSpace(row), "-") {
		t.Errorf("a pair without the metric shows -: %q", row)
	}
}

// TestPairRowsSharedGPU: a pair whose two ranks ran on one device (rank
// evidence) is marked and the table says "shared GPU"; ranks on two
// devices, and host ranks (all on the CPU, device 0), are not.
func TestPairRowsSharedGPU(t *testing.T) {
	on := func(devs ...int) []report.Rank {
		var rs []report.Rank
		for r, d := range devs {
			rs = append(rs, report.Rank{Rank: r, Device: d})
		}
		return rs
	}
	rs := []report.Result{
		{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r0r1", nil), Outcome: report.Pass, Expected: report.Pass, Ranks: on(0, 0)},
		{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r0r2", nil), Outcome: report.Pass, Expected: report.Pass, Ranks: on(0, 1, 0)},
		{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r1r2", nil), Outcome: report.Pass, Expected: report.Pass, Ranks: on(0, 1, 0)},
		{Case: report.ParseCase("host.memfd.perf.copy_ce_write.r0r1", nil), Outcome: report.Pass, Expected: report.Pass, Ranks: on(0, 0)},
	}
	rows := PairRows(rs)
	got := map[string]bool{}
	for _, r := range rows {
		got[fmt.Sprintf("%s %d>%d", r.Backend, r.Src, r.Dst)] = r.SharedGPU
	}
	want := map[string]bool{"cuda 0>1": true, "cuda 0>2": true, "cuda 1>2": false, "host 0>1": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: shared_gpu %v, want %v (rows %+v)", k, got[k], v, rows)
		}
	}
	var b strings.Builder
	WritePairTable(&b, rows)
	out := b.String()
	table := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "pairs ") {
			table = line
		}
		shared := strings.HasSuffix(line, "shared GPU")
		cuda := strings.HasPrefix(table, "pairs cuda.")
		if strings.HasPrefix(line, "0>1") && shared != cuda || strings.HasPrefix(line, "1>2") && shared {
			t.Errorf("row %q marks shared GPU wrongly:\n%s", line, out)
		}
	}
	if strings.Count(out, "shared GPU:") != 1 {
		t.Errorf("want one shared-GPU legend (cuda table only):\n%s", out)
	}
}

// TestPairRowsUnmetIsTheVerdicts: a pair's unmet count is what the verdict
// counts against the run: a skip for a capability the pair lacks (two
// ranks on one GPU without MPS) and a known bug are not unmet, a lost
// update is.
func TestPairRowsUnmetIsTheVerdicts(t *testing.T) {
	rs := []report.Result{
		{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r0r1", nil), Outcome: report.Skip, Expected: report.Pass, Detail: "ranks 0 and 1 share GPU x without MPS"},
		{Case: report.ParseCase("cuda.vmm.pairs.add.r0r1", nil), Outcome: report.Fail, Expected: report.Pass, Verdict: report.ExpectedFail},
		{Case: report.ParseCase("cuda.vmm.pairs.sub.r0r1", nil), Outcome: report.Fail, Expected: report.Pass, Detail: "lost 3"},
	}
	rows := PairRows(rs)
	if len(rows) != 1 || rows[0].Cases != 3 || rows[0].Unmet != 1 {
		t.Errorf("rows %+v, want one row of 3 cases, 1 unmet", rows)
	}
}

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
