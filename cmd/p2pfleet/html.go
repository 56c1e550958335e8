package main

import (
	"fmt"
	"html/template"
	"io"
	"math"
)

// WriteHTML writes the report as one self-contained page: inline style, no
// script, every metric's nodes drawn as dots on a strip (outliers red).
func (f *Fleet) WriteHTML(w io.Writer) error {
	return page.Execute(w, f)
}

var page = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"num": func(v float64) string { return fmt.Sprintf("%.4g", v) },
	// pos places a value on a 0–100% strip spanning the metric's node
	// medians and sample ranges.
	"pos": func(m MetricDist, v float64) string {
		lo, hi := m.Min, m.Max
		for _, n := range m.Nodes {
			lo, hi = math.Min(lo, n.Min), math.Max(hi, n.Max)
		}
		if hi <= lo {
			return "50"
		}
		return fmt.Sprintf("%.1f", 2+96*(v-lo)/(hi-lo))
	},
	"verdict": func(p bool) string { return map[bool]string{true: "PASS", false: "FAIL"}[p] },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>p2patomics fleet report</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;font-size:90%}
th{background:#f3f3f3}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}
.strip{position:relative;width:320px;height:14px;background:#f4f4f4}
.dot{position:absolute;top:3px;width:8px;height:8px;margin-left:-4px;border-radius:4px;background:#3465a4}
.dot.out{background:#b00020}.range{position:absolute;top:6px;height:2px;background:#9bb3d4}
.med{position:absolute;top:0;width:1px;height:14px;background:#000}
</style></head><body>
<h1>p2patomics fleet report: <span class="{{if .Pass}}pass{{else}}fail{{end}}">{{verdict .Pass}}</span></h1>
{{if .Reasons}}<ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Nodes</h2>
<table><tr><th>node</th><th>verdict</th><th>cases</th><th>unmet</th><th>driver</th><th>GPU</th><th>kernel</th><th>suite wall s</th><th>why it fails</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td class="{{if eq .Verdict "pass"}}pass{{else}}fail{{end}}">{{.Verdict}}</td><td>{{.Cases}}</td><td>{{.Unmet}}</td><td>{{.Stack.Driver}}</td><td>{{.Stack.GPU}}</td><td>{{.Stack.Kernel}}</td><td>{{.WallS}}</td><td>{{range $i, $w := .Failures}}{{if $i}}; {{end}}{{$w}}{{end}}</td></tr>
{{end}}</table>
<h2>Stacks</h2>
<table><tr><th>driver</th><th>GPU</th><th>nodes</th><th>failing nodes</th></tr>
{{range .Stacks}}<tr><td>{{.Stack.Driver}}</td><td>{{.Stack.GPU}}</td><td>{{range $i, $n := .Nodes}}{{if $i}}, {{end}}{{$n}}{{end}}</td><td>{{.Unmet}}</td></tr>
{{end}}</table>
<h2>Cases that differ across nodes ({{len .Inconsistent}})</h2>
{{if .Inconsistent}}<table><tr><th>case</th><th>expected</th><th>met on</th><th>not met on</th><th>outcome by stack</th></tr>
{{range .Inconsistent}}<tr><td>{{.ID}}</td><td>{{.Expected}}</td><td>{{range .Passing}}{{.}} {{end}}</td><td>{{range .Failing}}{{.}} {{end}}</td><td>{{range $s, $o := .Stacks}}{{$s}}: {{range $o}}{{.}} {{end}}<br>{{end}}</td></tr>
{{end}}</table>{{else}}<p>none</p>{{end}}
<h2>Metrics across nodes ({{len .Metrics}})</h2>
<p>Dots are node medians, bars their sample ranges, the black line the fleet median; red dots are outliers (more than 3 scales from the fleet median, their own samples not reaching it; the scale is the larger of the spread across nodes and the typical spread within one).</p>
<table><tr><th>case</th><th>metric</th><th>unit</th><th>fleet median</th><th>nodes</th><th>outliers</th></tr>
{{range $m := .Metrics}}<tr><td>{{$m.Case}}</td><td>{{$m.Metric}}</td><td>{{$m.Unit}}</td><td>{{num $m.Median}}</td>
<td><div class="strip"><div class="med" style="left:{{pos $m $m.Median}}%"></div>{{range $m.Nodes}}<div class="range" style="left:{{pos $m .Min}}%;width:calc({{pos $m .Max}}% - {{pos $m .Min}}%)"></div><div class="dot{{if .Outlier}} out{{end}}" style="left:{{pos $m .Median}}%" title="{{.Node}}: {{num .Median}} ({{num .Min}}–{{num .Max}}, n {{.N}})"></div>{{end}}</div></td>
<td>{{range $m.Nodes}}{{if .Outlier}}{{.Node}} {{.Outlier}} {{num .Median}}; {{end}}{{end}}</td></tr>
{{end}}</table>
</body></html>
`))
