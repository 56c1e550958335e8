// Package heatmap draws a run's pictures as SVG, in pure Go: the verdict
// matrices (which kinds, spec families and GPU pairs met their expected
// outcome) and one heatmap per per-pair metric (row = the case's first
// GPU, column = its second; which way the data moved is in each caption,
// in nvbandwidth's "GPU(row) <- GPU(column)" form).
//
// Pair convention. A case measures one ordered pair of GPUs and says which
// with the label "pair=<src>-<dst>" (e.g. "pair=0-1"). Also accepted, in
// this order: labels "src=<i>" and "dst=<j>"; a dot-separated id segment
// "g<i>g<j>" (e.g. cuda.vmm.bw.ce_write.g0g1) or "r<i>r<j>" (ranks, as
// the suite's own ids spell it: cuda.vmm.perf.copy_ce_write.r0r1.r4). Every metric of such a case
// becomes a cell of the heatmap for that metric's name.
//
// A heatmap collects one metric name over one case family: the case id
// with its "g<i>g<j>" or "r<i>r<j>" segment removed, or the id itself when the pair comes
// from labels only and the id has no such segment, in which case the family
// is the id minus its last segment. (cuda.vmm.bw.ce_write.g0g1 and
// cuda.vmm.bw.ce_write.g1g0 are one family; cuda.ipc.bw.ce_write.g0g1 is
// another.) Files are named <family>.<metric>.svg, always; the verdict
// matrices are verdict.svg and verdict.<backend>.<kind>.pairs.svg.
package heatmap

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"p2patomics/harness/report"
)

// Direction says which way a unit is better: +1 higher (rates such as GB/s,
// Mops/s, anything "/s"), -1 lower (times: s, ms, us, µs, ns, cycles), 0
// unknown.
func Direction(unit string) int {
	u := strings.ToLower(strings.TrimSpace(unit))
	switch {
	case strings.Contains(u, "/s") || strings.HasSuffix(u, "ps") && u != "ps" || u == "hz":
		return +1
	case u == "s" || u == "ms" || u == "us" || u == "µs" || u == "μs" || u == "ns" || u == "ps" || u == "cycles" || strings.HasSuffix(u, "/op") || strings.HasSuffix(u, "/rt"):
		return -1
	}
	return 0
}

// Cell is one measured pair.
type Cell struct {
	Src, Dst int
	Metric   report.Metric
	Case     string // case id
	Outcome  report.Outcome
	State    State
}

// Matrix is one heatmap.
type Matrix struct {
	Metric string // metric name
	Family string // case family (see package doc)
	Unit   string
	Size   int // max(GPU index)+1
	Cells  map[[2]int]Cell
	File   string // file name WriteAll uses: <family>.<metric>.svg
	// Shared: some cell's two ranks ran on one GPU (a run with more ranks
	// than GPUs), so rows and columns are ranks, not GPUs.
	Shared bool
}

var (
	gSegRe = regexp.MustCompile(`^(?:g(\d+)g(\d+)|r(\d+)r(\d+))$`)
	pairRe = regexp.MustCompile(`^(\d+)-(\d+)$`)
)

// pairPath is a per-pair result's backend, kind (the id's first two
// fields) and ordered pair of ranks; ok is false for any other result.
func pairPath(r report.Result) (backend, kind string, src, dst int, ok bool) {
	src, dst, ok = Pair(r)
	segs := strings.SplitN(r.ID(), ".", 3)
	if !ok || len(segs) < 3 {
		return "", "", 0, 0, false
	}
	return segs[0], segs[1], src, dst, true
}

// Pair finds a result's source and destination GPU (see package doc).
func Pair(r report.Result) (src, dst int, ok bool) {
	var s, d = -1, -1
	for _, l := range r.Labels {
		if v, found := strings.CutPrefix(l, "pair="); found {
			if m := pairRe.FindStringSubmatch(v); m != nil {
				a, _ := strconv.Atoi(m[1])
				b, _ := strconv.Atoi(m[2])
				return a, b, true
			}
		}
		if v, found := strings.CutPrefix(l, "src="); found {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				s = n
			}
		}
		if v, found := strings.CutPrefix(l, "dst="); found {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				d = n
			}
		}
	}
	if s >= 0 && d >= 0 {
		return s, d, true
	}
	for _, seg := range strings.Split(r.ID(), ".") {
		if m := gSegRe.FindStringSubmatch(seg); m != nil {
			i := 1
			if m[1] == "" {
				i = 3
			}
			a, _ := strconv.Atoi(m[i])
			b, _ := strconv.Atoi(m[i+1])
			return a, b, true
		}
	}
	return 0, 0, false
}

// Family is the case id with its pair segment removed (see package doc).
func Family(r report.Result) string {
	segs := strings.Split(r.ID(), ".")
	var keep []string
	removed := false
	for _, seg := range segs {
		if !removed && gSegRe.MatchString(seg) {
			removed = true
			continue
		}
		keep = append(keep, seg)
	}
	if !removed && len(keep) > 1 {
		keep = keep[:len(keep)-1]
	}
	return strings.Join(keep, ".")
}

// Matrices builds every heatmap the results hold, sorted by file name.
// Results without pair information or metrics are ignored; a later result
// for the same cell replaces an earlier one. Every file is named
// <family>.<metric>.svg, whether the run holds one family or many, so a
// single-family run and the whole suite name a picture alike.
func Matrices(results []report.Result) []*Matrix {
	byKey := map[[2]string]*Matrix{}
	for _, r := range results {
		if len(r.Metrics) == 0 {
			continue
		}
		src, dst, ok := Pair(r)
		if !ok {
			continue
		}
		fam := Family(r)
		for name, m := range r.Metrics {
			k := [2]string{name, fam}
			mx := byKey[k]
			if mx == nil {
				mx = &Matrix{Metric: name, Family: fam, Unit: m.Unit, Cells: map[[2]int]Cell{}}
				byKey[k] = mx
			}
			mx.Cells[[2]int{src, dst}] = Cell{Src: src, Dst: dst, Metric: m, Case: r.ID(), Outcome: r.Outcome, State: Classify(r)}
			if sharedGPU(r, src, dst) {
				mx.Shared = true
			}
			if n := max(src, dst) + 1; n > mx.Size {
				mx.Size = n
			}
		}
	}
	out := make([]*Matrix, 0, len(byKey))
	for _, mx := range byKey {
		mx.File = safe(mx.Family) + "." + safe(mx.Metric) + ".svg"
		out = append(out, mx)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

var unsafeRe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safe(s string) string {
	s = unsafeRe.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// Flow says which way a matrix's data moved, in nvbandwidth's words:
// dir is the short form nvbandwidth puts in its descriptions ("GPU(row) ->
// GPU(column)", "GPU(row) <- GPU(column)"), text says it in a sentence.
// Row is always the case's first rank (r<s> in r<s>r<d>, pair=<s>-<d>),
// column its second; what moves depends on the spec: a copy_*_write moves
// data s → d, a copy_*_read moves it d → s (s reads the peer's memory),
// a bidir copy moves both ways at once and exists once per unordered pair.
func (m *Matrix) Flow() (dir, text string) {
	key := strings.ToLower(m.Family + "." + m.Metric)
	switch {
	case strings.Contains(key, "bidir"):
		return "GPU(row) <-> GPU(column)", "both ways at once: the row's GPU writes into the column's while the column's writes into the row's; one case per pair (upper triangle)"
	case strings.Contains(key, "read"):
		return "GPU(row) <- GPU(column)", "data moves from the column's GPU into the row's: the row's GPU reads the column's memory"
	case strings.Contains(key, "write"):
		return "GPU(row) -> GPU(column)", "data moves from the row's GPU into the column's: the row's GPU writes the column's memory"
	case strings.Contains(key, "pingpong") || strings.Contains(key, "latency") || strings.Contains(key, "rtt"):
		return "GPU(row) <-> GPU(column)", "round trip: the row's GPU starts the chain and times it, the column's answers"
	case strings.Contains(key, "pair") || strings.Contains(key, "atomic"):
		return "GPU(row) -> GPU(column)", "the row's GPU runs atomics on the column's memory while the column's GPU runs them locally"
	}
	return "GPU(row) -> GPU(column)", "row: the case's first rank, column: its second"
}

// arrows renders a Flow direction with the arrows people read.
func arrows(dir string) string {
	return strings.NewReplacer("<->", "↔", "<-", "←", "->", "→").Replace(dir)
}

// bidir reports whether the matrix holds one case per unordered pair.
func (m *Matrix) bidir() bool {
	d, _ := m.Flow()
	return strings.Contains(d, "<->") && strings.Contains(strings.ToLower(m.Family), "bidir")
}

// ScaleMax is the value the colour scale ends at; it starts at zero, so a
// 2% spread between cells looks like 2%. It is the physical ceiling when
// the cells carry one (the largest, for cells whose bytes cross different
// resources), so a cell's colour says how close it came; else the largest
// value any cell saw (its max, not only its median). A sample above a
// ceiling is a measurement error, and the scale still reaches it.
func (m *Matrix) ScaleMax() float64 {
	hi := 0.0
	for _, c := range m.Cells {
		hi = math.Max(hi, math.Max(c.Metric.Max, c.Metric.Median))
	}
	if v, _ := m.Ceiling(); v > hi {
		return v
	}
	return hi
}

// Ceiling is the largest physical ceiling among the cells and what it is
// (its basis); 0 and "" when no cell has one.
func (m *Matrix) Ceiling() (value float64, basis string) {
	for _, c := range m.Cells {
		if cl := c.Metric.Ceiling; cl != nil && cl.Value > value {
			value, basis = cl.Value, cl.Basis
		}
	}
	return value, basis
}

// Export is the matrices in nvbandwidth's JSON shape, for results.json's
// "matrices" section: the medians, null where no case measured a pair,
// and sum/min/max/average over the measured cells.
func Export(results []report.Result) []report.PairMatrix {
	var out []report.PairMatrix
	for _, m := range Matrices(results) {
		dir, text := m.Flow()
		pm := report.PairMatrix{Name: m.Family, Metric: m.Metric, Unit: m.Unit, Direction: dir,
			Description: fmt.Sprintf("%s (%s), median per cell; %s: %s", m.Metric, m.Unit, dir, text),
			Matrix:      make([][]*float64, m.Size)}
		n := 0
		for i := range m.Size {
			pm.Matrix[i] = make([]*float64, m.Size)
			for j := range m.Size {
				c, ok := m.Cells[[2]int{i, j}]
				if !ok {
					continue
				}
				v := c.Metric.Median
				pm.Matrix[i][j] = &v
				if n == 0 || v < pm.Min {
					pm.Min = v
				}
				if n == 0 || v > pm.Max {
					pm.Max = v
				}
				pm.Sum += v
				n++
			}
		}
		if n > 0 {
			pm.Average = math.Round(pm.Sum/float64(n)*1000) / 1000
			pm.Sum = math.Round(pm.Sum*1000) / 1000
		}
		out = append(out, pm)
	}
	return out
}

// Title is the run's machine in a few words (vendor, GPUs, driver).
func Title(env map[string]any) string {
	var parts []string
	if v, ok := env["vendor"].(string); ok {
		parts = append(parts, v)
	}
	if gs, ok := env["gpus"].([]any); ok && len(gs) > 0 {
		if g, ok := gs[0].(map[string]any); ok {
			if n, ok := g["name"].(string); ok && n != "" {
				parts = append(parts, fmt.Sprintf("%d× %s", len(gs), n))
			}
		}
	}
	if nv, ok := env["nvidia"].(map[string]any); ok {
		if d, ok := nv["driver"].(string); ok {
			parts = append(parts, "driver "+d)
		}
	}
	return strings.Join(parts, ", ")
}

// Picture is one SVG the run's pictures hold: the file name WriteAll gives
// it, a caption, and its text.
type Picture struct {
	File, Caption, SVG string
}

// Pictures renders every picture of a run, verdict matrices first (the
// kinds × spec families overview, then each kind's pairs × specs), then
// the heatmaps.
func Pictures(rep *report.Report) []Picture {
	title := Title(rep.Environment)
	var ps []Picture
	if v := VerdictMatrix(rep.Results); v != nil {
		ps = append(ps, Picture{File: "verdict.svg", Caption: "verdict matrix: spec families × allocation paths", SVG: v.SVG(title)})
	}
	for _, pv := range PairVerdicts(rep.Results) {
		ps = append(ps, Picture{File: pv.File, Caption: "pair verdicts: " + pv.Kind, SVG: pv.SVG(title)})
	}
	for _, m := range Matrices(rep.Results) {
		ps = append(ps, Picture{File: m.File, Caption: m.Family + ": " + m.Metric, SVG: m.SVG(title)})
	}
	return ps
}

// WriteAll renders every picture of rep into dir (created if needed) and
// an index.html that shows them all; it returns the files written (SVGs,
// then index.html). A run without results writes nothing and returns nil.
func WriteAll(dir string, rep *report.Report) ([]string, error) {
	ps := Pictures(rep)
	if len(ps) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("heatmap: %w", err)
	}
	var files []string
	var idx strings.Builder
	idx.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>p2patomics pictures</title></head><body>\n")
	fmt.Fprintf(&idx, "<h1>p2patomics pictures</h1>\n<p>%s</p>\n<p>The whole report, with the unexpected cases: <a href=\"../report.html\">report.html</a></p>\n", esc(Title(rep.Environment)))
	for _, p := range ps {
		path := filepath.Join(dir, p.File)
		if err := os.WriteFile(path, []byte(p.SVG), 0o644); err != nil {
			return files, fmt.Errorf("heatmap: %w", err)
		}
		files = append(files, path)
		fmt.Fprintf(&idx, "<div><img src=\"%s\" alt=\"%s\"></div>\n", esc(p.File), esc(p.Caption))
	}
	idx.WriteString("</body></html>\n")
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, []byte(idx.String()), 0o644); err != nil {
		return files, fmt.Errorf("heatmap: %w", err)
	}
	return append(files, path), nil
}

// Format prints a value with three significant digits or more for large
// numbers (396, 39.6, 3.96, 0.396, 0.0396).
func Format(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	case a >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// palette runs from zero (light) to the scale's top (dark) — viridis,
// whose lightness rises monotonically, so it reads in a grey-scale print
// and to colour-blind eyes.
var palette = [][3]float64{
	{253, 231, 37}, {94, 201, 98}, {33, 145, 140}, {59, 82, 139}, {68, 1, 84},
}

func color(t float64) (string, bool) {
	if t < 0 || math.IsNaN(t) {
		t = 0
	}
	if t > 1 {
		t = 1
	}
	x := t * float64(len(palette)-1)
	i := int(x)
	if i >= len(palette)-1 {
		i = len(palette) - 2
	}
	f := x - float64(i)
	var c [3]float64
	for k := range 3 {
		c[k] = palette[i][k] + (palette[i+1][k]-palette[i][k])*f
	}
	lum := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	return fmt.Sprintf("#%02x%02x%02x", int(c[0]+0.5), int(c[1]+0.5), int(c[2]+0.5)), lum < 128
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
	return r.Replace(s)
}

// textW estimates the width in pixels of s in a sans-serif font of the
// given size (bold a little wider), so canvases are sized from their text
// instead of clipping it.
func textW(s string, size float64, bold bool) int {
	f := 0.6
	if bold {
		f = 0.66
	}
	return int(math.Ceil(float64(utf8.RuneCountInString(s)) * size * f))
}

// svgOpen starts an SVG document of the given size with the shared
// definitions: the hatches that mark unmet and expected-fail cells.
func svgOpen(b *strings.Builder, w, h int, title string) {
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(title))
	b.WriteString(`<defs>` +
		`<pattern id="hatch-unmet" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#d55e00"/><line x1="0" y1="0" x2="0" y2="8" stroke="#ffffff" stroke-width="3"/></pattern>` +
		`<pattern id="hatch-xfail" width="10" height="10" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="10" height="10" fill="#f0e442"/><line x1="0" y1="0" x2="0" y2="10" stroke="#8a7f00" stroke-width="1.5"/></pattern>` +
		`</defs>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
}

// SVG renders the heatmap. subtitle (may be empty) names the machine.
//
// Cells show the median and, under it, the min–max of the samples; the
// colour runs from zero, so neighbouring values look alike; a cell whose
// case missed its expected outcome is hatched, framed and names the
// outcome, whatever its value; pairs no case measured say so.
func (m *Matrix) SVG(subtitle string) string {
	n := m.Size
	dir, flowText := m.Flow()
	unit := m.Unit
	if unit == "" {
		unit = "no unit"
	}
	better := map[int]string{1: "higher is better", -1: "lower is better", 0: "direction unknown"}[Direction(m.Unit)]
	hi := m.ScaleMax()
	title := fmt.Sprintf("%s (%s)", m.Metric, unit)
	sub := m.Family
	if subtitle != "" {
		sub += " — " + subtitle
	}
	lines := []string{
		fmt.Sprintf("%s: %s", arrows(dir), flowText),
		fmt.Sprintf("cell: median, min–max below; colour from 0 to %s %s; %s", Format(hi), m.Unit, better),
	}
	if cv, basis := m.Ceiling(); cv > 0 {
		if len(basis) > 110 {
			basis = basis[:110] + "…"
		}
		lines[1] = fmt.Sprintf("cell: median, min–max below; colour from 0 to the ceiling %s %s; %s", Format(cv), m.Unit, better)
		lines = append(lines, "ceiling: "+basis)
	}
	// Rows and columns are ranks; they name GPUs only when each rank had
	// its own.
	who := "GPU"
	if m.Shared {
		who = "rank"
		lines = append(lines, "rows and columns are ranks: some pairs of ranks shared one GPU, so their bytes crossed that GPU's memory, not a link")
		lines[0] = strings.ReplaceAll(lines[0], "GPU", "rank")
	}
	bidir := m.bidir()
	// Cell text decides the cell width.
	type cellText struct {
		lines []string
		fill  string
		ink   string
		state State
		tip   string
	}
	texts := map[[2]int]cellText{}
	cw := 84
	for i := range n {
		for j := range n {
			c, ok := m.Cells[[2]int{i, j}]
			var t cellText
			switch {
			case ok:
				spread := Spread(c.Metric)
				t.tip = fmt.Sprintf("%s: %s; median %s, min %s, max %s %s, n=%d, %s", c.Case, c.State, Format(c.Metric.Median), Format(c.Metric.Min), Format(c.Metric.Max), c.Metric.Unit, c.Metric.N, c.Metric.Method)
				t.state = c.State
				switch c.State {
				case Unmet:
					t.lines = []string{strings.ToUpper(string(c.Outcome)), Format(c.Metric.Median), spread}
					t.fill, t.ink = "url(#hatch-unmet)", "black"
				default:
					fill, dark := color(safeDiv(c.Metric.Median, hi))
					t.lines = []string{Format(c.Metric.Median), spread}
					t.fill, t.ink = fill, "black"
					if dark {
						t.ink = "white"
					}
					if c.State == ExpectedFail {
						t.lines = []string{"expected-fail", Format(c.Metric.Median), spread}
					}
				}
			case i == j:
				t.lines, t.fill, t.ink = []string{"self", "not measured"}, "#f4f4f4", "#777777"
			case bidir && i > j:
				t.lines, t.fill, t.ink = []string{fmt.Sprintf("see %d↔%d", j, i), "(one case)"}, "#f4f4f4", "#777777"
			default:
				t.lines, t.fill, t.ink = []string{"not run"}, "#f4f4f4", "#777777"
			}
			for _, l := range t.lines {
				cw = max(cw, textW(l, 13, true)+16)
			}
			texts[[2]int{i, j}] = t
		}
	}
	const ch = 58
	rowLabel := who + "(row) 00"
	left := textW(rowLabel, 13, false) + 24
	top := 44 + 18*len(lines) + 50
	legendW := 18
	gridW := n * cw
	legendX := left + gridW + 28
	topLabel := Format(hi)
	if cv, _ := m.Ceiling(); cv > 0 && cv >= hi {
		topLabel += " ceiling"
	}
	legendLabelW := max(textW(topLabel, 12, false), textW(m.Unit, 12, false)) + 8
	width := legendX + legendW + 6 + legendLabelW + 12
	width = max(width, 20+textW(title, 17, true), 20+textW(sub, 13, false))
	const keyText = "unmet: the case missed its expected outcome (named in the cell)"
	for _, l := range append(lines, keyText) {
		width = max(width, 48+textW(l, 12, false))
	}
	gridH := n * ch
	legendH := max(gridH, 120)
	height := top + legendH + 58
	var b strings.Builder
	svgOpen(&b, width, height, title)
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(&b, `<text x="10" y="44" fill="#333">%s</text>`+"\n", esc(sub))
	for k, l := range lines {
		fmt.Fprintf(&b, `<text x="10" y="%d" font-size="12" fill="#333">%s</text>`+"\n", 44+18*(k+1), esc(l))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="12" fill="#333">column: %s</text>`+"\n", left+gridW/2, top-26, who)
	for j := range n {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s %d</text>`+"\n", left+j*cw+cw/2, top-8, who, j)
	}
	for i := range n {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s(row) %d</text>`+"\n", left-8, top+i*ch+ch/2+5, who, i)
		for j := range n {
			x, y := left+j*cw, top+i*ch
			t := texts[[2]int{i, j}]
			b.WriteString("<g>")
			if t.tip != "" {
				fmt.Fprintf(&b, "<title>%s</title>", esc(t.tip))
			}
			stroke, sw := "white", 1
			if t.state == Unmet {
				stroke, sw = "black", 3
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="%d"/>`, x, y, cw, ch, t.fill, stroke, sw)
			y0 := y + ch/2 - (len(t.lines)-1)*8 + 4
			for k, l := range t.lines {
				attr := `font-size="11"`
				if k == 0 {
					attr = `font-size="13" font-weight="bold"`
				}
				if t.state == Unmet {
					// Text on the hatch sits on a white band so it reads.
					fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="14" fill="white" opacity="0.85"/>`, x+cw/2-textW(l, 13, true)/2-3, y0+k*16-11, textW(l, 13, true)+6)
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s" %s>%s</text>`, x+cw/2, y0+k*16, t.ink, attr, esc(l))
			}
			b.WriteString("</g>\n")
		}
	}
	// Legend: a vertical ramp from 0 (bottom) to the scale's top.
	gid := "ramp-" + safe(m.File+m.Family+m.Metric)
	fmt.Fprintf(&b, `<defs><linearGradient id="%s" x1="0" y1="1" x2="0" y2="0">`, esc(gid))
	for k := range palette {
		cc, _ := color(float64(k) / float64(len(palette)-1))
		fmt.Fprintf(&b, `<stop offset="%.2f" stop-color="%s"/>`, float64(k)/float64(len(palette)-1), cc)
	}
	b.WriteString("</linearGradient></defs>\n")
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="url(#%s)" stroke="#888"/>`+"\n", legendX, top, legendW, legendH, esc(gid))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", legendX+legendW+6, top+10, topLabel)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">0</text>`+"\n", legendX+legendW+6, top+legendH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" fill="#333">%s</text>`+"\n", legendX, top+legendH+18, esc(m.Unit))
	// Key to the marks.
	ky := top + max(gridH, legendH) + 36
	fmt.Fprintf(&b, `<rect x="10" y="%d" width="22" height="14" fill="url(#hatch-unmet)" stroke="black" stroke-width="2"/>`, ky-11)
	fmt.Fprintf(&b, `<text x="38" y="%d" font-size="12">%s</text>`+"\n", ky, keyText)
	return b.String() + "</svg>\n"
}

// Spread says how far a metric's samples ranged: "min–max", "min = max"
// when they agree to the printed digits, "n=1" for a single sample.
func Spread(m report.Metric) string {
	lo, hi := Format(m.Min), Format(m.Max)
	switch {
	case m.N == 1:
		return "n=1"
	case lo == hi:
		return fmt.Sprintf("min = max (n=%d)", m.N)
	}
	return lo + "–" + hi
}

func safeDiv(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// PairRows builds the report's pair matrix: for each backend, kind and
// ordered pair of ranks, the cases that name the pair (see Pair), how many
// are unmet as the verdict counts them (Classify: a not-supported skip or
// a known bug is not), the worst outcome, and every metric the cases
// measured. Rows come sorted by backend, kind, source, destination.
func PairRows(results []report.Result) []report.PairRow {
	type key struct {
		backend, kind string
		src, dst      int
	}
	rows := map[key]*report.PairRow{}
	for _, r := range results {
		be, kind, s, d, ok := pairPath(r)
		if !ok {
			continue
		}
		k := key{be, kind, s, d}
		row := rows[k]
		if row == nil {
			row = &report.PairRow{Backend: k.backend, Kind: k.kind, Src: s, Dst: d, Worst: report.Pass}
			rows[k] = row
		}
		row.Cases++
		if sharedGPU(r, s, d) {
			row.SharedGPU = true
		}
		if Classify(r) == Unmet {
			row.Unmet++
		}
		if r.Outcome.Severity() > row.Worst.Severity() {
			row.Worst = r.Outcome
		}
		for name, m := range r.Metrics {
			if row.Metrics == nil {
				row.Metrics = map[string]report.Metric{}
			}
			row.Metrics[name] = m
		}
	}
	out := make([]report.PairRow, 0, len(rows))
	for _, row := range rows {
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Backend != b.Backend {
			return a.Backend < b.Backend
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Src != b.Src {
			return a.Src < b.Src
		}
		return a.Dst < b.Dst
	})
	return out
}

// sharedGPU reports whether a GPU case ran ranks s and d on one device,
// from its rank evidence (the host backend's ranks all report device 0,
// the CPU: not a GPU they share).
func sharedGPU(r report.Result, s, d int) bool {
	if s == d || r.Backend == "host" {
		return false
	}
	dev := map[int]int{}
	for _, rk := range r.Ranks {
		dev[rk.Rank] = rk.Device
	}
	ds, okS := dev[s]
	dd, okD := dev[d]
	return okS && okD && ds == dd
}

// WritePairTable prints the pair matrix (report.Pairs) as one table per backend
// and kind: a row per ordered pair of ranks with its case count, misses,
// worst outcome and each metric's median.
func WritePairTable(w io.Writer, rows []report.PairRow) {
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Backend == rows[i].Backend && rows[j].Kind == rows[i].Kind {
			j++
		}
		group := rows[i:j]
		seen := map[string]string{}
		for _, r := range group {
			for n, m := range r.Metrics {
				seen[n] = m.Unit
			}
		}
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\npairs %s.%s: cases naming each ordered pair of ranks; metrics are medians\n", rows[i].Backend, rows[i].Kind)
		fmt.Fprintf(w, "%-7s %5s %5s  %-10s", "SRC>DST", "CASES", "UNMET", "WORST")
		for _, n := range names {
			fmt.Fprintf(w, " %*s", max(12, len(n)), n)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-7s %5s %5s  %-10s", "", "", "", "")
		for _, n := range names {
			fmt.Fprintf(w, " %*s", max(12, len(n)), seen[n])
		}
		fmt.Fprintln(w)
		shared := false
		for _, r := range group {
			fmt.Fprintf(w, "%-7s %5d %5d  %-10s", fmt.Sprintf("%d>%d", r.Src, r.Dst), r.Cases, r.Unmet, r.Worst)
			for _, n := range names {
				if m, ok := r.Metrics[n]; ok {
					fmt.Fprintf(w, " %*.4g", max(12, len(n)), m.Median)
				} else {
					fmt.Fprintf(w, " %*s", max(12, len(n)), "-")
				}
			}
			if r.SharedGPU {
				shared = true
				fmt.Fprint(w, "  shared GPU")
			}
			fmt.Fprintln(w)
		}
		if shared {
			fmt.Fprintln(w, "shared GPU: both ranks on one device; their kernels are time-sliced unless MPS runs, and no link between GPUs carries their copies")
		}
		i = j
	}
}
