package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
)

// Node is one node's run.
type Node struct {
	Name   string
	File   string
	Report *report.Report
}

// Fleet is the merged report.
type Fleet struct {
	Nodes        []NodeSummary  `json:"nodes"`
	Stacks       []StackGroup   `json:"stacks"`
	Inconsistent []Inconsistent `json:"inconsistent"`
	Metrics      []MetricDist   `json:"metrics"`
	// Pass: every node met every expected outcome, no case differs across
	// nodes, and no metric has an outlier on its bad side.
	Pass    bool     `json:"pass"`
	Reasons []string `json:"reasons"`
}

// NodeSummary is one node's verdict and stack.
type NodeSummary struct {
	Name    string         `json:"name"`
	File    string         `json:"file"`
	Stack   Stack          `json:"stack"`
	Cases   int            `json:"cases"`
	Unmet   int            `json:"unmet"`
	Counts  map[string]int `json:"outcomes"`
	Verdict string         `json:"verdict"` // the run's one verdict, pass or fail (its summary's; see Merge)
	Gate    *bool          `json:"gate,omitempty"`
	WallS   float64        `json:"suite_wall_s,omitempty"`
}

// Stack is what a node's results are grouped by.
type Stack struct {
	Vendor string `json:"vendor"`
	Driver string `json:"driver"`
	GPU    string `json:"gpu"` // model × count (arch)
	Kernel string `json:"kernel,omitempty"`
}

func (s Stack) String() string {
	return fmt.Sprintf("driver %s, %s", s.Driver, s.GPU)
}

// StackGroup is the nodes sharing one stack (driver and GPU model).
type StackGroup struct {
	Stack Stack    `json:"stack"`
	Nodes []string `json:"nodes"`
	Unmet int      `json:"unmet"` // nodes of the group with any unmet case
}

// Inconsistent is a case whose outcome differs across the nodes that ran it.
type Inconsistent struct {
	ID       string              `json:"id"`
	Expected report.Outcome      `json:"expected"`
	ByNode   map[string]string   `json:"by_node"`  // node → outcome
	Outcomes map[string][]string `json:"outcomes"` // outcome → nodes
	Detail   map[string]string   `json:"detail"`   // node → detail, for nodes that missed the expected outcome
	Stacks   map[string][]string `json:"by_stack"` // stack → outcomes seen on it
	Missing  []string            `json:"not_run"`  // nodes that did not run it
	Failing  []string            `json:"unmet_on"` // nodes where it missed its expected outcome
	Passing  []string            `json:"met_on"`   // nodes where it met it
}

// MetricDist is one metric of one case across nodes.
type MetricDist struct {
	Case   string      `json:"case"`
	Metric string      `json:"metric"`
	Unit   string      `json:"unit"`
	Better string      `json:"better"` // higher, lower or unknown
	Nodes  []NodeValue `json:"nodes"`
	Median float64     `json:"fleet_median"`
	// Scale is the larger of the robust spread across node medians
	// (1.4826 × MAD) and the median within-node half range.
	Scale    float64 `json:"scale"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Outliers int     `json:"outliers"`
}

// NodeValue is one node's value of a metric.
type NodeValue struct {
	Node    string  `json:"node"`
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	N       int     `json:"n"`
	Z       float64 `json:"z"`                 // (median − fleet median) / scale
	Outlier string  `json:"outlier,omitempty"` // "low" or "high"
	Bad     bool    `json:"bad,omitempty"`     // the outlier is on the metric's bad side
}

// outlierZ is how many scales from the fleet median a node must sit.
const outlierZ = 3

// Merge builds the fleet report.
func Merge(nodes []Node) *Fleet {
	f := &Fleet{Nodes: []NodeSummary{}, Stacks: []StackGroup{}, Inconsistent: []Inconsistent{}, Metrics: []MetricDist{}, Reasons: []string{}}
	stacks := map[Stack]*StackGroup{}
	var order []Stack
	for _, n := range nodes {
		ns := NodeSummary{Name: n.Name, File: n.File, Stack: stackOf(n.Report.Environment), Cases: len(n.Report.Results), Counts: map[string]int{}}
		for _, r := range n.Report.Results {
			ns.Counts[string(r.Outcome)]++
			if !r.Met() {
				ns.Unmet++
			}
		}
		// The node's verdict is its run's one verdict (not-supported
		// results and the gate included): the summary it told, or, for a
		// results.json from before the suite told one, the same verdict
		// function run on its recorded results, as p2preport does.
		sum := n.Report.Summary
		if sum == nil {
			_, _, s := expect.JudgeRun(n.Report.Results, nil, n.Report.Environment, nil, "", "")
			sum = &s
		}
		ns.Verdict = strings.ToLower(sum.Verdict)
		if g := n.Report.Gate; g != nil {
			pass := g.Pass
			ns.Gate = &pass
		}
		if n.Report.Timing != nil {
			ns.WallS = n.Report.Timing.SuiteWallS
		}
		f.Nodes = append(f.Nodes, ns)
		g, ok := stacks[ns.Stack]
		if !ok {
			g = &StackGroup{Stack: ns.Stack, Nodes: []string{}}
			stacks[ns.Stack] = g
			order = append(order, ns.Stack)
		}
		g.Nodes = append(g.Nodes, n.Name)
		if ns.Verdict != "pass" {
			g.Unmet++
			f.Reasons = append(f.Reasons, fmt.Sprintf("node %s: %s", n.Name, nodeWhy(ns)))
		}
	}
	for _, s := range order {
		f.Stacks = append(f.Stacks, *stacks[s])
	}
	f.Inconsistent = inconsistent(nodes, f.Nodes)
	for _, ic := range f.Inconsistent {
		f.Reasons = append(f.Reasons, fmt.Sprintf("case %s: met on %s, not on %s", ic.ID, strings.Join(ic.Passing, ","), strings.Join(ic.Failing, ",")))
	}
	f.Metrics = distributions(nodes)
	for _, m := range f.Metrics {
		for _, v := range m.Nodes {
			if v.Bad {
				f.Reasons = append(f.Reasons, fmt.Sprintf("metric %s %s: node %s %s %.4g %s (fleet median %.4g, z %.1f)",
					m.Case, m.Metric, v.Node, v.Outlier, v.Median, m.Unit, m.Median, v.Z))
			}
		}
	}
	f.Pass = len(f.Reasons) == 0
	return f
}

func nodeWhy(ns NodeSummary) string {
	if ns.Gate != nil {
		return "its gate failed"
	}
	return fmt.Sprintf("%s of %d did not meet their expected outcome", plural(ns.Unmet, "case", "cases"), ns.Cases)
}

// stackOf reads the stack from a run's environment: the driver as the
// gate's fingerprint reads it (the host backend has none: its kernel
// stands in), the first GPU's model, count and architecture.
func stackOf(env map[string]any) Stack {
	fp := fingerprint.Stack(env)
	s := Stack{Vendor: fp["vendor"], Driver: fp["driver"]}
	if os, ok := env["os"].(map[string]any); ok {
		s.Kernel, _ = os["kernel"].(string)
	}
	if s.Driver == "" {
		s.Driver = "kernel " + s.Kernel
	}
	if gs, ok := env["gpus"].([]any); ok && len(gs) > 0 {
		if g, ok := gs[0].(map[string]any); ok {
			name, _ := g["name"].(string)
			arch, _ := g["arch"].(string)
			count := len(gs)
			if c, ok := g["count"].(float64); ok && int(c) > count {
				count = int(c)
			}
			s.GPU = fmt.Sprintf("%s ×%d (%s)", name, count, arch)
		}
	}
	if s.GPU == "" {
		s.GPU = "unknown GPU"
	}
	return s
}

func inconsistent(nodes []Node, sums []NodeSummary) []Inconsistent {
	type seen struct {
		res   report.Result
		stack Stack
	}
	by := map[string]map[string]seen{}
	var ids []string
	for i, n := range nodes {
		for _, r := range n.Report.Results {
			if by[r.ID] == nil {
				by[r.ID] = map[string]seen{}
				ids = append(ids, r.ID)
			}
			by[r.ID][n.Name] = seen{r, sums[i].Stack}
		}
	}
	sort.Strings(ids)
	out := []Inconsistent{}
	for _, id := range ids {
		m := by[id]
		outcomes := map[report.Outcome]bool{}
		for _, s := range m {
			outcomes[s.res.Outcome] = true
		}
		if len(outcomes) < 2 {
			continue
		}
		ic := Inconsistent{ID: id, ByNode: map[string]string{}, Outcomes: map[string][]string{}, Detail: map[string]string{},
			Stacks: map[string][]string{}, Missing: []string{}, Failing: []string{}, Passing: []string{}}
		for _, n := range nodes {
			s, ok := m[n.Name]
			if !ok {
				ic.Missing = append(ic.Missing, n.Name)
				continue
			}
			ic.Expected = s.res.Expected
			o := string(s.res.Outcome)
			ic.ByNode[n.Name] = o
			ic.Outcomes[o] = append(ic.Outcomes[o], n.Name)
			st := s.stack.String()
			if !slices.Contains(ic.Stacks[st], o) {
				ic.Stacks[st] = append(ic.Stacks[st], o)
			}
			if s.res.Met() {
				ic.Passing = append(ic.Passing, n.Name)
			} else {
				ic.Failing = append(ic.Failing, n.Name)
				ic.Detail[n.Name] = trunc(s.res.Detail, 200)
			}
		}
		// Two outcomes that both miss the expected one are still listed:
		// a crash on one node and a fail on another is news.
		out = append(out, ic)
	}
	return out
}

// better says which way a metric should go, from its unit: rates up,
// times down, anything else unknown (never a bad outlier).
func better(unit string) string {
	switch {
	case strings.Contains(unit, "/s"):
		return "higher"
	case unit == "us" || unit == "ns" || unit == "ms" || unit == "s" || unit == "µs":
		return "lower"
	}
	return "unknown"
}

func distributions(nodes []Node) []MetricDist {
	type key struct{ c, m string }
	vals := map[key][]NodeValue{}
	units := map[key]string{}
	var keys []key
	for _, n := range nodes {
		for _, r := range n.Report.Results {
			for name, m := range r.Metrics {
				k := key{r.ID, name}
				if _, ok := vals[k]; !ok {
					keys = append(keys, k)
					units[k] = m.Unit
				}
				vals[k] = append(vals[k], NodeValue{Node: n.Name, Median: m.Median, Min: m.Min, Max: m.Max, N: m.N})
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].c != keys[j].c {
			return keys[i].c < keys[j].c
		}
		return keys[i].m < keys[j].m
	})
	out := []MetricDist{}
	for _, k := range keys {
		d := MetricDist{Case: k.c, Metric: k.m, Unit: units[k], Better: better(units[k]), Nodes: vals[k]}
		judge(&d)
		out = append(out, d)
	}
	return out
}

// judge sets the fleet median, the scale and each node's z and outlier
// flag (see the package comment).
func judge(d *MetricDist) {
	meds := make([]float64, len(d.Nodes))
	halves := make([]float64, len(d.Nodes))
	for i, v := range d.Nodes {
		meds[i] = v.Median
		halves[i] = (v.Max - v.Min) / 2
	}
	d.Median = median(meds)
	dev := make([]float64, len(meds))
	for i, m := range meds {
		dev[i] = math.Abs(m - d.Median)
	}
	d.Scale = math.Max(1.4826*median(dev), median(halves))
	d.Min, d.Max = slicesMin(meds), slicesMax(meds)
	if len(d.Nodes) < 3 {
		// Two nodes have no majority to stand out from.
		return
	}
	for i := range d.Nodes {
		v := &d.Nodes[i]
		if d.Scale > 0 {
			v.Z = round3((v.Median - d.Median) / d.Scale)
		}
		reaches := v.Min <= d.Median && d.Median <= v.Max
		if reaches || d.Scale == 0 && v.Median == d.Median {
			continue
		}
		if d.Scale == 0 || math.Abs(v.Median-d.Median) > outlierZ*d.Scale {
			v.Outlier = "high"
			if v.Median < d.Median {
				v.Outlier = "low"
			}
			v.Bad = (d.Better == "higher" && v.Outlier == "low") || (d.Better == "lower" && v.Outlier == "high")
			d.Outliers++
		}
	}
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func slicesMin(s []float64) float64 {
	m := math.Inf(1)
	for _, v := range s {
		m = math.Min(m, v)
	}
	return m
}

func slicesMax(s []float64) float64 {
	m := math.Inf(-1)
	for _, v := range s {
		m = math.Max(m, v)
	}
	return m
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// WriteJSON writes the report as one JSON document.
func (f *Fleet) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteText writes the report for a terminal.
func (f *Fleet) WriteText(w io.Writer) {
	fmt.Fprintf(w, "fleet: %s\n", plural(len(f.Nodes), "node", "nodes"))
	fmt.Fprintf(w, "%-20s %-7s %6s %6s  %s\n", "NODE", "VERDICT", "CASES", "UNMET", "STACK")
	for _, n := range f.Nodes {
		fmt.Fprintf(w, "%-20s %-7s %6d %6d  %s\n", n.Name, n.Verdict, n.Cases, n.Unmet, n.Stack)
	}
	fmt.Fprintf(w, "\nstacks: %d\n", len(f.Stacks))
	for _, g := range f.Stacks {
		fmt.Fprintf(w, "  %s: %s (%d failing)\n", g.Stack, strings.Join(g.Nodes, ", "), g.Unmet)
	}
	fmt.Fprintf(w, "\ncases that differ across nodes: %d\n", len(f.Inconsistent))
	for _, ic := range f.Inconsistent {
		var parts []string
		for _, o := range sortedKeys(ic.Outcomes) {
			parts = append(parts, fmt.Sprintf("%s on %s", o, strings.Join(ic.Outcomes[o], ",")))
		}
		fmt.Fprintf(w, "  %s (expected %s): %s\n", ic.ID, ic.Expected, strings.Join(parts, "; "))
		for _, n := range ic.Failing {
			if d := ic.Detail[n]; d != "" {
				fmt.Fprintf(w, "    %s: %s\n", n, d)
			}
		}
	}
	outl := 0
	for _, m := range f.Metrics {
		outl += m.Outliers
	}
	fmt.Fprintf(w, "\nmetrics: %d (case × metric), %s flagged\n", len(f.Metrics), plural(outl, "outlier", "outliers"))
	for _, m := range f.Metrics {
		if m.Outliers == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s %s [%s, %s is better]: fleet median %.4g, scale %.3g, range %.4g–%.4g\n",
			m.Case, m.Metric, m.Unit, m.Better, m.Median, m.Scale, m.Min, m.Max)
		for _, v := range m.Nodes {
			if v.Outlier != "" {
				bad := ""
				if v.Bad {
					bad = " (bad side)"
				}
				fmt.Fprintf(w, "    %s: %.4g (samples %.4g–%.4g, n %d), z %.1f, %s%s\n", v.Node, v.Median, v.Min, v.Max, v.N, v.Z, v.Outlier, bad)
			}
		}
	}
	fmt.Fprintf(w, "\nfleet: %s\n", map[bool]string{true: "PASS", false: "FAIL"}[f.Pass])
	for _, r := range f.Reasons {
		fmt.Fprintf(w, "  %s\n", r)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
