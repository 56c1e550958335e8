package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"p2patomics/harness/fingerprint"
	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
)

// Change is one case's outcome in the two runs ("" where absent).
type Change struct {
	ID     string         `json:"id"`
	Old    report.Outcome `json:"old,omitempty"`
	New    report.Outcome `json:"new,omitempty"`
	Detail string         `json:"detail,omitempty"`
}

// MetricChange is one metric's median in the two runs.
type MetricChange struct {
	ID     string  `json:"id"`
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Rel    float64 `json:"rel"`    // (new-old)/|old|; 0 when old is 0
	Better string  `json:"better"` // "higher", "lower" or "unknown"
	Note   string  `json:"note,omitempty"`
}

// Comparison is p2pcompare's whole answer (also its --json output).
type Comparison struct {
	Old                string            `json:"old"`
	New                string            `json:"new"`
	OldStack           map[string]string `json:"old_stack"`
	NewStack           map[string]string `json:"new_stack"`
	Threshold          float64           `json:"metric_threshold"`
	Regressions        []Change          `json:"regressions"`
	Fixes              []Change          `json:"fixes"`
	Changes            []Change          `json:"changes"`
	Enabled            []Change          `json:"enabled"`
	Disabled           []Change          `json:"disabled"`
	MetricRegressions  []MetricChange    `json:"metric_regressions"`
	MetricImprovements []MetricChange    `json:"metric_improvements"`
	MetricChanges      []MetricChange    `json:"metric_changes"`
	Regressed          bool              `json:"regressed"`
}

// severity puts unknown outcomes above every known one.
func severity(o report.Outcome) int {
	if n := o.Severity(); n >= 0 {
		return n
	}
	return len(report.Outcomes)
}

func faultSig(f *report.Fault) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s %s(%d)", f.Vendor, f.Kind, f.Name, f.Code)
}

// Compare applies piglit's rules with DESIGN.md's severity order:
// regression = outcome more severe than before, fix = less severe, change =
// same outcome but a different expected outcome or GPU fault, enabled /
// disabled = case only in the new / old run. A metric (same case, same
// name) regresses when its median moves the wrong way by more than
// threshold (relative): a drop for rates (GB/s, Mops/s), a rise for times
// (us, ns). Metrics of unknown direction are only listed as changes, and so
// are metrics of cases without the perf label: a counter case's atomic rate
// comes from one short launch and moved by ±20% between two runs on one
// machine and driver (results/h200x2-580.159.04 against its run-d9c5274/);
// only perf cases are measured to be compared.
func Compare(oldRep, newRep *report.Report, threshold float64) *Comparison {
	c := &Comparison{
		OldStack: fingerprint.Stack(oldRep.Environment), NewStack: fingerprint.Stack(newRep.Environment),
		Threshold:   threshold,
		Regressions: []Change{}, Fixes: []Change{}, Changes: []Change{}, Enabled: []Change{}, Disabled: []Change{},
		MetricRegressions: []MetricChange{}, MetricImprovements: []MetricChange{}, MetricChanges: []MetricChange{},
	}
	olds := index(oldRep.Results)
	news := index(newRep.Results)
	for _, id := range sortedKeys(olds, news) {
		o, inOld := olds[id]
		n, inNew := news[id]
		switch {
		case !inOld:
			c.Enabled = append(c.Enabled, Change{ID: id, New: n.Outcome})
			continue
		case !inNew:
			c.Disabled = append(c.Disabled, Change{ID: id, Old: o.Outcome})
			continue
		}
		ch := Change{ID: id, Old: o.Outcome, New: n.Outcome}
		switch so, sn := severity(o.Outcome), severity(n.Outcome); {
		case sn > so:
			ch.Detail = firstLine(n.Detail)
			c.Regressions = append(c.Regressions, ch)
		case sn < so:
			c.Fixes = append(c.Fixes, ch)
		default:
			var notes []string
			if o.Expected != n.Expected {
				notes = append(notes, fmt.Sprintf("expected %s → %s", o.Expected, n.Expected))
			}
			if fo, fn := faultSig(o.Fault), faultSig(n.Fault); fo != fn {
				notes = append(notes, fmt.Sprintf("fault %s → %s", orNone(fo), orNone(fn)))
			}
			if len(notes) > 0 {
				ch.Detail = strings.Join(notes, "; ")
				c.Changes = append(c.Changes, ch)
			}
		}
		c.compareMetrics(id, o.Metrics, n.Metrics, slices.Contains(o.Labels, "perf") || slices.Contains(n.Labels, "perf"))
	}
	c.Regressed = len(c.Regressions) > 0 || len(c.MetricRegressions) > 0
	return c
}

func (c *Comparison) compareMetrics(id string, om, nm map[string]report.Metric, gated bool) {
	names := map[string]bool{}
	for k := range om {
		names[k] = true
	}
	for k := range nm {
		names[k] = true
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o, inOld := om[k]
		n, inNew := nm[k]
		mc := MetricChange{ID: id, Metric: k, Unit: n.Unit, Old: o.Median, New: n.Median}
		if !inNew {
			mc.Unit = o.Unit
		}
		dir := heatmap.Direction(mc.Unit)
		mc.Better = map[int]string{1: "higher", -1: "lower", 0: "unknown"}[dir]
		switch {
		case !inOld:
			mc.Note = "new metric"
			c.MetricChanges = append(c.MetricChanges, mc)
			continue
		case !inNew:
			mc.Note = "metric gone"
			c.MetricChanges = append(c.MetricChanges, mc)
			continue
		case o.Unit != n.Unit:
			mc.Note = fmt.Sprintf("unit changed %s → %s", o.Unit, n.Unit)
			c.MetricChanges = append(c.MetricChanges, mc)
			continue
		case o.Median == 0:
			if n.Median != 0 {
				mc.Note = "was 0"
				c.MetricChanges = append(c.MetricChanges, mc)
			}
			continue
		}
		mc.Rel = (n.Median - o.Median) / math.Abs(o.Median)
		if math.Abs(mc.Rel) <= c.Threshold {
			continue
		}
		switch {
		case dir == 0:
			c.MetricChanges = append(c.MetricChanges, mc)
		case !gated:
			mc.Note = "not a perf case: informational"
			c.MetricChanges = append(c.MetricChanges, mc)
		case float64(dir)*mc.Rel < 0:
			c.MetricRegressions = append(c.MetricRegressions, mc)
		default:
			c.MetricImprovements = append(c.MetricImprovements, mc)
		}
	}
}

func index(rs []report.Result) map[string]report.Result {
	m := make(map[string]report.Result, len(rs))
	for _, r := range rs {
		m[r.ID] = r // a later entry (a rerun) wins
	}
	return m
}

func sortedKeys(a, b map[string]report.Result) []string {
	seen := map[string]bool{}
	var ks []string
	for _, m := range []map[string]report.Result{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sort.Strings(ks)
	return ks
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func plural(n int, one string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	if strings.HasSuffix(one, "x") {
		return fmt.Sprintf("%d %ses", n, one)
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// WriteTable prints the comparison for people.
func (c *Comparison) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "old: %s (%s)\nnew: %s (%s)\n", c.Old, stackLine(c.OldStack), c.New, stackLine(c.NewStack))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	section := func(title string, cs []Change, line func(Change) string) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s (%d):\n", title, len(cs))
		for _, ch := range cs {
			fmt.Fprintf(tw, "  %s\t%s\n", ch.ID, line(ch))
		}
	}
	arrow := func(ch Change) string {
		s := fmt.Sprintf("%s → %s", ch.Old, ch.New)
		if ch.Detail != "" {
			s += "\t" + ch.Detail
		}
		return s
	}
	section("regressions", c.Regressions, arrow)
	section("fixes", c.Fixes, arrow)
	section("changes", c.Changes, arrow)
	section("enabled (only in new)", c.Enabled, func(ch Change) string { return string(ch.New) })
	section("disabled (only in old)", c.Disabled, func(ch Change) string { return "was " + string(ch.Old) })
	msection := func(title string, ms []MetricChange) {
		if len(ms) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s (%d, threshold %s):\n", title, len(ms), pct(c.Threshold))
		for _, m := range ms {
			rel := pct(m.Rel)
			if m.Rel > 0 {
				rel = "+" + rel
			}
			if m.Note != "" {
				rel = m.Note
			}
			ov, nv := heatmap.Format(m.Old), heatmap.Format(m.New)
			switch m.Note {
			case "new metric":
				ov = "—"
			case "metric gone":
				nv = "—"
			}
			better := "(" + m.Better + " is better)"
			if m.Better == "unknown" {
				better = "(direction unknown)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s %s\t%s\t%s\n", m.ID, m.Metric, ov, nv, m.Unit, rel, better)
		}
	}
	msection("metric regressions", c.MetricRegressions)
	msection("metric improvements", c.MetricImprovements)
	msection("metric changes", c.MetricChanges)
	tw.Flush()
	verdict := "no regression"
	if c.Regressed {
		verdict = "REGRESSED"
	}
	fmt.Fprintf(w, "\nsummary: %s, %s, %s, %s enabled, %s disabled, %s, %s: %s\n",
		plural(len(c.Regressions), "regression"), plural(len(c.Fixes), "fix"), plural(len(c.Changes), "change"),
		fmt.Sprint(len(c.Enabled)), fmt.Sprint(len(c.Disabled)),
		plural(len(c.MetricRegressions), "metric regression"), plural(len(c.MetricImprovements), "metric improvement"), verdict)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

func stackLine(st map[string]string) string {
	var parts []string
	for _, k := range []string{"vendor", "arch", "driver"} {
		if v := st[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
