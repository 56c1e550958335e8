package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	descriptors "p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/cli"
)

// Node is one node's run.
type Node struct {
	Name   string
	File   string
	Report *report.Report // nil: the node has no result (NoResult says why)
	// NoResult names why the node has no results.json to judge: missing,
	// unreadable, empty. Such a node fails the fleet; it is not an abort
	// of the whole merge, which would hide the other nodes.
	NoResult string
	// ExitStatus is the suite's exit status as the scheduler's wrapper
	// recorded it (an exit_status file beside results.json), nil if none.
	ExitStatus *int
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
	Verdict string         `json:"verdict"` // pass, fail, or "no result" (see Merge)
	Gate    *bool          `json:"gate,omitempty"`
	WallS   float64        `json:"suite_wall_s,omitempty"`
	// Backend is the backends the node's cases ran on (their ids' first
	// segment), GPUs its GPU count, Ranks its world size (--ranks).
	Backend string `json:"backend"`
	GPUs    int    `json:"gpus"`
	Ranks   int    `json:"ranks"`
	// ExitStatus is the suite's exit status from the wrapper's exit_status
	// file, when there is one.
	ExitStatus *int `json:"exit_status,omitempty"`
	// Failures is every reason the node fails the fleet: its own verdict,
	// no result, a short case set, another backend or shape than its pool,
	// a case it alone misses, a bad-side outlier. What --drain prints.
	Failures []string `json:"failures"`
}

// NoResult is the verdict of a node with nothing to judge.
const NoResult = "no result"

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
	Better string      `json:"better"` // the metric's declared direction (report.Metric.Direction): higher, lower or unknown
	Nodes  []NodeValue `json:"nodes"`
	Median float64     `json:"fleet_median"`
	// Scale is the larger of the robust spread across node medians
	// (1.4826 × MAD) and the median within-node half range.
	Scale    float64 `json:"scale"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Outliers int     `json:"outliers"`
	// Gating: a bad-side outlier of this metric fails the fleet. The host
	// backend's metrics are the CPU's noise (a loaded machine moves them by
	// tens of percent between healthy runs): shown, never gating.
	Gating bool `json:"gating"`
}

// NodeValue is one node's value of a metric: the perf judge's fleet mode
// (expect.Outliers) sets its z and outlier flag.
type NodeValue = expect.NodeValue

// Merge builds the fleet report. Every node is judged by the run's one
// verdict function (expect.JudgeRun, as the suite and p2preport do), so a
// not-supported capability is not a failure; a node also fails when it has
// no result (no results.json, or one with no case: a run that tested
// nothing), when its suite exited non-zero, when it ran another backend
// than its pool (a GPU node that fell back to the host backend), fewer
// GPUs or ranks than the majority of its GPU model, or fewer cases than
// the majority of its shape.
func Merge(nodes []Node) *Fleet { return MergeWith(nodes, nil) }

// MergeWith is Merge with a perf baseline (a perf.txt, --expectations):
// every node's run is also judged by expect.JudgeMetrics against its bands, as the
// suite's perf gate judges it, and a node with a perf-regression or
// perf-missing fails (judgeBands). nil: the outlier rule alone.
func MergeWith(nodes []Node, bands *expect.Set) *Fleet {
	f := &Fleet{Nodes: []NodeSummary{}, Stacks: []StackGroup{}, Inconsistent: []Inconsistent{}, Metrics: []MetricDist{}, Reasons: []string{}}
	judged := make([][]report.Result, len(nodes))
	for i, n := range nodes {
		var ns NodeSummary
		ns, judged[i] = judgeNode(n)
		f.Nodes = append(f.Nodes, ns)
	}
	poolChecks(f.Nodes)
	judgeBands(nodes, f.Nodes, bands)
	// The nodes' own failures first, in node order; the cases and metrics
	// below add theirs to the nodes and to the reasons once each.
	for _, ns := range f.Nodes {
		for _, why := range ns.Failures {
			f.Reasons = append(f.Reasons, fmt.Sprintf("node %s: %s", ns.Name, why))
		}
	}
	f.Stacks = stackGroups(f.Nodes)
	byName := map[string]*NodeSummary{}
	for i := range f.Nodes {
		byName[f.Nodes[i].Name] = &f.Nodes[i]
	}
	f.Inconsistent = inconsistent(nodes, judged, f.Nodes)
	f.caseReasons(byName)
	f.Metrics = distributions(nodes)
	f.metricReasons(byName)
	f.Pass = len(f.Reasons) == 0
	return f
}

// judgeNode is one node's summary and its judged results (nil when it has
// none): no result, or its run judged by the one verdict function, with
// its run's own summary, gate and exit status standing beside it.
func judgeNode(n Node) (NodeSummary, []report.Result) {
	ns := NodeSummary{Name: n.Name, File: n.File, Counts: map[string]int{}, Failures: []string{}, ExitStatus: n.ExitStatus}
	fail := func(format string, a ...any) { ns.Failures = append(ns.Failures, fmt.Sprintf(format, a...)) }
	var res []report.Result
	switch {
	case n.Report == nil:
		ns.Verdict = NoResult
		ns.Stack = Stack{Driver: "none", GPU: "unknown GPU"}
		fail("no result: %s", n.NoResult)
	case len(n.Report.Results) == 0:
		// A run that tested nothing (a usage error, a GPU backend that
		// did not load, a signal before the first case) is no result,
		// whatever its summary says: zero cases is not a pass.
		ns.Verdict = NoResult
		ns.Stack = stackOf(n.Report.Environment)
		fail("no result: results.json holds no case%s", lastLine(n.Report.Summary))
	default:
		res = judgeRun(&ns, n.Report, fail)
	}
	// After the reasons above: the drain line names the first, and "no
	// result" or the missed cases say more than the status.
	if n.ExitStatus != nil && *n.ExitStatus != 0 {
		fail("suite exit status %d", *n.ExitStatus)
	}
	if len(ns.Failures) > 0 && ns.Verdict == "pass" {
		ns.Verdict = "fail"
	}
	return ns, res
}

// ranCases counts the cases a node's run planned: a gated run's results
// also list its baseline's ids that it did not run (verdict missing), which
// are no case of it: counted, a two-node tie between a gated node missing
// one id and a healthy node broke toward the larger count and failed the
// healthy node (issue 38 item 12).
func ranCases(rs []report.Result) int {
	n := 0
	for _, r := range rs {
		if r.Verdict != report.Missing {
			n++
		}
	}
	return n
}

// judgeRun fills ns from a node's run: its shape, its outcomes, and its
// verdict by the verdict's rule (expect.JudgeRun, as the suite and
// p2preport judge: report.Unexpected, so a not-supported capability is
// not a failure), never by outcome == expected. The run's own summary
// (gated against its node's baseline) and gate stand too: a missing case,
// say, is only in them.
func judgeRun(ns *NodeSummary, rep *report.Report, fail func(string, ...any)) []report.Result {
	ns.Stack = stackOf(rep.Environment)
	ns.Cases = ranCases(rep.Results)
	ns.Backend = backendOf(rep.Results)
	ns.GPUs = gpuCount(rep.Environment)
	ns.Ranks = flagRanks(rep.Environment)
	// Judged by the suite's judge (stream.JudgeRecord: the recorded
	// verdicts re-checked against the outcomes, a case without one judged
	// by the verdict's rule), on
	// a copy: the run's own summary and gate are read below as recorded.
	judged := *rep
	if err := stream.JudgeRecord(&judged, time.Unix(0, 0), expect.Rejudge{}); err != nil {
		fail("its record could not be judged: %v", err)
		return rep.Results
	}
	res, sum := judged.Results, *judged.Summary
	for _, r := range res {
		ns.Counts[string(r.Outcome)]++
	}
	ns.Unmet = len(sum.Unexpected)
	ns.Verdict = strings.ToLower(sum.Verdict)
	if ns.Verdict != "pass" {
		fail("%s of %d did not meet their expected outcome", plural(ns.Unmet, "case", "cases"), ns.Cases)
	}
	if rs := rep.Summary; rs != nil {
		ns.Unmet = max(ns.Unmet, len(rs.Unexpected))
		if rs.ExitStatus != 0 || !strings.EqualFold(rs.Verdict, "pass") {
			if ns.Verdict == "pass" {
				fail("its run's verdict is %s (exit status %d)", rs.Verdict, rs.ExitStatus)
			}
			ns.Verdict = "fail"
		}
	}
	if g := rep.Gate; g != nil {
		pass := g.Pass
		ns.Gate = &pass
		if !g.Pass {
			if ns.Verdict == "pass" {
				fail("its gate failed")
			}
			ns.Verdict = "fail"
		}
	}
	if rep.Timing != nil {
		ns.WallS = rep.Timing.SuiteWallS
	}
	return res
}

// stackGroups groups the nodes by stack, in the order the stacks first
// appear, counting the nodes of each that fail.
func stackGroups(ns []NodeSummary) []StackGroup {
	stacks := map[Stack]*StackGroup{}
	var order []Stack
	for _, n := range ns {
		g, ok := stacks[n.Stack]
		if !ok {
			g = &StackGroup{Stack: n.Stack, Nodes: []string{}}
			stacks[n.Stack] = g
			order = append(order, n.Stack)
		}
		g.Nodes = append(g.Nodes, n.Name)
		if len(n.Failures) > 0 {
			g.Unmet++
		}
	}
	out := []StackGroup{}
	for _, s := range order {
		out = append(out, *stacks[s])
	}
	return out
}

// caseReasons: a case met on some nodes and missed on others is the news
// the fleet gate exists for; one whose outcomes differ but which every
// node met (a not-supported skip beside a pass) is listed only.
func (f *Fleet) caseReasons(byName map[string]*NodeSummary) {
	for _, ic := range f.Inconsistent {
		if len(ic.Passing) == 0 || len(ic.Failing) == 0 {
			continue
		}
		f.Reasons = append(f.Reasons, fmt.Sprintf("case %s: met on %s, not on %s", ic.ID, strings.Join(ic.Passing, ","), strings.Join(ic.Failing, ",")))
		for _, n := range ic.Failing {
			byName[n].Failures = append(byName[n].Failures, "case "+ic.ID+" missed, met on "+plural(len(ic.Passing), "other node", "other nodes"))
		}
	}
}

// metricReasons: a node's bad-side outlier of a gating metric fails it.
func (f *Fleet) metricReasons(byName map[string]*NodeSummary) {
	for _, m := range f.Metrics {
		for _, v := range m.Nodes {
			if v.Bad && m.Gating {
				f.Reasons = append(f.Reasons, fmt.Sprintf("metric %s %s: node %s %s %.4g %s (fleet median %.4g, z %.1f)",
					m.Case, m.Metric, v.Node, v.Outlier, v.Median, m.Unit, m.Median, v.Z))
				byName[v.Node].Failures = append(byName[v.Node].Failures, fmt.Sprintf("%s %s %.4g %s, fleet median %.4g", m.Case, m.Metric, v.Median, m.Unit, m.Median))
			}
		}
	}
}

// poolChecks fails the nodes that ran something other than their pool:
// the host backend beside GPU backends (a GPU node whose driver did not
// load passes on the host backend, where no case of it runs on any other
// node, so no case "differs"), another backend than the majority of its
// GPU model, fewer GPUs or ranks than that majority (a lost GPU, an
// allocation smaller than the pool's), fewer cases than the majority of
// its shape (a node whose suite ran a part of the plan). Majorities break
// ties toward more (GPUs, ranks, cases): losing some is the failure mode.
func poolChecks(ns []NodeSummary) {
	anyGPU := false
	for _, n := range ns {
		if n.Verdict != NoResult && descriptors.IsGPU(n.Backend) {
			anyGPU = true
		}
	}
	model := func(n NodeSummary) string { return n.Stack.Vendor + "|" + gpuName(n.Stack.GPU) }
	backends := map[string]map[string]int{}
	for _, n := range ns {
		if n.Verdict == NoResult {
			continue
		}
		if backends[model(n)] == nil {
			backends[model(n)] = map[string]int{}
		}
		backends[model(n)][n.Backend]++
	}
	for i := range ns {
		n := &ns[i]
		if n.Verdict == NoResult {
			continue
		}
		if anyGPU && descriptors.RunsOnCPU(n.Backend) {
			n.Failures = append(n.Failures, "ran the host backend beside GPU nodes (a GPU node whose driver did not load?)")
			n.Verdict = "fail"
			continue
		}
		if maj := modeString(backends[model(*n)]); n.Backend != maj {
			n.Failures = append(n.Failures, fmt.Sprintf("ran backend %s, its GPU model's majority ran %s", n.Backend, maj))
			n.Verdict = "fail"
		}
	}
	gpus, ranks := map[string]map[int]int{}, map[string]map[int]int{}
	for _, n := range ns {
		if n.Verdict == NoResult {
			continue
		}
		k := model(n) + "|" + n.Backend
		if gpus[k] == nil {
			gpus[k], ranks[k] = map[int]int{}, map[int]int{}
		}
		gpus[k][n.GPUs]++
		ranks[k][n.Ranks]++
	}
	cases := map[string]map[int]int{}
	shape := func(n NodeSummary) string { return fmt.Sprintf("%s|%s|%d|%d", model(n), n.Backend, n.GPUs, n.Ranks) }
	for _, n := range ns {
		if n.Verdict == NoResult {
			continue
		}
		if cases[shape(n)] == nil {
			cases[shape(n)] = map[int]int{}
		}
		cases[shape(n)][n.Cases]++
	}
	for i := range ns {
		n := &ns[i]
		if n.Verdict == NoResult {
			continue
		}
		k := model(*n) + "|" + n.Backend
		if maj := modeInt(gpus[k]); n.GPUs < maj {
			n.Failures = append(n.Failures, fmt.Sprintf("%d GPUs, its pool's majority has %d", n.GPUs, maj))
		}
		if maj := modeInt(ranks[k]); n.Ranks < maj {
			n.Failures = append(n.Failures, fmt.Sprintf("ran %d ranks, its pool's majority ran %d", n.Ranks, maj))
		}
		if maj := modeInt(cases[shape(*n)]); n.Cases < maj {
			n.Failures = append(n.Failures, fmt.Sprintf("ran %d cases, its shape's majority ran %d", n.Cases, maj))
		}
		if len(n.Failures) > 0 {
			n.Verdict = "fail"
		}
	}
}

func modeString(m map[string]int) string {
	best, bn := "", -1
	for k, c := range m {
		if c > bn || c == bn && (descriptors.RunsOnCPU(best) || !descriptors.RunsOnCPU(k) && k < best) {
			best, bn = k, c
		}
	}
	return best
}

func modeInt(m map[int]int) int {
	best, bn := 0, -1
	for k, c := range m {
		if c > bn || c == bn && k > best {
			best, bn = k, c
		}
	}
	return best
}

// gpuName is the model part of Stack.GPU ("NVIDIA H200 ×8 (sm_90)" → "NVIDIA H200").
func gpuName(s string) string {
	if i := strings.Index(s, " ×"); i >= 0 {
		return s[:i]
	}
	return s
}

// backendOf is the backends a node's cases ran on: the first segment of
// every case id (cuda, hip, hsa, host), sorted and joined by "+".
func backendOf(rs []report.Result) string {
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Backend] = true
	}
	return strings.Join(sortedKeys(seen), "+")
}

func gpuCount(env report.Environment) int {
	count := len(env.GPUs)
	if count > 0 && env.GPUs[0].Count > count {
		count = env.GPUs[0].Count
	}
	return count
}

func flagRanks(env report.Environment) int {
	if env.Flags == nil {
		return 0
	}
	return env.Flags.Ranks
}

func lastLine(s *report.Summary) string {
	if s == nil || s.Line == "" {
		return ""
	}
	return " (its summary: " + trunc(s.Line, 120) + ")"
}

// stackOf reads the stack from a run's environment: the driver as the
// gate's fingerprint reads it (the host backend has none: its kernel
// stands in), the first GPU's model, count and architecture.
func stackOf(env report.Environment) Stack {
	fp := env.Stack()
	s := Stack{Vendor: fp["vendor"], Driver: fp["driver"], Kernel: env.Kernel()}
	if s.Driver == "" {
		s.Driver = "kernel " + s.Kernel
	}
	if gs := env.GPUs; len(gs) > 0 {
		s.GPU = fmt.Sprintf("%s ×%d (%s)", gs[0].Name, gpuCount(env), gs[0].Arch)
	}
	if s.GPU == "" {
		s.GPU = "unknown GPU"
	}
	return s
}

// inconsistent lists the cases whose outcome differs across the nodes that
// ran them; met and missed are by the verdict's rule (report.Unexpected of
// the judged result), not outcome == expected.
func inconsistent(nodes []Node, judged [][]report.Result, sums []NodeSummary) []Inconsistent {
	type seen struct {
		res   report.Result
		stack Stack
	}
	by := map[string]map[string]seen{}
	var ids []string
	for i := range nodes {
		for _, r := range judged[i] {
			if by[r.ID()] == nil {
				by[r.ID()] = map[string]seen{}
				ids = append(ids, r.ID())
			}
			by[r.ID()][nodes[i].Name] = seen{r, sums[i].Stack}
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
			if !report.Unexpected(s.res) {
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

func distributions(nodes []Node) []MetricDist {
	type key struct{ c, m string }
	vals := map[key][]NodeValue{}
	units := map[key]string{}
	dirs := map[key]report.Direction{}
	// gating: the perf gate's metric set (perf.Gated: a perf case of a GPU
	// backend, a direction, >= 3 samples). counter.* rates from two
	// launches (the first sometimes 3x slower) and one-sample copies are
	// shown, never gating: on three healthy H200s they were 11 of the 14
	// bad-side outliers.
	gating := map[key]bool{}
	var keys []key
	for _, n := range nodes {
		if n.Report == nil {
			continue
		}
		for _, r := range n.Report.Results {
			for name, m := range r.Metrics {
				k := key{r.ID(), name}
				gating[k] = gating[k] || perf.Gated(r, m)
				if _, ok := vals[k]; !ok {
					keys = append(keys, k)
					units[k], dirs[k] = m.Unit, m.Direction()
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
		d := MetricDist{Case: k.c, Metric: k.m, Unit: units[k], Better: dirs[k].Words(), Nodes: vals[k], Gating: gating[k]}
		judge(&d)
		out = append(out, d)
	}
	return out
}

// judge is the perf judge's fleet mode (expect.Outliers) on d: the fleet
// median, the scale and each node's z and outlier flag (see the package
// comment), bad by the metric's declared direction.
func judge(d *MetricDist) {
	sp := expect.Outliers(d.Nodes, report.Direction(d.Better), relFloor(d))
	d.Median, d.Scale, d.Min, d.Max, d.Outliers = sp.Median, sp.Scale, sp.Min, sp.Max, sp.Outliers
}

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
	fmt.Fprintf(w, "%-20s %-9s %6s %6s  %-8s %s\n", "NODE", "VERDICT", "CASES", "UNMET", "BACKEND", "STACK")
	for _, n := range f.Nodes {
		b := n.Backend
		if b == "" {
			b = "-"
		}
		fmt.Fprintf(w, "%-20s %-9s %6d %6d  %-8s %s\n", n.Name, n.Verdict, n.Cases, n.Unmet, b, n.Stack)
	}
	fmt.Fprintf(w, "\nstacks: %d\n", len(f.Stacks))
	for _, g := range f.Stacks {
		fmt.Fprintf(w, "  %s: %s (%d failing)\n", g.Stack, strings.Join(g.Nodes, ", "), g.Unmet)
	}
	fmt.Fprintf(w, "\ncases that differ across nodes: %d\n", len(f.Inconsistent))
	for i, ic := range f.Inconsistent {
		if i == shownCases {
			fmt.Fprintf(w, "  … and %d more (--json lists every one)\n", len(f.Inconsistent)-shownCases)
			break
		}
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
					if !m.Gating {
						bad = " (bad side; host backend: shown, not gating)"
					}
				}
				fmt.Fprintf(w, "    %s: %.4g (samples %.4g–%.4g, n %d), z %.1f, %s%s\n", v.Node, v.Median, v.Min, v.Max, v.N, v.Z, v.Outlier, bad)
			}
		}
	}
	// The reasons, then the verdict as the last line (issue 49 U21: a
	// broken path ended the report on 123 per-case lines): the node and
	// metric reasons in full, the per-case ones up to shownCases.
	fmt.Fprintf(w, "\nreasons: %d\n", len(f.Reasons))
	cases := 0
	for _, r := range f.Reasons {
		if strings.HasPrefix(r, "case ") {
			if cases++; cases > shownCases {
				continue
			}
		}
		fmt.Fprintf(w, "  %s\n", r)
	}
	if cases > shownCases {
		fmt.Fprintf(w, "  … and %d more cases met on some nodes and missed on others (--json lists every one)\n", cases-shownCases)
	}
	fmt.Fprintln(w, f.VerdictLine(cases))
}

// shownCases is how many per-case lines the text report shows in each
// list before it counts the rest (the JSON report has them all).
var shownCases = 10

// VerdictLine is the fleet's last line: the verdict and what it rests on,
// counted (cases: the cases met on some nodes and missed on others).
func (f *Fleet) VerdictLine(cases int) string {
	var failing []string
	for _, n := range f.Nodes {
		if len(n.Failures) > 0 {
			failing = append(failing, n.Name)
		}
	}
	bad := 0
	for _, m := range f.Metrics {
		for _, v := range m.Nodes {
			if v.Bad && m.Gating {
				bad++
			}
		}
	}
	if f.Pass {
		return fmt.Sprintf("fleet: PASS — %s, each with a result that met its expected outcomes, no case met on some nodes only, no bad-side outlier", plural(len(f.Nodes), "node", "nodes"))
	}
	who := ""
	if len(failing) > 0 {
		who = " (" + cli.Clip(strings.Join(failing, ", "), 120) + ")"
	}
	return fmt.Sprintf("fleet: FAIL — %d of %s failing%s; %s met on some nodes and missed on others; %s on the bad side",
		len(failing), plural(len(f.Nodes), "node", "nodes"), who, plural(cases, "case", "cases"), plural(bad, "gating outlier", "gating outliers"))
}

// nodeName is what a node name may hold to be put on a drain line: a
// Slurm node name and a Kubernetes node name (a DNS subdomain) both fit
// it, and nothing in it means anything to sh.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]*$`)

// WriteDrain prints one drain command of engine e per failing node, the
// reason its first failure (Slurm keeps a short free-text reason; the
// report has the rest). The lines are for an admin to pipe to sh, and a
// node's name is its folder's name, which anyone who can write the shared
// folder chooses (issue 49 B7: "n1;touch PWNED" ran a command): a name
// outside [A-Za-z0-9._-] (or starting with "-", an option to scontrol or
// kubectl) gets no drain line but a "#" comment saying so (sh skips it),
// and a line on warn; every name is shell-quoted by the suite's one rule
// (report.ShellQuote), the reason stripped of what ends or expands its
// double quotes. It returns how many nodes it refused.
func (f *Fleet) WriteDrain(w, warn io.Writer, e Engine) int {
	refused := 0
	for _, n := range f.Nodes {
		if len(n.Failures) == 0 {
			continue
		}
		if !nodeName.MatchString(n.Name) {
			refused++
			msg := fmt.Sprintf("node %s not drained: its name is not a node name ([A-Za-z0-9._-], not starting with -); drain it by hand", strconv.Quote(n.Name))
			fmt.Fprintf(w, "# p2pfleet: %s\n", msg)
			fmt.Fprintf(warn, "p2pfleet: --drain: %s\n", msg)
			continue
		}
		why := n.Failures[0]
		if len(n.Failures) > 1 {
			why += fmt.Sprintf(" (+%d more)", len(n.Failures)-1)
		}
		why = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, trunc(why, 160))
		why = strings.NewReplacer(`"`, "'", `\`, "/", "$", "", "`", "'").Replace(why)
		fmt.Fprintf(w, e.Drain+"\n", report.ShellQuote(n.Name), why)
	}
	return refused
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// relFloor is how far from the fleet median, relative to it, a node of d
// must sit to be an outlier: the metric's perf family floor
// (perf.Classify; spread atomics and the one-launch round trip 40 %,
// their placement modes move them 23-33 % between healthy GPUs), never
// below expect.OutlierRel for a metric the perf gate does not judge.
func relFloor(d *MetricDist) float64 {
	if !d.Gating {
		return expect.OutlierRel
	}
	return math.Max(expect.OutlierRel, perf.Classify(d.Case, d.Metric).Floor)
}

// judgeBands judges every node's run by expect.JudgeMetrics against bands' perf.txt
// (its re-measurements, when the suite recorded any, included): a node
// with a failing finding, or on GPUs outside the file's scope, fails.
func judgeBands(nodes []Node, ns []NodeSummary, bands *expect.Set) {
	if bands == nil || bands.Perf == nil {
		return
	}
	for i, n := range nodes {
		if n.Report == nil || len(n.Report.Results) == 0 {
			continue
		}
		// Each node by the perf baseline whose scope is its GPUs (a
		// folder may hold one per card).
		b, err := bands.PerfFor(n.Report.Environment)
		if err != nil {
			ns[i].Failures = append(ns[i].Failures, err.Error())
			ns[i].Verdict = "fail"
			continue
		}
		p := expect.JudgeMetrics(b.File, n.Report.Results, expect.PerfReruns(n.Report.Results), b.Source)
		for _, fd := range p.Failing() {
			ns[i].Failures = append(ns[i].Failures, fmt.Sprintf("%s: %s", fd.Verdict, fd.Named()))
			ns[i].Verdict = "fail"
		}
	}
}
