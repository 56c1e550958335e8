// Package heatmap draws a run's pictures as SVG, in pure Go: the verdict
// matrices (which kinds, spec families and GPU pairs met their expected
// outcome) and one heatmap per per-pair metric of package pairs' model
// (pairs.Matrix: row = the case's first GPU, column = its second; which
// way the data moved is in each caption). Files are named
// <family>.<metric>.svg, always; the verdict matrices are verdict.svg and
// verdict.<backend>.<kind>.pairs.svg.
package heatmap

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"p2patomics/harness/backends"
	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

// Title is the run's machine in a few words (vendor, GPUs, driver). The
// driver is report.Environment.Driver, so no vendor's section is named
// here.
func Title(env report.Environment) string {
	if IsHost(env) {
		// The host backend has no GPU: "host, 1× cpu" read as one GPU
		// named cpu (issue 49 U15).
		t := "host backend (CPU only): the ranks are processes on this machine's CPU"
		if gs := env.GPUs; len(gs) > 0 && gs[0].Units > 0 {
			t += fmt.Sprintf(" (%d cores)", gs[0].Units)
		}
		return t
	}
	var parts []string
	if env.Vendor != "" {
		parts = append(parts, env.Vendor)
	}
	if gs := env.GPUs; len(gs) > 0 && gs[0].Name != "" {
		parts = append(parts, fmt.Sprintf("%d× %s", len(gs), gs[0].Name))
	}
	if d := env.Driver(); d != "" {
		parts = append(parts, "driver "+d)
	}
	return strings.Join(parts, ", ")
}

// IsHost reports whether env is a host-backend run (no GPU: its "devices"
// are the CPU, and its pictures' rows and columns are ranks).
func IsHost(env report.Environment) bool { return backends.CPUVendor(env.Vendor) }

// HostWords says "rank" where a picture's or page's fixed text says "GPU",
// for a host run (IsHost); other runs' text is returned as it is.
func HostWords(env report.Environment, s string) string {
	if !IsHost(env) {
		return s
	}
	return strings.ReplaceAll(s, "GPU", "rank")
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
	for _, m := range pairs.Matrices(rep.Results) {
		ps = append(ps, Picture{File: m.File, Caption: m.Family + ": " + m.Metric, SVG: MatrixSVG(m, title)})
	}
	for i := range ps {
		// A host run's rows and columns are ranks on one CPU ("GPU 0",
		// "GPU(row)" named devices it does not have).
		ps[i].Caption = HostWords(rep.Environment, ps[i].Caption)
		ps[i].SVG = HostWords(rep.Environment, ps[i].SVG)
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

// arrows renders a Flow direction with the arrows people read.
func arrows(dir string) string {
	return strings.NewReplacer("<->", "↔", "<-", "←", "->", "→").Replace(dir)
}

func safeDiv(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
