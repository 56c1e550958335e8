package heatmap

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/pairs"
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
	ms := pairs.Matrices(sample())
	text := parse(t, MatrixSVG(ms[1], "nvidia, 2× NVIDIA H200 <test>"))
	for _, want := range []string{"bw_ce_write_gbps (GB/s)", "396", "392", "1800", "GPU(row) 0", "GPU 1", "higher is better",
		"nvidia, 2× NVIDIA H200 <test>", "median 396, min 395, max 397 GB/s, n=5, cuda-events", "395–397", "1799–1801",
		"GPU(row) → GPU(column): data moves from the row's GPU into the column's", "colour from 0 to 1801 GB/s", "self"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q:\n%s", want, text)
		}
	}
	lat := parse(t, MatrixSVG(ms[2], ""))
	for _, want := range []string{"lat_rt_us (us)", "0.91", "0.93", "lower is better", "0.9–0.95", "self"} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency SVG lacks %q:\n%s", want, lat)
		}
	}
	// Odd names are escaped, not injected.
	odd := &pairs.Matrix{Metric: `a<b>&"c"`, Family: "f", Unit: "x<y", Size: 1, Cells: map[[2]int]pairs.Cell{{0, 0}: {Metric: report.Metric{Unit: "x<y", Median: 1}, Case: "c&d"}}}
	if txt := parse(t, MatrixSVG(odd, "")); !strings.Contains(txt, `a<b>&"c" (x<y)`) {
		t.Errorf("escaping: %s", txt)
	}
}

// TestSVGUnmet: a cell whose case missed its expected outcome names the
// outcome and is hatched and framed, whatever its value; met cells are not.
func TestSVGUnmet(t *testing.T) {
	rs := sample()[:2]
	rs[1].Outcome = report.Fail // planted: 1→0 lost updates
	m := pairs.Matrices(rs)[0]
	svg := MatrixSVG(m, "")
	text := parse(t, svg)
	if !strings.Contains(text, "FAIL") || !strings.Contains(text, "unmet") {
		t.Errorf("unmet cell does not say FAIL:\n%s", text)
	}
	if strings.Count(svg, `fill="url(#hatch-unmet)" stroke="black" stroke-width="3"`) != 1 {
		t.Errorf("want exactly one hatched, framed cell:\n%s", svg)
	}
	rs[1].Outcome = report.Pass
	if svg := MatrixSVG(pairs.Matrices(rs)[0], ""); strings.Contains(parse(t, svg), "FAIL") || strings.Contains(svg, `stroke="black" stroke-width="3"`) {
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
	m := pairs.Matrices(rs)[0]
	if m.ScaleMax() != 390 {
		t.Fatalf("scale max %v", m.ScaleMax())
	}
	a, _ := color(safeDiv(381, m.ScaleMax()))
	b, _ := color(safeDiv(390, m.ScaleMax()))
	lo, _ := color(0)
	if a == lo || !strings.Contains(MatrixSVG(m, ""), a) || !strings.Contains(MatrixSVG(m, ""), b) {
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
	m = pairs.Matrices(rs)[0]
	if m.ScaleMax() != 478 {
		t.Fatalf("scale max with a ceiling: %v", m.ScaleMax())
	}
	text := parse(t, MatrixSVG(m, ""))
	if c, _ := color(390.0 / 478); !strings.Contains(MatrixSVG(m, ""), `fill="`+c+`"`) {
		t.Errorf("390 of a 478 ceiling painted as the top colour")
	}
	for _, want := range []string{"colour from 0 to the ceiling 478 GB/s", "ceiling: 18 NVLink links x 26.56 GB/s", "478 ceiling"} {
		if !strings.Contains(text, want) {
			t.Errorf("ceiling SVG lacks %q:\n%s", want, text)
		}
	}
}

// TestSharedGPU: when two ranks of a pair ran on one GPU the axes say
// rank, and the caption says why; with a GPU each they say GPU.
func TestSharedGPU(t *testing.T) {
	r := bw("cuda.vmm.perf.copy_ce_write.r0r1", []string{"pair=0-1"}, map[string]report.Metric{"bw_ce_write_gbps": gbps(2045)})
	r.Ranks = []report.Rank{{Rank: 0, Device: 0}, {Rank: 1, Device: 0}}
	text := parse(t, MatrixSVG(pairs.Matrices([]report.Result{r})[0], ""))
	for _, want := range []string{"rank(row) 0", "rank 1", "column: rank", "rows and columns are ranks: some pairs of ranks shared one GPU", "rank(row) → rank(column)"} {
		if !strings.Contains(text, want) {
			t.Errorf("shared GPU SVG lacks %q:\n%s", want, text)
		}
	}
	r.Ranks[1].Device = 1
	if text := parse(t, MatrixSVG(pairs.Matrices([]report.Result{r})[0], "")); strings.Contains(text, "rank(row)") || !strings.Contains(text, "GPU(row) 0") {
		t.Errorf("a GPU each: axes must say GPU")
	}
}

// TestBidirAndOneCell: a bidirectional map says its lower triangle is the
// same case as the upper, and a one-cell map still fits its text.
func TestBidirAndOneCell(t *testing.T) {
	rs := []report.Result{bw("c.k.perf.copy_ce_bidir.r0r1", nil, map[string]report.Metric{"bw_ce_bidir_gbps": gbps(680)})}
	text := parse(t, MatrixSVG(pairs.Matrices(rs)[0], ""))
	if !strings.Contains(text, "see 0↔1") || strings.Contains(text, "not run") {
		t.Errorf("bidir lower triangle:\n%s", text)
	}
	one := pairs.Matrices([]report.Result{bw("c.k.perf.pingpong_latency_local", []string{"pair=0-0"}, map[string]report.Metric{"rtt_dev_us": {Unit: "us", Median: 1.13, Min: 1.13, Max: 1.14, N: 5}})})[0]
	svg := MatrixSVG(one, "nvidia, 4× NVIDIA H200, driver 580.159.04")
	var w int
	fmt.Sscanf(svg[strings.Index(svg, "<svg"):], `<svg xmlns="http://www.w3.org/2000/svg" width="%d"`, &w)
	if need := textW("c.k.perf.pingpong_latency_local — nvidia, 4× NVIDIA H200, driver 580.159.04", 13, false); w < need {
		t.Errorf("1×1 canvas %d px, subtitle needs %d", w, need)
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	files, err := WriteAll(dir, &report.Report{Schema: 1, Environment: report.EnvironmentOf(map[string]any{"vendor": "nvidia"}), Results: sample()})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := "verdict.svg verdict.cuda.vmm.pairs.svg verdict.cuda.ipc.pairs.svg cuda.ipc.perf.copy_ce_write.bw_ce_write_gbps.svg cuda.vmm.perf.copy_ce_write.bw_ce_write_gbps.svg cuda.vmm.perf.copy_ce_write.lat_rt_us.svg index.html"
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
