package heatmap

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

func bw(id string, labels []string, metrics map[string]report.Metric) report.Result {
	return report.Result{Case: report.ParseCase(id, nil), Labels: labels, Outcome: report.Pass, Expected: report.Pass, Metrics: metrics}
}

func gbps(v float64) report.Metric {
	return report.Metric{Unit: "GB/s", Median: v, Min: v - 1, Max: v + 1, N: 5, Method: "cuda-events"}
}

func sample() []report.Result {
	return []report.Result{
		bw("cuda.vmm.bw.ce_write.g0g1", []string{"cuda", "vmm", "perf", "pair=0-1"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(396.2), "lat_rt_us": {Unit: "us", Median: 0.91, Min: 0.9, Max: 0.95, N: 9, Method: "ping-pong"}}),
		bw("cuda.vmm.bw.ce_write.g1g0", []string{"cuda", "vmm", "perf", "pair=1-0"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(391.7), "lat_rt_us": {Unit: "us", Median: 0.93, N: 9}}),
		bw("cuda.vmm.bw.ce_write.g0g0", []string{"cuda", "vmm", "perf", "src=0", "dst=0"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(1800)}),
		bw("cuda.ipc.bw.ce_write.g0g1", []string{"cuda", "ipc", "perf"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(390.1)}),
		bw("cuda.vmm.counter.add_u64_relaxed_sys", []string{"cuda", "vmm"}, map[string]report.Metric{"ops": {Unit: "Mops/s", Median: 3}}), // no pair: ignored
		bw("cuda.vmm.bw.sm_copy.x", []string{"pair=0-1", "<&>"}, nil), // no metrics: ignored
	}
}

func TestPairAndFamily(t *testing.T) {
	cases := []struct {
		r      report.Result
		s, d   int
		ok     bool
		family string
	}{
		{bw("a.b.g3g5", []string{"pair=1-2"}, nil), 1, 2, true, "a.b"},
		{bw("a.b.c", []string{"src=4", "dst=0"}, nil), 4, 0, true, "a.b"},
		{bw("a.g2g7.c", nil, nil), 2, 7, true, "a.c"},
		{bw("a.b.c", []string{"pair=x-1", "src=1"}, nil), 0, 0, false, "a.b"},
		// The suite's own ids: rank pairs, and ".r4" for a 4-rank world,
		// which is part of the family (a single number, not a pair).
		{bw("cuda.vmm.perf.copy_ce_write.r2r3.r4", nil, nil), 2, 3, true, "cuda.vmm.perf.copy_ce_write.r4"},
		{bw("cuda.vmm.perf.copy_ce_write.r1r0", nil, nil), 1, 0, true, "cuda.vmm.perf.copy_ce_write"},
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

func TestDirection(t *testing.T) {
	for u, want := range map[string]int{"GB/s": 1, "Mops/s": 1, "gbps": 1, "us": -1, "µs": -1, "ns": -1, "ns/op": -1, "bytes": 0, "": 0} {
		if got := Direction(u); got != want {
			t.Errorf("Direction(%q) = %d, want %d", u, got, want)
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
	want := []string{"cuda.ipc.bw.ce_write.bw_ce_write_gbps.svg", "cuda.vmm.bw.ce_write.bw_ce_write_gbps.svg", "cuda.vmm.bw.ce_write.lat_rt_us.svg"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files = %v", files)
	}
	vmm := ms[1]
	if vmm.Size != 2 || len(vmm.Cells) != 3 || vmm.Cells[[2]int{1, 0}].Metric.Median != 391.7 || vmm.Unit != "GB/s" {
		t.Errorf("vmm matrix = %+v", vmm)
	}
}

// parse checks the SVG is well-formed XML and returns all its text.
func parse(t *testing.T, svg string) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
				if x.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", x.Name.Space)
				}
			}
		case xml.CharData:
			text.Write(x)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	return text.String()
}

func TestSVG(t *testing.T) {
	ms := Matrices(sample())
	text := parse(t, ms[1].SVG("nvidia, 2× NVIDIA H200 <test>"))
	for _, want := range []string{"bw_ce_write_gbps (GB/s)", "396", "392", "1800", "GPU(row) 0", "GPU 1", "higher is better",
		"nvidia, 2× NVIDIA H200 <test>", "median 396, min 395, max 397 GB/s, n=5, cuda-events", "395–397", "1799–1801",
		"GPU(row) → GPU(column): data moves from the row's GPU into the column's", "colour from 0 to 1801 GB/s", "self"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q:\n%s", want, text)
		}
	}
	lat := parse(t, ms[2].SVG(""))
	for _, want := range []string{"lat_rt_us (us)", "0.91", "0.93", "lower is better", "0.9–0.95", "self"} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency SVG lacks %q:\n%s", want, lat)
		}
	}
	// Odd names are escaped, not injected.
	odd := &Matrix{Metric: `a<b>&"c"`, Family: "f", Unit: "x<y", Size: 1, Cells: map[[2]int]Cell{{0, 0}: {Metric: report.Metric{Unit: "x<y", Median: 1}, Case: "c&d"}}}
	if txt := parse(t, odd.SVG("")); !strings.Contains(txt, `a<b>&"c" (x<y)`) {
		t.Errorf("escaping: %s", txt)
	}
}

// TestSVGUnmet: a cell whose case missed its expected outcome names the
// outcome and is hatched and framed, whatever its value; met cells are not.
func TestSVGUnmet(t *testing.T) {
	rs := sample()[:2]
	rs[1].Outcome = report.Fail // planted: 1→0 lost updates
	m := Matrices(rs)[0]
	svg := m.SVG("")
	text := parse(t, svg)
	if !strings.Contains(text, "FAIL") || !strings.Contains(text, "unmet") {
		t.Errorf("unmet cell does not say FAIL:\n%s", text)
	}
	if strings.Count(svg, `fill="url(#hatch-unmet)" stroke="black" stroke-width="3"`) != 1 {
		t.Errorf("want exactly one hatched, framed cell:\n%s", svg)
	}
	rs[1].Outcome = report.Pass
	if svg := Matrices(rs)[0].SVG(""); strings.Contains(parse(t, svg), "FAIL") || strings.Contains(svg, `stroke="black" stroke-width="3"`) {
		t.Error("a met cell is marked unmet")
	}
}

// TestScaleFromZero: the colour scale starts at zero, so 381 and 390 GB/s
// get nearly the same colour (a min-to-max scale would give them the two
// ends of the ramp).
func TestScaleFromZero(t *testing.T) {
	rs := []report.Result{
		bw("x.y.perf.copy.r0r1", nil, map[string]report.Metric{"bw": {Unit: "GB/s", Median: 381, Min: 380, Max: 382, N: 5}}),
		bw("x.y.perf.copy.r1r0", nil, map[string]report.Metric{"bw": {Unit: "GB/s", Median: 390, Min: 389, Max: 390, N: 5}}),
	}
	m := Matrices(rs)[0]
	if m.ScaleMax() != 390 {
		t.Fatalf("scale max %v", m.ScaleMax())
	}
	a, _ := color(safeDiv(381, m.ScaleMax()))
	b, _ := color(safeDiv(390, m.ScaleMax()))
	lo, _ := color(0)
	if a == lo || !strings.Contains(m.SVG(""), a) || !strings.Contains(m.SVG(""), b) {
		t.Errorf("colours %s %s (zero is %s)", a, b, lo)
	}
	// Nearly equal values, nearly equal colours: compare the red channel.
	var ra, rb int
	fmt.Sscanf(a[1:3], "%x", &ra)
	fmt.Sscanf(b[1:3], "%x", &rb)
	if d := ra - rb; d > 12 || d < -12 {
		t.Errorf("381 and 390 look far apart: %s vs %s", a, b)
	}
	// With a physical ceiling the scale ends there: 390 of 478 GB/s is not
	// the darkest colour, and the caption names the ceiling's basis.
	for i := range rs {
		mm := rs[i].Metrics["bw"]
		mm.Ceiling = &report.Ceiling{Value: 478, Basis: "18 NVLink links x 26.56 GB/s"}
		rs[i].Metrics["bw"] = mm
	}
	m = Matrices(rs)[0]
	if m.ScaleMax() != 478 {
		t.Fatalf("scale max with a ceiling: %v", m.ScaleMax())
	}
	text := parse(t, m.SVG(""))
	if c, _ := color(390.0 / 478); !strings.Contains(m.SVG(""), `fill="`+c+`"`) {
		t.Errorf("390 of a 478 ceiling painted as the top colour")
	}
	for _, want := range []string{"colour from 0 to the ceiling 478 GB/s", "ceiling: 18 NVLink links x 26.56 GB/s", "478 ceiling"} {
		if !strings.Contains(text, want) {
			t.Errorf("ceiling SVG lacks %q:\n%s", want, text)
		}
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

// TestSharedGPU: when two ranks of a pair ran on one GPU the axes say
// rank, and the caption says why; with a GPU each they say GPU.
func TestSharedGPU(t *testing.T) {
	r := bw("cuda.vmm.perf.copy_ce_write.r0r1", []string{"pair=0-1"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(2045)})
	r.Ranks = []report.Rank{{Rank: 0, Device: 0}, {Rank: 1, Device: 0}}
	text := parse(t, Matrices([]report.Result{r})[0].SVG(""))
	for _, want := range []string{"rank(row) 0", "rank 1", "column: rank", "rows and columns are ranks: some pairs of ranks shared one GPU", "rank(row) → rank(column)"} {
		if !strings.Contains(text, want) {
			t.Errorf("shared GPU SVG lacks %q:\n%s", want, text)
		}
	}
	r.Ranks[1].Device = 1
	if text := parse(t, Matrices([]report.Result{r})[0].SVG("")); strings.Contains(text, "rank(row)") || !strings.Contains(text, "GPU(row) 0") {
		t.Errorf("a GPU each: axes must say GPU")
	}
}

// TestBidirAndOneCell: a bidirectional map says its lower triangle is the
// same case as the upper, and a one-cell map still fits its text.
func TestBidirAndOneCell(t *testing.T) {
	rs := []report.Result{bw("c.k.perf.copy_ce_bidir.r0r1", nil, map[string]report.Metric{"bw_ce_bidir_gbps": gbps(680)})}
	text := parse(t, Matrices(rs)[0].SVG(""))
	if !strings.Contains(text, "see 0↔1") || strings.Contains(text, "not run") {
		t.Errorf("bidir lower triangle:\n%s", text)
	}
	one := Matrices([]report.Result{bw("c.k.perf.pingpong_latency_local", []string{"pair=0-0"}, map[string]report.Metric{"rtt_dev_us": {Unit: "us", Median: 1.13, Min: 1.13, Max: 1.14, N: 5}})})[0]
	svg := one.SVG("nvidia, 4× NVIDIA H200, driver 580.159.04")
	var w int
	fmt.Sscanf(svg[strings.Index(svg, "<svg"):], `<svg xmlns="http://www.w3.org/2000/svg" width="%d"`, &w)
	if need := textW("c.k.perf.pingpong_latency_local — nvidia, 4× NVIDIA H200, driver 580.159.04", 13, false); w < need {
		t.Errorf("1×1 canvas %d px, subtitle needs %d", w, need)
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	files, err := WriteAll(dir, &report.Report{Schema: 1, Environment: map[string]any{"vendor": "nvidia"}, Results: sample()})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := "verdict.svg verdict.cuda.vmm.pairs.svg verdict.cuda.ipc.pairs.svg cuda.ipc.bw.ce_write.bw_ce_write_gbps.svg cuda.vmm.bw.ce_write.bw_ce_write_gbps.svg cuda.vmm.bw.ce_write.lat_rt_us.svg index.html"
	if strings.Join(names, " ") != want {
		t.Fatalf("files = %v", names)
	}
	for _, f := range files[:len(files)-1] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parse(t, string(b))
	}
	files, err = WriteAll(filepath.Join(t.TempDir(), "none"), &report.Report{})
	if err != nil || files != nil {
		t.Errorf("no results: %v %v", files, err)
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
