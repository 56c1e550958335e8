// Package heatmap renders per-GPU-pair metrics as SVG heatmaps (rows =
// source GPU, columns = destination GPU), in pure Go.
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
// another.) Files are named <metric>.svg when a metric name occurs in one
// family only, else <family>.<metric>.svg for each family.
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
}

// Matrix is one heatmap.
type Matrix struct {
	Metric string // metric name
	Family string // case family (see package doc)
	Unit   string
	Size   int // max(GPU index)+1
	Cells  map[[2]int]Cell
	File   string // file name WriteAll uses
}

var (
	gSegRe = regexp.MustCompile(`^(?:g(\d+)g(\d+)|r(\d+)r(\d+))$`)
	pairRe = regexp.MustCompile(`^(\d+)-(\d+)$`)
)

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
	for _, seg := range strings.Split(r.ID, ".") {
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
	segs := strings.Split(r.ID, ".")
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
// for the same cell replaces an earlier one.
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
			mx.Cells[[2]int{src, dst}] = Cell{Src: src, Dst: dst, Metric: m, Case: r.ID}
			if n := max(src, dst) + 1; n > mx.Size {
				mx.Size = n
			}
		}
	}
	families := map[string]int{}
	for k := range byKey {
		families[k[0]]++
	}
	out := make([]*Matrix, 0, len(byKey))
	for k, mx := range byKey {
		if families[k[0]] == 1 {
			mx.File = safe(mx.Metric) + ".svg"
		} else {
			mx.File = safe(mx.Family) + "." + safe(mx.Metric) + ".svg"
		}
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

// WriteAll renders every heatmap of rep into dir (created if needed) and an
// index.html that shows them all; it returns the files written (SVGs, then
// index.html). With no per-pair metrics it writes nothing and returns nil.
func WriteAll(dir string, rep *report.Report) ([]string, error) {
	ms := Matrices(rep.Results)
	if len(ms) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("heatmap: %w", err)
	}
	title := ""
	if rep.Environment != nil {
		title = envTitle(rep.Environment)
	}
	var files []string
	var idx strings.Builder
	idx.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>p2patomics heatmaps</title></head><body>\n")
	fmt.Fprintf(&idx, "<h1>p2patomics heatmaps</h1>\n<p>%s</p>\n", esc(title))
	for _, m := range ms {
		p := filepath.Join(dir, m.File)
		if err := os.WriteFile(p, []byte(m.SVG(title)), 0o644); err != nil {
			return files, fmt.Errorf("heatmap: %w", err)
		}
		files = append(files, p)
		fmt.Fprintf(&idx, "<div><img src=\"%s\" alt=\"%s\"></div>\n", esc(m.File), esc(m.Metric))
	}
	idx.WriteString("</body></html>\n")
	p := filepath.Join(dir, "index.html")
	if err := os.WriteFile(p, []byte(idx.String()), 0o644); err != nil {
		return files, fmt.Errorf("heatmap: %w", err)
	}
	return append(files, p), nil
}

func envTitle(env map[string]any) string {
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

// palette runs from poor (light) to good (dark) — a viridis-like ramp
// reversed so that the best cell stands out.
var palette = [][3]float64{
	{253, 231, 37}, {94, 201, 98}, {33, 145, 140}, {59, 82, 139}, {68, 1, 84},
}

func color(t float64) (string, bool) {
	if t < 0 {
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

// SVG renders the matrix. subtitle (may be empty) is printed under the title.
func (m *Matrix) SVG(subtitle string) string {
	const (
		cw, ch    = 96, 44
		left      = 110
		top       = 96
		legendW   = 20
		legendGap = 36
	)
	n := m.Size
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range m.Cells {
		lo = math.Min(lo, c.Metric.Median)
		hi = math.Max(hi, c.Metric.Median)
	}
	dir := Direction(m.Unit)
	norm := func(v float64) float64 {
		if hi <= lo {
			return 1
		}
		t := (v - lo) / (hi - lo)
		if dir < 0 {
			t = 1 - t
		}
		return t
	}
	width := left + n*cw + legendGap + legendW + 90
	if width < 520 {
		width = 520
	}
	height := top + n*ch + 70
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	unit := m.Unit
	if unit == "" {
		unit = "no unit"
	}
	fmt.Fprintf(&b, `<title>%s (%s)</title>`+"\n", esc(m.Metric), esc(unit))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="17" font-weight="bold">%s (%s)</text>`+"\n", esc(m.Metric), esc(unit))
	sub := m.Family
	if subtitle != "" {
		sub += " — " + subtitle
	}
	fmt.Fprintf(&b, `<text x="10" y="44" fill="#444">%s</text>`+"\n", esc(sub))
	better := map[int]string{1: "higher is better", -1: "lower is better", 0: "direction unknown"}[dir]
	fmt.Fprintf(&b, `<text x="10" y="62" fill="#444">rows: source GPU, columns: destination GPU; median per cell; %s</text>`+"\n", better)
	for j := range n {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">dst %d</text>`+"\n", left+j*cw+cw/2, top-8, j)
	}
	for i := range n {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">src %d</text>`+"\n", left-8, top+i*ch+ch/2+5, i)
		for j := range n {
			x, y := left+j*cw, top+i*ch
			c, ok := m.Cells[[2]int{i, j}]
			if !ok {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#eeeeee" stroke="white"/>`+"\n", x, y, cw, ch)
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#999">—</text>`+"\n", x+cw/2, y+ch/2+5)
				continue
			}
			fill, dark := color(norm(c.Metric.Median))
			txt := "black"
			if dark {
				txt = "white"
			}
			fmt.Fprintf(&b, `<g><title>%s: median %s, min %s, max %s %s, n=%d, %s</title>`, esc(c.Case), Format(c.Metric.Median), Format(c.Metric.Min), Format(c.Metric.Max), esc(c.Metric.Unit), c.Metric.N, esc(c.Metric.Method))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="white"/>`, x, y, cw, ch, fill)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text></g>`+"\n", x+cw/2, y+ch/2+5, txt, Format(c.Metric.Median))
		}
	}
	// Legend: a vertical ramp, best at the top.
	lx, ly, lh := left+n*cw+legendGap, top, max(n*ch, 120)
	b.WriteString(`<defs><linearGradient id="ramp" x1="0" y1="1" x2="0" y2="0">`)
	for k := range palette {
		cc, _ := color(float64(k) / float64(len(palette)-1))
		fmt.Fprintf(&b, `<stop offset="%.2f" stop-color="%s"/>`, float64(k)/float64(len(palette)-1), cc)
	}
	b.WriteString("</linearGradient></defs>\n")
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="url(#ramp)" stroke="#888"/>`+"\n", lx, ly, legendW, lh)
	best, worst := hi, lo
	if dir < 0 {
		best, worst = lo, hi
	}
	if len(m.Cells) > 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+legendW+6, ly+10, Format(best))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+legendW+6, ly+lh, Format(worst))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">%s</text>`+"\n", lx, ly+lh+20, esc(m.Unit))
	b.WriteString("</svg>\n")
	return b.String()
}

// PairRows builds the report's pair matrix: for each backend, kind and
// ordered pair of ranks, the cases that name the pair (see Pair), how many
// missed their expected outcome, the worst outcome, and every metric the
// cases measured. Rows come sorted by backend, kind, source, destination.
func PairRows(results []report.Result) []report.PairRow {
	type key struct {
		backend, kind string
		src, dst      int
	}
	rows := map[key]*report.PairRow{}
	for _, r := range results {
		s, d, ok := Pair(r)
		if !ok {
			continue
		}
		segs := strings.SplitN(r.ID, ".", 3)
		if len(segs) < 3 {
			continue
		}
		k := key{segs[0], segs[1], s, d}
		row := rows[k]
		if row == nil {
			row = &report.PairRow{Backend: k.backend, Kind: k.kind, Src: s, Dst: d, Worst: report.Pass}
			rows[k] = row
		}
		row.Cases++
		if sharedGPU(r, s, d) {
			row.SharedGPU = true
		}
		if !r.Met() {
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
	if s == d || strings.HasPrefix(r.ID, "host.") {
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
