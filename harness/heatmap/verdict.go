package heatmap

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"p2patomics/harness/report"
)

// stateStyle is how a state looks: a fill that differs in lightness as
// well as hue (blue for met, vermillion for unmet: Okabe and Ito's
// colour-blind-safe pair), a hatch for the two states that need a second
// look, and the word that says it without colour.
var stateStyle = map[State]struct{ fill, ink, word string }{
	Met:          {"#cfe3f3", "black", "met"},
	NotSupported: {"#b8b8b8", "black", "not supported"},
	ExpectedFail: {"url(#hatch-xfail)", "black", "expected-fail"},
	NotRun:       {"#ffffff", "black", "not run"},
	Unmet:        {"url(#hatch-unmet)", "black", "UNMET"},
}

// Tally counts one group of cases by state and keeps the worst.
type Tally struct {
	Counts map[State]int
	Worst  State
	// WorstOutcome is the most severe outcome among the cases in the
	// worst state (what a reader needs to know: fail, crash, timeout…).
	WorstOutcome report.Outcome
	Cases        []string
}

func (t *Tally) add(r report.Result) {
	st := Classify(r)
	if t.Counts == nil {
		t.Counts = map[State]int{}
		t.Worst, t.WorstOutcome = st, r.Outcome
	}
	t.Counts[st]++
	t.Cases = append(t.Cases, r.ID())
	switch {
	case st.rank() > t.Worst.rank():
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
	for i := len(States) - 1; i >= 0; i-- {
		if c := t.Counts[States[i]]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, strings.ToLower(stateStyle[States[i]].word)))
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
			if t := g.Cells[[2]string{r, c}]; t != nil && t.Worst == Unmet {
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

var rankSuffixRe = regexp.MustCompile(`\.r\d+$`)

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
		be, k, s, d, ok := pairPath(r)
		if !ok {
			continue
		}
		kind := be + "." + k
		g := byKind[kind]
		if g == nil {
			g = &Grid{Title: "verdict per GPU pair: " + kind, Kind: kind, File: "verdict." + safe(kind) + ".pairs.svg", Cells: map[[2]string]*Tally{}, Pairs: true,
				Caption: "row: the case's pair (first GPU → second), column: the spec"}
			byKind[kind] = g
			kinds = append(kinds, kind)
		}
		spec := rankSuffixRe.ReplaceAllString(strings.TrimPrefix(Family(r), kind+"."), "")
		if slices.Contains(r.Labels, "atomics") {
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

// SVG renders the grid. Column headers are slanted so that long spec
// names keep columns narrow; every size comes from the text it holds.
func (g *Grid) SVG(subtitle string) string {
	type ct struct {
		lines []string
		st    State
		tip   string
	}
	texts := map[[2]string]ct{}
	cw := 64
	for _, r := range g.Rows {
		for _, c := range g.Cols {
			t := g.Cells[[2]string{r, c}]
			if t == nil {
				continue
			}
			var x ct
			x.st = t.Worst
			word := stateStyle[t.Worst].word
			if g.Pairs && t.total() == 1 {
				x.lines = []string{string(t.WorstOutcome)}
				if t.Worst != Met {
					x.lines = append(x.lines, word)
				}
			} else {
				first := "all met"
				if t.Worst != Met {
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
				cw = max(cw, textW(l, 12, true)+14)
			}
			texts[[2]string{r, c}] = x
		}
	}
	const ch = 44
	left := 20
	for _, r := range g.Rows {
		left = max(left, textW(r, 13, false)+24)
	}
	// Slanted headers (-40°): their height is the longest name's width × sin.
	hw := 0
	for _, c := range g.Cols {
		hw = max(hw, textW(c, 12, false))
	}
	headH := int(float64(hw)*0.65) + 20
	top := 74 + headH
	gridW, gridH := len(g.Cols)*cw, len(g.Rows)*ch
	// The last header leans right past the grid by its width × cos.
	width := left + gridW + int(float64(hw)*0.77) + 20
	width = max(width, 20+textW(g.Title, 17, true), 20+textW(subtitle, 13, false), 20+textW(g.Caption, 12, false))
	keyW := 10
	for _, st := range States {
		keyW += 30 + textW(stateStyle[st].word, 12, false) + 16
	}
	width = max(width, keyW)
	height := top + gridH + 50
	var b strings.Builder
	svgOpen(&b, width, height, g.Title)
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", esc(g.Title))
	fmt.Fprintf(&b, `<text x="10" y="44" fill="#333">%s</text>`+"\n", esc(subtitle))
	fmt.Fprintf(&b, `<text x="10" y="62" font-size="12" fill="#333">%s</text>`+"\n", esc(g.Caption))
	for j, c := range g.Cols {
		x, y := left+j*cw+cw/2, top-6
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" transform="rotate(-40 %d %d)">%s</text>`+"\n", x, y, x, y, esc(c))
	}
	for i, r := range g.Rows {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, top+i*ch+ch/2+5, esc(r))
		for j, c := range g.Cols {
			x, y := left+j*cw, top+i*ch
			t, ok := texts[[2]string{r, c}]
			if !ok {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f7f7f7" stroke="white"/><text x="%d" y="%d" text-anchor="middle" fill="#999" font-size="11">none</text>`+"\n", x, y, cw, ch, x+cw/2, y+ch/2+4)
				continue
			}
			sty := stateStyle[t.st]
			stroke, sw := "white", 1
			if t.st == Unmet {
				stroke, sw = "black", 3
			}
			fmt.Fprintf(&b, `<g class="cell %s"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s" stroke-width="%d"/>`, t.st, esc(t.tip), x, y, cw, ch, sty.fill, stroke, sw)
			y0 := y + ch/2 - (len(t.lines)-1)*8 + 4
			for k, l := range t.lines {
				attr := `font-size="11"`
				if k == 0 {
					attr = `font-size="12" font-weight="bold"`
				}
				if t.st == Unmet || t.st == ExpectedFail {
					fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="14" fill="white" opacity="0.85"/>`, x+cw/2-textW(l, 12, true)/2-3, y0+k*16-11, textW(l, 12, true)+6)
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s" %s>%s</text>`, x+cw/2, y0+k*16, sty.ink, attr, esc(l))
			}
			b.WriteString("</g>\n")
		}
	}
	// Key: each state's swatch and word.
	kx, ky := 10, top+gridH+30
	for _, st := range States {
		sty := stateStyle[st]
		stroke, sw := "#666", 1
		if st == Unmet {
			stroke, sw = "black", 2
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="22" height="14" fill="%s" stroke="%s" stroke-width="%d"/>`, kx, ky-11, sty.fill, stroke, sw)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", kx+28, ky, esc(sty.word))
		kx += 30 + textW(sty.word, 12, false) + 16
	}
	return b.String() + "</svg>\n"
}
