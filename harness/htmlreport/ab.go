package htmlreport

import (
	"fmt"
	"html"
	"strings"

	"p2patomics/harness/report"
)

// writeAB: an A/B run's side-by-side table (--ab; report.AB): the two
// stacks, then one row per case that differs or has paired metrics — A's
// outcome, B's, the change, each paired metric with its change and
// interval against its minimum effect — and the repro that runs the case
// on both stacks. Cases the same on both sides without metrics are
// counted, not listed. Nothing without --ab.
func writeAB(b *strings.Builder, a *report.AB) {
	if a == nil {
		return
	}
	e := html.EscapeString
	b.WriteString("<h2 id=\"ab\">A/B: stack B against stack A</h2>\n")
	fmt.Fprintf(b, "<p><code>--ab=%s</code>, %d blocks per case, each block's order drawn from the seed. %s.</p>\n",
		e(a.Spec), a.Blocks, e(a.Words()))
	fmt.Fprintf(b, "<table><tr><th>side</th><th>stack</th></tr>\n<tr><td>A</td><td>%s</td></tr>\n<tr><td>B</td><td>%s</td></tr>\n</table>\n",
		e(strings.TrimPrefix(a.A.Line(), "A: ")), e(strings.TrimPrefix(a.B.Line(), "B: ")))
	b.WriteString("<table><tr><th>case</th><th>A</th><th>B</th><th>change</th><th>paired metrics (B/A, " +
		"95% interval; minimum effect)</th><th>repro (both stacks)</th></tr>\n")
	same := 0
	for _, p := range a.Pairs {
		if p.Change == report.ABSame && len(p.Metrics) == 0 {
			same++
			continue
		}
		var ms []string
		class := "same"
		if p.Change != report.ABSame {
			class = p.Change
		}
		for _, m := range p.Metrics {
			w := e(m.Name) + ": " + e(m.Verdict)
			if m.Verdict != report.ABUnjudged {
				w = fmt.Sprintf("%s %+.1f%% [%+.1f%%, %+.1f%%] (±%.0f%%): %s", e(m.Name), m.Change*100, m.Low*100, m.High*100, m.Tolerance*100, e(m.Verdict))
			}
			if m.Verdict == report.ABPerfRegression && class == "same" {
				class = "perf-regression"
			}
			ms = append(ms, w)
		}
		fmt.Fprintf(b, "<tr class=\"ab %s\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td></tr>\n",
			e(class), e(p.ID), side(p.A), side(p.B), e(p.Change), strings.Join(ms, "<br>"), e(p.Repro))
	}
	b.WriteString("</table>\n")
	if same > 0 {
		fmt.Fprintf(b, "<p>%d more case(s) had the same outcome on both stacks and no paired metric.</p>\n", same)
	}
}

// side is one side's cell: its outcome, each block's when they differ,
// and the detail of one that missed.
func side(s report.ABSide) string {
	e := html.EscapeString
	c := e(string(s.Outcome))
	var os []string
	mixed := false
	for _, o := range s.Outcomes {
		os = append(os, string(o))
		mixed = mixed || o != s.Outcome
	}
	if mixed {
		c += " <small>(" + e(strings.Join(os, ", ")) + ")</small>"
	}
	if s.Detail != "" {
		c += "<br><small>" + e(firstLine(s.Detail)) + "</small>"
	}
	return c
}
