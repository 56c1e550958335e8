package heatmap

import (
	"fmt"
	"slices"
	"strings"

	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

// stateStyle is how a state looks: a fill that differs in lightness as
// well as hue (blue for met, vermillion for unmet: Okabe and Ito's
// colour-blind-safe pair), a hatch for the two states that need a second
// look, and the word that says it without colour.
var stateStyle = map[pairs.State]struct{ fill, ink, word string }{
	pairs.Met:          {"#cfe3f3", "black", "met"},
	pairs.NotSupported: {"#b8b8b8", "black", "not supported"},
	pairs.ExpectedFail: {"url(#hatch-xfail)", "black", "expected-fail"},
	pairs.NotRun:       {"#ffffff", "black", "not run"},
	pairs.Unmet:        {"url(#hatch-unmet)", "black", "UNMET"},
}

// Tally counts one group of cases by state and keeps the worst.
type Tally struct {
	Counts map[pairs.State]int
	Worst  pairs.State
	// WorstOutcome is the most severe outcome among the cases in the
	// worst state (what a reader needs to know: fail, crash, timeout…).
	WorstOutcome report.Outcome
	Cases        []string
}

func (t *Tally) add(r report.Result) {
	st := pairs.Classify(r)
	if t.Counts == nil {
		t.Counts = map[pairs.State]int{}
		t.Worst, t.WorstOutcome = st, r.Outcome
	}
	t.Counts[st]++
	t.Cases = append(t.Cases, r.ID())
	switch {
	case st.Order() > t.Worst.Order():
		t.Worst, t.WorstOutcome = st, r.Outcome
	case st == t.Worst && r.Outcome.Severity() > t.WorstOutcome.Severity():
		t.WorstOutcome = r.Outcome
	}
}

// total is how many cases the tally holds.
func (t *Tally) total() int {
	n := 0
	for _, c := range t.Counts {
		n += c
	}
	return n
}

// summary says the counts in words, worst state first ("37 unmet, 25 met").
func (t *Tally) summary() string {
	var parts []string
	for i := len(pairs.States) - 1; i >= 0; i-- {
		if c := t.Counts[pairs.States[i]]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, strings.ToLower(stateStyle[pairs.States[i]].word)))
		}
	}
	return strings.Join(parts, ", ")
}

// Grid is a verdict matrix: rows × columns of tallies, in the order the
// run met them.
type Grid struct {
	Title   string
	Caption string
	Kind    string // backend.kind for a pair grid, "" for the overview
	File    string
	Rows    []string
	Cols    []string
	Cells   map[[2]string]*Tally
	// Pairs: cells show one case each (the outcome word), not counts.
	Pairs bool
}

func (g *Grid) add(row, col string, r report.Result) {
	if !slices.Contains(g.Rows, row) {
		g.Rows = append(g.Rows, row)
	}
	if !slices.Contains(g.Cols, col) {
		g.Cols = append(g.Cols, col)
	}
	t := g.Cells[[2]string{row, col}]
	if t == nil {
		t = &Tally{}
		g.Cells[[2]string{row, col}] = t
	}
	t.add(r)
}

// Unmet lists the cells (row, column) whose worst state is unmet.
func (g *Grid) Unmet() [][2]string {
	var out [][2]string
	for _, r := range g.Rows {
		for _, c := range g.Cols {
			if t := g.Cells[[2]string{r, c}]; t != nil && t.Worst == pairs.Unmet {
				out = append(out, [2]string{r, c})
			}
		}
	}
	return out
}

// VerdictMatrix is the run's first picture: one column per allocation
// path (backend.kind), one row per spec family (the id's third segment),
// each cell the worst state of its cases with the counts. (Families are
// many and kinds few, so kinds go across and the picture stays narrow.)
// Nil when the run has no results.
func VerdictMatrix(results []report.Result) *Grid {
	g := &Grid{Title: "verdict: spec families × allocation paths", File: "verdict.svg", Cells: map[[2]string]*Tally{},
		Caption: "each cell: the worst state of its cases, then how many cases are in each state"}
	for _, r := range results {
		if r.Spec == "" {
			continue // an id not of the suite's grammar (report.ParseCase)
		}
		g.add(r.Spec, r.Backend+"."+r.Kind, r)
	}
	if len(g.Rows) == 0 {
		return nil
	}
	return g
}

// PairVerdicts is one grid per allocation path: a row per ordered pair of
// GPUs (the cases that name a pair), a column per spec (the family without
// backend, kind and world size), the case's outcome in each cell. Specs
// with the "atomics" label come first: they are the question the suite
// asks; copies and round trips follow.
func PairVerdicts(results []report.Result) []*Grid {
	byKind := map[string]*Grid{}
	var kinds []string
	atomics := map[string]bool{}
	for _, r := range results {
		s, d, ok := pairs.Pair(r)
		if !ok || r.Spec == "" {
			continue
		}
		kind := r.Backend + "." + r.Kind
		g := byKind[kind]
		if g == nil {
			g = &Grid{Title: "verdict per GPU pair: " + kind, Kind: kind, File: "verdict." + pairs.Safe(kind) + ".pairs.svg", Cells: map[[2]string]*Tally{}, Pairs: true,
				Caption: "row: the case's pair (first GPU → second), column: the spec"}
			byKind[kind] = g
			kinds = append(kinds, kind)
		}
		spec := pairs.Spec(r)
		if report.LabelAtomics.In(r.Labels) {
			atomics[kind+"|"+spec] = true
		}
		g.add(fmt.Sprintf("%d→%d", s, d), spec, r)
	}
	out := make([]*Grid, 0, len(kinds))
	for _, k := range kinds {
		g := byKind[k]
		slices.SortStableFunc(g.Cols, func(a, b string) int {
			aa, ab := atomics[k+"|"+a], atomics[k+"|"+b]
			switch {
			case aa && !ab:
				return -1
			case ab && !aa:
				return 1
			}
			return 0
		})
		slices.SortStableFunc(g.Rows, func(a, b string) int {
			var as, ad, bs, bd int
			fmt.Sscanf(strings.Replace(a, "→", " ", 1), "%d %d", &as, &ad)
			fmt.Sscanf(strings.Replace(b, "→", " ", 1), "%d %d", &bs, &bd)
			if as != bs {
				return as - bs
			}
			return ad - bd
		})
		out = append(out, g)
	}
	return out
}

// gridCell is what one verdict cell shows: its lines, worst state and
// hover text.
type gridCell struct {
	lines []string
	st    pairs.State
	tip   string
}

// gridPic is a verdict grid laid out: each cell's text and the sizes the
// text decides.
type gridPic struct {
	g                        *Grid
	subtitle                 string
	texts                    map[[2]string]gridCell
	cw, left, top, hw        int
	gridW, gridH, width, hgt int
}

const gridCH = 44 // cell height

// SVG renders the grid. Column headers are slanted so that long spec
// names keep columns narrow; every size comes from the text it holds.
func (g *Grid) SVG(subtitle string) string {
	p := &gridPic{g: g, subtitle: subtitle}
	p.cellTexts()
	p.size()
	var b strings.Builder
	svgOpen(&b, p.width, p.hgt, g.Title)
	p.drawHeaders(&b)
	p.drawCells(&b)
	p.drawKey(&b)
	return b.String() + "</svg>\n"
}

// cellTexts: a pair grid's cell of one case says its outcome (and its
// state when not met); any other cell the worst state and the counts.
func (p *gridPic) cellTexts() {
	g := p.g
	p.texts = map[[2]string]gridCell{}
	p.cw = 64
	for _, r := range g.Rows {
		for _, c := range g.Cols {
			t := g.Cells[[2]string{r, c}]
			if t == nil {
				continue
			}
			x := gridCell{st: t.Worst}
			word := stateStyle[t.Worst].word
			if g.Pairs && t.total() == 1 {
				x.lines = []string{string(t.WorstOutcome)}
				if t.Worst != pairs.Met {
					x.lines = append(x.lines, word)
				}
			} else {
				first := "all met"
				if t.Worst != pairs.Met {
					first = word + ": " + string(t.WorstOutcome)
				}
				x.lines = []string{first, t.summary()}
			}
			tip := strings.Join(t.Cases, ", ")
			if len(tip) > 600 {
				tip = tip[:600] + "…"
			}
			x.tip = fmt.Sprintf("%s × %s: %s (%s)", r, c, t.summary(), tip)
			for _, l := range x.lines {
				p.cw = max(p.cw, textW(l, 12, true)+14)
			}
			p.texts[[2]string{r, c}] = x
		}
	}
}

// size: room for the row labels, the slanted headers (-40°: their height
// is the longest name's width × sin, and the last leans right past the
// grid by its width × cos), the captions and the key.
func (p *gridPic) size() {
	g := p.g
	p.left = 20
	for _, r := range g.Rows {
		p.left = max(p.left, textW(r, 13, false)+24)
	}
	for _, c := range g.Cols {
		p.hw = max(p.hw, textW(c, 12, false))
	}
	p.top = 74 + int(float64(p.hw)*0.65) + 20
	p.gridW, p.gridH = len(g.Cols)*p.cw, len(g.Rows)*gridCH
	w := p.left + p.gridW + int(float64(p.hw)*0.77) + 20
	w = max(w, 20+textW(g.Title, 17, true), 20+textW(p.subtitle, 13, false), 20+textW(g.Caption, 12, false))
	keyW := 10
	for _, st := range pairs.States {
		keyW += 30 + textW(stateStyle[st].word, 12, false) + 16
	}
	p.width, p.hgt = max(w, keyW), p.top+p.gridH+50
}

func (p *gridPic) drawHeaders(b *strings.Builder) {
	g := p.g
	fmt.Fprintf(b, `<text x="10" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", esc(g.Title))
	fmt.Fprintf(b, `<text x="10" y="44" fill="#333">%s</text>`+"\n", esc(p.subtitle))
	fmt.Fprintf(b, `<text x="10" y="62" font-size="12" fill="#333">%s</text>`+"\n", esc(g.Caption))
	for j, c := range g.Cols {
		x, y := p.left+j*p.cw+p.cw/2, p.top-6
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" transform="rotate(-40 %d %d)">%s</text>`+"\n", x, y, x, y, esc(c))
	}
}

func (p *gridPic) drawCells(b *strings.Builder) {
	g, cw := p.g, p.cw
	for i, r := range g.Rows {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", p.left-8, p.top+i*gridCH+gridCH/2+5, esc(r))
		for j, c := range g.Cols {
			x, y := p.left+j*cw, p.top+i*gridCH
			t, ok := p.texts[[2]string{r, c}]
			if !ok {
				fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f7f7f7" stroke="white"/><text x="%d" y="%d" text-anchor="middle" fill="#999" font-size="11">none</text>`+"\n", x, y, cw, gridCH, x+cw/2, y+gridCH/2+4)
				continue
			}
			p.drawCell(b, x, y, t)
		}
	}
}

// drawCell draws one cell at (x, y): an unmet one framed; text over a
// hatch sits on a white band so it reads.
func (p *gridPic) drawCell(b *strings.Builder, x, y int, t gridCell) {
	cw := p.cw
	sty := stateStyle[t.st]
	stroke, sw := "white", 1
	if t.st == pairs.Unmet {
		stroke, sw = "black", 3
	}
	fmt.Fprintf(b, `<g class="cell %s"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="%d"/>`, t.st, esc(t.tip), x, y, cw, gridCH, sty.fill, stroke, sw)
	y0 := y + gridCH/2 - (len(t.lines)-1)*8 + 4
	for k, l := range t.lines {
		attr := `font-size="11"`
		if k == 0 {
			attr = `font-size="12" font-weight="bold"`
		}
		if t.st == pairs.Unmet || t.st == pairs.ExpectedFail {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="14" fill="white" opacity="0.85"/>`, x+cw/2-textW(l, 12, true)/2-3, y0+k*16-11, textW(l, 12, true)+6)
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="%s" %s>%s</text>`, x+cw/2, y0+k*16, sty.ink, attr, esc(l))
	}
	b.WriteString("</g>\n")
}

// drawKey: each state's swatch and word.
func (p *gridPic) drawKey(b *strings.Builder) {
	kx, ky := 10, p.top+p.gridH+30
	for _, st := range pairs.States {
		sty := stateStyle[st]
		stroke, sw := "#666", 1
		if st == pairs.Unmet {
			stroke, sw = "black", 2
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="22" height="14" fill="%s" stroke="%s" stroke-width="%d"/>`, kx, ky-11, sty.fill, stroke, sw)
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", kx+28, ky, esc(sty.word))
		kx += 30 + textW(sty.word, 12, false) + 16
	}
}
