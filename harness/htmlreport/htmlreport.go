// Package htmlreport writes a run's report.html: one self-contained page
// (inline SVG and CSS, no script, nothing fetched from the network) that
// opens with the run's verdict line, the machine and its stack, then the
// verdict matrix, the unexpected cases with links to their evidence
// folders (cases/<id>/) and repro lines, each allocation path's pair
// verdicts, the heatmaps, and the pair table.
//
// The page sits beside results.json in the run's folder, so the links
// cases/<id>/ resolve there; a case without a folder says so instead of
// linking nowhere.
package htmlreport

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/heatmap"
	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

// File is the report's name inside the run's folder.
const File = "report.html"

// WriteHTML writes outDir/report.html for rep through report.WriteAtomic,
// as the other reports: a reader never sees half a page, and a failed
// write leaves no temporary file in --out.
func WriteHTML(outDir string, rep *report.Report) error {
	var b bytes.Buffer
	if err := Render(&b, rep, outDir); err != nil {
		return err
	}
	if err := report.WriteAtomic(filepath.Join(outDir, File), b.Bytes()); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	return nil
}

// Verdict is the run's verdict line: results.json's summary when it has
// one, else, for older files, the run judged as every tool judges it
// (expect.JudgeReport: the recorded verdicts, the rest by the suite's
// rule).
func Verdict(rep *report.Report) (pass bool, line string) {
	if s := rep.Summary; s != nil {
		// The run's one verdict (expect.JudgeRun), told as the suite told it.
		return s.ExitStatus == 0, s.Line
	}
	cp := *rep
	cp.Results = append([]report.Result(nil), rep.Results...)
	rj := expect.Rejudge{}
	if rep.Gate != nil {
		rj.Gate = "gated"
	}
	if err := expect.JudgeReport(&cp, rj); err != nil {
		return false, "p2patomics: FAIL — " + err.Error() // no baseline is given: cannot happen
	}
	return cp.Summary.ExitStatus == 0, cp.Summary.Line
}

// Machine describes the run's machine and stack in one line each.
func Machine(env report.Environment) (machine, stack string) {
	machine = heatmap.Title(env)
	osi := env.OSFacts()
	for _, v := range []string{osi.Release, osi.Kernel} {
		if v != "" {
			machine += ", " + v
		}
	}
	st := env.Stack()
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+st[k])
	}
	stack = strings.Join(parts, " ")
	if c := env.HarnessFacts().Commit; c != "" {
		stack += ", harness " + c
	}
	return machine, stack
}

const style = `body{font-family:DejaVu Sans,Verdana,sans-serif;margin:1.5em;color:#111;max-width:1600px}
h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ccc}
.verdict{font-size:1.2em;font-weight:bold;padding:.5em .8em;border:3px solid;display:inline-block}
.pass{border-color:#0072b2;background:#e3eef8}.fail{border-color:#000;background:repeating-linear-gradient(45deg,#f7d3bd,#f7d3bd 8px,#fff 8px,#fff 16px)}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eee}td.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.9em}
figure{margin:1em 0}figcaption{font-size:.85em;color:#444}.unmet{font-weight:bold}`

// Render writes the page. outDir is the run's folder (where cases/<id>/
// lives); "" skips the check for evidence folders and links every case.
// The sections in order: the verdict and machine, the verdict matrix,
// the unexpected and not-supported cases, the world events (when there
// are any), the pair verdicts, the heatmaps, the pair table.
func Render(w io.Writer, rep *report.Report, outDir string) error {
	var b strings.Builder
	writeHead(&b, rep)
	pics := heatmap.Pictures(rep)
	b.WriteString("<h2 id=\"matrix\">Verdict matrix</h2>\n")
	if n := figures(&b, pics, func(f string) bool { return f == "verdict.svg" }); n == 0 {
		b.WriteString("<p>No results.</p>\n")
	}
	writeUnexpected(&b, rep, outDir)
	writePerf(&b, rep)
	writeAB(&b, rep.AB) // an A/B run's side-by-side table (ab.go)
	writeWorldEvents(&b, rep.WorldEvents)
	b.WriteString(heatmap.HostWords(rep.Environment, "<h2 id=\"pairs-verdict\">Verdicts per GPU pair</h2>\n"))
	if n := figures(&b, pics, func(f string) bool { return strings.HasPrefix(f, "verdict.") && f != "verdict.svg" }); n == 0 {
		b.WriteString(heatmap.HostWords(rep.Environment, "<p>No case names a pair of GPUs.</p>\n"))
	}
	b.WriteString("<h2 id=\"heatmaps\">Heatmaps</h2>\n")
	if n := figures(&b, pics, func(f string) bool { return !strings.HasPrefix(f, "verdict.") }); n == 0 {
		b.WriteString("<p>No per-pair metrics.</p>\n")
	}
	b.WriteString("<h2 id=\"pair-table\">Pair table</h2>\n")
	rows := rep.Pairs
	if rows == nil {
		rows = pairs.PairRows(rep.Results)
	}
	writePairTable(&b, rows)
	b.WriteString("</body></html>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	return nil
}

// writeHead: the document head, the verdict line, the machine and the
// gate's reasons.
func writeHead(b *strings.Builder, rep *report.Report) {
	e := html.EscapeString
	pass, line := Verdict(rep)
	machine, stack := Machine(rep.Environment)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	fmt.Fprintf(b, "<title>%s</title>\n<style>%s</style></head><body>\n", e(line), style)
	fmt.Fprintf(b, "<h1>p2patomics report</h1>\n<p id=\"verdict\" class=\"verdict %s\">%s</p>\n", map[bool]string{true: "pass", false: "fail"}[pass], e(line))
	fmt.Fprintf(b, "<p id=\"machine\">Machine: %s<br>Stack: %s</p>\n", e(machine), e(stack))
	if rep.Gate != nil {
		b.WriteString("<p>Gate: " + map[bool]string{true: "PASS", false: "FAIL"}[rep.Gate.Pass])
		for _, r := range rep.Gate.Reasons {
			b.WriteString("<br>" + e(r))
		}
		b.WriteString("</p>\n")
	}
}

// figures inlines every picture whose file name pick accepts, in order,
// and says how many.
func figures(b *strings.Builder, pics []heatmap.Picture, pick func(file string) bool) int {
	e := html.EscapeString
	n := 0
	for _, p := range pics {
		if pick(p.File) {
			fmt.Fprintf(b, "<figure id=\"pic-%s\" class=\"picture\">\n%s<figcaption>%s (%s)</figcaption></figure>\n", e(p.File), inline(p.SVG), e(p.Caption), e(p.File))
			n++
		}
	}
	return n
}

// writeUnexpected: the unexpected cases as a table (each linked to its
// evidence folder, or saying it has none), then the not-supported ones.
func writeUnexpected(b *strings.Builder, rep *report.Report, outDir string) {
	e := html.EscapeString
	b.WriteString("<h2 id=\"unexpected\">Unexpected cases</h2>\n")
	var unmet, notSup []report.Result
	for _, r := range rep.Results {
		switch pairs.Classify(r) {
		case pairs.Unmet:
			unmet = append(unmet, r)
		case pairs.NotSupported:
			notSup = append(notSup, r)
		}
	}
	if len(unmet) == 0 {
		b.WriteString("<p>None: every case met its expected outcome.</p>\n")
	} else {
		// "expected" is what the verdict was judged against (report.Was:
		// the baseline's outcome when gated), as on stdout's lines.
		b.WriteString("<table><tr><th>case</th><th>outcome</th><th>expected</th><th>detail</th><th>repro</th></tr>\n")
		for _, r := range unmet {
			cell := fmt.Sprintf("<a href=\"%s\">%s</a>", e("cases/"+r.ID()+"/"), e(r.ID()))
			if outDir != "" {
				if _, err := os.Stat(filepath.Join(outDir, "cases", r.ID())); err != nil {
					cell = e(r.ID()) + " <small>(no evidence folder)</small>"
				}
			}
			outcome := report.Shown(r) // "missing", not "skip"
			if r.Verdict != "" && r.Verdict != report.Missing {
				outcome += " (" + string(r.Verdict) + ")"
			}
			fmt.Fprintf(b, "<tr class=\"unmet\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td></tr>\n",
				cell, e(outcome), e(string(report.Was(r))), e(firstLine(r.Detail)), e(r.Repro))
		}
		b.WriteString("</table>\n")
	}
	if len(notSup) > 0 {
		b.WriteString("<p>Not supported on this machine (counted as met):</p><ul>\n")
		for _, r := range notSup {
			fmt.Fprintf(b, "<li><code>%s</code>: %s</li>\n", e(r.ID()), e(firstLine(r.Detail)))
		}
		b.WriteString("</ul>\n")
	}
}

// writeWorldEvents: what happened to the ranks outside the cases' bodies
// (a rank that crashed or hung while its world started, died idle, a world
// retired), one row each with the rank, its pid and signal and the case
// that needed the world; nothing when there were none.
func writeWorldEvents(b *strings.Builder, evs []report.WorldEvent) {
	if len(evs) == 0 {
		return
	}
	e := html.EscapeString
	b.WriteString("<h2 id=\"world-events\">World events</h2>\n")
	b.WriteString("<table><tr><th>time</th><th>kind</th><th>rank</th><th>pid</th><th>signal</th><th>case</th><th>detail</th></tr>\n")
	for _, ev := range evs {
		rank, pid := "", ""
		if ev.Rank != nil {
			rank = fmt.Sprint(*ev.Rank)
		}
		if ev.Pid > 0 {
			pid = fmt.Sprint(ev.Pid)
		}
		fmt.Fprintf(b, "<tr class=\"event %s\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			e(ev.Kind), e(ev.Time), e(ev.Kind), rank, pid, e(ev.Signal), e(ev.Case), e(firstLine(ev.Detail)))
	}
	b.WriteString("</table>\n")
}

// inline drops the XML declaration, which may not appear inside HTML.
func inline(svg string) string {
	if strings.HasPrefix(svg, "<?xml") {
		if i := strings.Index(svg, "?>"); i >= 0 {
			svg = strings.TrimLeft(svg[i+2:], "\n")
		}
	}
	return svg
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// writePairTable is the stdout pair table as HTML: a table per backend and
// kind, a row per ordered pair, the medians of its metrics.
func writePairTable(b *strings.Builder, rows []report.PairRow) {
	e := html.EscapeString
	if len(rows) == 0 {
		b.WriteString("<p>No case names a pair of GPUs.</p>\n")
		return
	}
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Backend == rows[i].Backend && rows[j].Kind == rows[i].Kind {
			j++
		}
		group := rows[i:j]
		units := map[string]string{}
		for _, r := range group {
			for n, m := range r.Metrics {
				units[n] = m.Unit
			}
		}
		names := make([]string, 0, len(units))
		for n := range units {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(b, "<h3>%s.%s</h3>\n<table class=\"pairs\"><tr><th>pair</th><th>cases</th><th>unmet</th><th>worst</th>", e(rows[i].Backend), e(rows[i].Kind))
		for _, n := range names {
			fmt.Fprintf(b, "<th>%s<br><small>%s, median (min–max)</small></th>", e(n), e(units[n]))
		}
		b.WriteString("</tr>\n")
		for _, r := range group {
			cls := ""
			if r.Unmet > 0 {
				cls = " class=\"unmet\""
			}
			fmt.Fprintf(b, "<tr%s><td>%d→%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td>%s</td>", cls, r.Src, r.Dst, r.Cases, r.Unmet, e(string(r.Worst)))
			for _, n := range names {
				if m, ok := r.Metrics[n]; ok {
					fmt.Fprintf(b, "<td class=\"num\">%s <small>(%s)</small></td>", pairs.Format(m.Median), e(pairs.Spread(m)))
				} else {
					b.WriteString("<td>—</td>")
				}
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
		i = j
	}
}

// writePerf is the perf gate's table (summary.perf.bands): every gated
// metric's median against its band, its limit and, for bandwidth, its
// physical ceiling; failing rows first (expect.JudgeMetrics's order is the file's,
// so they are sorted here). Nothing when the run had no perf.txt.
func writePerf(b *strings.Builder, rep *report.Report) {
	if rep.Summary == nil || rep.Summary.Perf == nil || len(rep.Summary.Perf.Bands) == 0 {
		return
	}
	p := rep.Summary.Perf
	fmt.Fprintf(b, "<h2 id=\"perf\">Perf gate</h2>\n<p>%d gated metrics, %d in band, against %s.</p>\n", p.Gated, p.InBand, html.EscapeString(p.Baseline))
	b.WriteString("<table><tr><th>case</th><th>metric</th><th>median</th><th>band</th><th>limit</th><th>ceiling</th><th>verdict</th></tr>\n")
	rows := append([]report.PerfBand(nil), p.Bands...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Verdict != report.InBand && rows[j].Verdict == report.InBand })
	metrics := map[string]report.Metric{}
	for _, r := range rep.Results {
		for name, m := range r.Metrics {
			metrics[r.ID()+" "+name] = m
		}
	}
	for _, r := range rows {
		ceil := "—"
		if c := metrics[r.ID+" "+r.Metric].Ceiling; c != nil && c.Value > 0 {
			ceil = fmt.Sprintf("%.4g %s (%.1f %%)", c.Value, r.Unit, r.Now/c.Value*100)
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%.4g %s</td><td>%.4g–%.4g</td><td>%s %.4g</td><td>%s</td><td>%s</td></tr>\n",
			html.EscapeString(r.ID), html.EscapeString(r.Metric), r.Now, html.EscapeString(r.Unit), r.Lo, r.Hi, html.EscapeString(r.Op), r.Limit, ceil, html.EscapeString(string(r.Verdict)))
	}
	b.WriteString("</table>\n")
}
