package heatmap

import (
	"fmt"
	"strings"

	"p2patomics/harness/pairs"
)

// matrixKey explains the hatch every heatmap may show.
const matrixKey = "unmet: the case missed its expected outcome (named in the cell)"

// cellText is what one heatmap cell shows: its lines (the first bold), its
// fill and ink, the case's state and the hover text.
type cellText struct {
	lines []string
	fill  string
	ink   string
	state pairs.State
	tip   string
}

// matrixPic is a heatmap laid out: its captions, each cell's text, and the
// sizes the text decides.
type matrixPic struct {
	m                               *pairs.Matrix
	n                               int
	title, sub, who, topLabel       string
	lines                           []string
	hi                              float64
	texts                           map[[2]int]cellText
	cw, left, top, gridW, gridH     int
	legendX, legendH, width, height int
}

const (
	matrixCH      = 58 // cell height
	matrixLegendW = 18
)

// MatrixSVG renders a heatmap. subtitle (may be empty) names the machine.
//
// Cells show the median and, under it, the min–max of the samples; the
// colour runs from zero, so neighbouring values look alike; a cell whose
// case missed its expected outcome is hatched, framed and names the
// outcome, whatever its value; pairs no case measured say so.
func MatrixSVG(m *pairs.Matrix, subtitle string) string {
	p := &matrixPic{m: m, n: m.Size, hi: m.ScaleMax()}
	p.captions(subtitle)
	p.cellTexts()
	p.size()
	var b strings.Builder
	svgOpen(&b, p.width, p.height, p.title)
	p.drawCaptions(&b)
	p.drawGrid(&b)
	p.drawLegend(&b)
	return b.String() + "</svg>\n"
}

// captions: the title (metric and unit), the subtitle (family and
// machine), the flow in words, the colour scale, the ceiling's basis, and
// whether the axes are GPUs or ranks.
func (p *matrixPic) captions(subtitle string) {
	m := p.m
	dir, flowText := m.Flow()
	unit := m.Unit
	if unit == "" {
		unit = "no unit"
	}
	better := map[int]string{1: "higher is better", -1: "lower is better", 0: "direction unknown"}[m.Better.Sign()]
	p.title = fmt.Sprintf("%s (%s)", m.Metric, unit)
	p.sub = m.Family
	if subtitle != "" {
		p.sub += " — " + subtitle
	}
	p.lines = []string{
		fmt.Sprintf("%s: %s", arrows(dir), flowText),
		fmt.Sprintf("cell: median, min–max below; colour from 0 to %s %s; %s", pairs.Format(p.hi), m.Unit, better),
	}
	cv, basis := m.Ceiling()
	if cv > 0 {
		if len(basis) > 110 {
			basis = basis[:110] + "…"
		}
		p.lines[1] = fmt.Sprintf("cell: median, min–max below; colour from 0 to the ceiling %s %s; %s", pairs.Format(cv), m.Unit, better)
		p.lines = append(p.lines, "ceiling: "+basis)
	}
	p.topLabel = pairs.Format(p.hi)
	if cv > 0 && cv >= p.hi {
		p.topLabel += " ceiling"
	}
	// Rows and columns are ranks; they name GPUs only when each rank had
	// its own.
	p.who = "GPU"
	if m.Shared {
		p.who = "rank"
		p.lines = append(p.lines, "rows and columns are ranks: some pairs of ranks shared one GPU, so their bytes crossed that GPU's memory, not a link")
		p.lines[0] = strings.ReplaceAll(p.lines[0], "GPU", "rank")
	}
}

// cellTexts decides every cell's text; the widest decides the cell width.
func (p *matrixPic) cellTexts() {
	p.texts = map[[2]int]cellText{}
	p.cw = 84
	bidir := p.m.Bidir()
	for i := range p.n {
		for j := range p.n {
			t := p.cellText(i, j, bidir)
			for _, l := range t.lines {
				p.cw = max(p.cw, textW(l, 13, true)+16)
			}
			p.texts[[2]int{i, j}] = t
		}
	}
}

// cellText is one cell: a measured pair (its outcome word first when
// unmet), the diagonal, the lower triangle of a bidirectional map, or a
// pair no case measured.
func (p *matrixPic) cellText(i, j int, bidir bool) cellText {
	c, ok := p.m.Cells[[2]int{i, j}]
	var t cellText
	switch {
	case ok:
		spread := pairs.Spread(c.Metric)
		t.tip = fmt.Sprintf("%s: %s; median %s, min %s, max %s %s, n=%d, %s", c.Case, c.State, pairs.Format(c.Metric.Median), pairs.Format(c.Metric.Min), pairs.Format(c.Metric.Max), c.Metric.Unit, c.Metric.N, c.Metric.Method)
		t.state = c.State
		if c.State == pairs.Unmet {
			t.lines = []string{strings.ToUpper(string(c.Outcome)), pairs.Format(c.Metric.Median), spread}
			t.fill, t.ink = "url(#hatch-unmet)", "black"
			return t
		}
		fill, dark := color(safeDiv(c.Metric.Median, p.hi))
		t.lines = []string{pairs.Format(c.Metric.Median), spread}
		t.fill, t.ink = fill, "black"
		if dark {
			t.ink = "white"
		}
		if c.State == pairs.ExpectedFail {
			t.lines = []string{"expected-fail", pairs.Format(c.Metric.Median), spread}
		}
	case i == j:
		t.lines, t.fill, t.ink = []string{"self", "not measured"}, "#f4f4f4", "#777777"
	case bidir && i > j:
		t.lines, t.fill, t.ink = []string{fmt.Sprintf("see %d↔%d", j, i), "(one case)"}, "#f4f4f4", "#777777"
	default:
		t.lines, t.fill, t.ink = []string{"not run"}, "#f4f4f4", "#777777"
	}
	return t
}

// size: the canvas fits the row labels, the grid, the legend and every
// caption line.
func (p *matrixPic) size() {
	p.left = textW(p.who+"(row) 00", 13, false) + 24
	p.top = 44 + 18*len(p.lines) + 50
	p.gridW, p.gridH = p.n*p.cw, p.n*matrixCH
	p.legendX = p.left + p.gridW + 28
	p.legendH = max(p.gridH, 120)
	legendLabelW := max(textW(p.topLabel, 12, false), textW(p.m.Unit, 12, false)) + 8
	w := p.legendX + matrixLegendW + 6 + legendLabelW + 12
	w = max(w, 20+textW(p.title, 17, true), 20+textW(p.sub, 13, false))
	for _, l := range append(p.lines, matrixKey) {
		w = max(w, 48+textW(l, 12, false))
	}
	p.width, p.height = w, p.top+p.legendH+58
}

func (p *matrixPic) drawCaptions(b *strings.Builder) {
	fmt.Fprintf(b, `<text x="10" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", esc(p.title))
	fmt.Fprintf(b, `<text x="10" y="44" fill="#333">%s</text>`+"\n", esc(p.sub))
	for k, l := range p.lines {
		fmt.Fprintf(b, `<text x="10" y="%d" font-size="12" fill="#333">%s</text>`+"\n", 44+18*(k+1), esc(l))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="12" fill="#333">column: %s</text>`+"\n", p.left+p.gridW/2, p.top-26, p.who)
	for j := range p.n {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s %d</text>`+"\n", p.left+j*p.cw+p.cw/2, p.top-8, p.who, j)
	}
}

func (p *matrixPic) drawGrid(b *strings.Builder) {
	for i := range p.n {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s(row) %d</text>`+"\n", p.left-8, p.top+i*matrixCH+matrixCH/2+5, p.who, i)
		for j := range p.n {
			p.drawCell(b, p.left+j*p.cw, p.top+i*matrixCH, p.texts[[2]int{i, j}])
		}
	}
}

// drawCell draws one cell at (x, y): an unmet one framed, its text on a
// white band over the hatch so it reads.
func (p *matrixPic) drawCell(b *strings.Builder, x, y int, t cellText) {
	cw := p.cw
	b.WriteString("<g>")
	if t.tip != "" {
		fmt.Fprintf(b, "<title>%s</title>", esc(t.tip))
	}
	stroke, sw := "white", 1
	if t.state == pairs.Unmet {
		stroke, sw = "black", 3
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="%d"/>`, x, y, cw, matrixCH, t.fill, stroke, sw)
	y0 := y + matrixCH/2 - (len(t.lines)-1)*8 + 4
	for k, l := range t.lines {
		attr := `font-size="11"`
		if k == 0 {
			attr = `font-size="13" font-weight="bold"`
		}
		if t.state == pairs.Unmet {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="14" fill="white" opacity="0.85"/>`, x+cw/2-textW(l, 13, true)/2-3, y0+k*16-11, textW(l, 13, true)+6)
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="%s" %s>%s</text>`, x+cw/2, y0+k*16, t.ink, attr, esc(l))
	}
	b.WriteString("</g>\n")
}

// drawLegend: a vertical ramp from 0 (bottom) to the scale's top, then
// the key to the hatch.
func (p *matrixPic) drawLegend(b *strings.Builder) {
	m := p.m
	gid := "ramp-" + pairs.Safe(m.File+m.Family+m.Metric)
	fmt.Fprintf(b, `<defs><linearGradient id="%s" x1="0" y1="1" x2="0" y2="0">`, esc(gid))
	for k := range palette {
		cc, _ := color(float64(k) / float64(len(palette)-1))
		fmt.Fprintf(b, `<stop offset="%.2f" stop-color="%s"/>`, float64(k)/float64(len(palette)-1), cc)
	}
	b.WriteString("</linearGradient></defs>\n")
	x, top, h := p.legendX, p.top, p.legendH
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="url(#%s)" stroke="#888"/>`+"\n", x, top, matrixLegendW, h, esc(gid))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", x+matrixLegendW+6, top+10, p.topLabel)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12">0</text>`+"\n", x+matrixLegendW+6, top+h)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#333">%s</text>`+"\n", x, top+h+18, esc(m.Unit))
	ky := top + max(p.gridH, h) + 36
	fmt.Fprintf(b, `<rect x="10" y="%d" width="22" height="14" fill="url(#hatch-unmet)" stroke="black" stroke-width="2"/>`, ky-11)
	fmt.Fprintf(b, `<text x="38" y="%d" font-size="12">%s</text>`+"\n", ky, matrixKey)
}
