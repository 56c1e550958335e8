package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/pairs"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
)

// Change is one case's outcome in the two runs ("" where absent).
type Change struct {
	ID     string         `json:"id"`
	Old    report.Outcome `json:"old,omitempty"`
	New    report.Outcome `json:"new,omitempty"`
	Detail string         `json:"detail,omitempty"`
}

// MetricChange is one metric in the two runs and how its change was judged.
type MetricChange struct {
	ID     string  `json:"id"`
	Metric string  `json:"metric"`
	Unit   string  `json:"unit"`
	Old    float64 `json:"old"` // medians
	New    float64 `json:"new"`
	Rel    float64 `json:"rel"`    // (new-old)/|old|; 0 when old is 0
	Better string  `json:"better"` // the declared direction (report.Metric.Direction): "higher", "lower" or "unknown"
	// Judged says how: "u-test" (Mann-Whitney U on both runs' samples,
	// as benchstat does), "ranges" (a run without samples: a change
	// counts only when the two min–max ranges do not overlap) or
	// "too-few" (a run measured once: never counts).
	Judged string  `json:"judged,omitempty"`
	P      float64 `json:"p,omitempty"`
	N1     int     `json:"n1,omitempty"`
	N2     int     `json:"n2,omitempty"`
	// Delta is the change as printed: "+5.1% (p=0.008, n=5+5)", "~ (p=0.69,
	// n=5+5)", "~ (no samples)".
	Delta string `json:"delta"`
	Note  string `json:"note,omitempty"`
	// verdict is expect.CompareRuns's: perf-regression or perf-improvement
	// by the metric's declared direction, "" for none.
	verdict report.Verdict
}

// Options are p2pcompare's judgement settings.
type Options struct {
	// Threshold is the smallest relative change of a median that counts,
	// even when significant: a real 0.5% shift is not a regression.
	Threshold float64
	// Alpha is the U test's significance level (benchstat's 0.05).
	Alpha float64
	// Flakes holds the baseline's flakes.txt (nil: none): a case matching
	// it that changes outcome is listed as flaky, not as a regression.
	Flakes *expect.Set
	// FlakesFrom names where Flakes came from, for the table.
	FlakesFrom string
	// Bands, when set, judges the new run's perf metrics by expect.JudgeMetrics
	// (a perf.txt, or a band recorded from ≥ 3 old runs) instead of the U
	// test against one old run; BandsFrom names it. NewReruns are the
	// medians of the new side's other runs (expect.JudgeMetrics's reruns: the
	// median of all decides).
	Bands     *perf.File
	BandsFrom string
	NewReruns map[string][]float64
}

// Comparison is p2pcompare's whole answer (also its --json output).
type Comparison struct {
	Old                string            `json:"old"`
	New                string            `json:"new"`
	OldStack           map[string]string `json:"old_stack"`
	NewStack           map[string]string `json:"new_stack"`
	Threshold          float64           `json:"metric_threshold"`
	Alpha              float64           `json:"alpha"`
	FlakesFrom         string            `json:"flakes_from,omitempty"`
	Regressions        []Change          `json:"regressions"`
	Fixes              []Change          `json:"fixes"`
	Changes            []Change          `json:"changes"`
	Enabled            []Change          `json:"enabled"`
	Disabled           []Change          `json:"disabled"`
	Flaky              []Change          `json:"flaky"`
	MetricRegressions  []MetricChange    `json:"metric_regressions"`
	MetricImprovements []MetricChange    `json:"metric_improvements"`
	MetricChanges      []MetricChange    `json:"metric_changes"`
	MetricsUnchanged   int               `json:"metrics_unchanged"`
	// MetricsBy says how metrics were judged: "band of PATH" or "band from
	// 3 old runs" (expect.JudgeMetrics;
	// Perf holds its findings) or "u-test, one run a side" (then a metric
	// regression is unconfirmed: listed, never REGRESSED).
	MetricsBy   string              `json:"metrics_by"`
	Unconfirmed bool                `json:"unconfirmed"`
	Perf        *report.PerfSummary `json:"perf,omitempty"`
	Regressed   bool                `json:"regressed"`
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

// Compare applies piglit's rules with the outcomes' severity order (docs/ARCHITECTURE.md, Contracts):
// regression = outcome more severe than before, fix = less severe, change =
// same outcome but a different expected outcome or GPU fault, enabled /
// disabled = case only in the new / old run. A case that changed outcome
// and is a known flake (the baseline's flakes.txt, or a flake / known-flake
// verdict in the old run) is listed as flaky instead: a flake that fails
// is what flakes.txt says it does.
//
// Metrics (same case, same name) are judged against their spread, not a
// flat threshold on the median: with samples in both runs, by the
// Mann-Whitney U test (p < alpha) and a median moved by more than the
// threshold; without samples (runs written before samples were kept), only
// when the two min–max ranges do not overlap and the median moved by more
// than the threshold — otherwise "~ (no samples)"; a metric measured once
// in either run has no spread and never counts. A significant change
// is a metric regression when it goes the wrong way (a drop for rates, a
// rise for times) on a perf case of a GPU backend; on other cases it is
// informational: a counter case's rate comes from one short launch, and
// the host backend times Go code on a shared CPU.
func Compare(oldRep, newRep *report.Report, opt Options) *Comparison {
	if opt.Alpha == 0 {
		opt.Alpha = 0.05
	}
	c := &Comparison{
		OldStack: oldRep.Environment.Stack(), NewStack: newRep.Environment.Stack(),
		Threshold: opt.Threshold, Alpha: opt.Alpha, FlakesFrom: opt.FlakesFrom,
		Regressions: []Change{}, Fixes: []Change{}, Changes: []Change{}, Enabled: []Change{}, Disabled: []Change{}, Flaky: []Change{},
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
		so, sn := severity(o.Outcome), severity(n.Outcome)
		if so != sn {
			if why, flaky := knownFlake(opt.Flakes, o); flaky {
				ch.Detail = why
				c.Flaky = append(c.Flaky, ch)
				c.compareMetrics(id, o, n, opt)
				continue
			}
		}
		switch {
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
		c.compareMetrics(id, o, n, opt)
	}
	c.judgeBands(newRep, opt)
	return c
}

// judgeBands decides what the metrics add to the verdict. With a band
// (opt.Bands), the new run is judged by expect.JudgeMetrics, as the suite's perf
// gate judges it, and its perf-regressions and perf-missing regress the
// comparison. Without, the U test compared one run with one run: two
// worlds cannot tell a change from run-to-run placement (on the committed
// healthy 1×H200 runs 27 of 30 ordered pairs had some), so its metric
// regressions are listed as unconfirmed and never regress.
func (c *Comparison) judgeBands(newRep *report.Report, opt Options) {
	c.Regressed = len(c.Regressions) > 0
	if opt.Bands == nil {
		c.MetricsBy, c.Unconfirmed = "u-test, one run a side", len(c.MetricRegressions) > 0
		return
	}
	c.MetricsBy = "band " + opt.BandsFrom
	c.Perf = expect.JudgeMetrics(opt.Bands, newRep.Results, opt.NewReruns, opt.BandsFrom)
	c.Regressed = c.Regressed || len(c.Perf.Failing()) > 0
}

// knownFlake says whether the baseline knows o's case as a flake, and why.
func knownFlake(set *expect.Set, o report.Result) (string, bool) {
	if set != nil {
		if why, ok := set.Flaky(o.ID()); ok {
			return "flakes.txt: " + firstLine(why), true
		}
	}
	if o.Verdict == report.KnownFlake || o.Verdict == report.Flake {
		return "the old run's verdict: " + string(o.Verdict), true
	}
	return "", false
}

// gated: metric changes of this case can regress the comparison.
func gated(o, n report.Result) bool {
	perf := report.LabelPerf.In(o.Labels) || report.LabelPerf.In(n.Labels)
	return perf && backends.IsGPU(n.Backend)
}

// Judge compares one metric of the two runs (see Compare) by the perf
// judge's two-run mode (expect.CompareRuns): p2pcompare has no perf.txt to
// judge a median against, only the other run's samples.
func Judge(o, n report.Metric, opt Options) MetricChange {
	rc := expect.CompareRuns(o, n, opt.Threshold, opt.Alpha)
	return MetricChange{Unit: n.Unit, Old: o.Median, New: n.Median, Rel: rc.Rel, Better: n.Direction().Words(),
		Judged: rc.Judged, P: rc.P, N1: rc.N1, N2: rc.N2, Delta: rc.Delta, verdict: rc.Verdict}
}

// Significant reports whether Judge found a change that counts.
func (m MetricChange) Significant() bool { return !strings.HasPrefix(m.Delta, "~") }

func (c *Comparison) compareMetrics(id string, o, n report.Result, opt Options) {
	om, nm := o.Metrics, n.Metrics
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
	// With a band the perf gate judges the metrics (judgeBands); the U
	// test's changes are then informational.
	isGated := gated(o, n) && opt.Bands == nil
	for _, k := range keys {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		unit := nv.Unit
		if !inNew {
			unit = ov.Unit
		}
		// A metric gone from the new run reads its declaration from the old.
		better := nv.Direction().Words()
		if !inNew {
			better = ov.Direction().Words()
		}
		switch {
		case !inOld:
			c.MetricChanges = append(c.MetricChanges, MetricChange{ID: id, Metric: k, Unit: unit, New: nv.Median, Better: better, Note: "new metric", Delta: "new"})
			continue
		case !inNew:
			c.MetricChanges = append(c.MetricChanges, MetricChange{ID: id, Metric: k, Unit: unit, Old: ov.Median, Better: better, Note: "metric gone", Delta: "gone"})
			continue
		case ov.Unit != nv.Unit:
			c.MetricChanges = append(c.MetricChanges, MetricChange{ID: id, Metric: k, Unit: unit, Old: ov.Median, New: nv.Median, Better: better,
				Note: fmt.Sprintf("unit changed %s → %s", ov.Unit, nv.Unit), Delta: "unit changed"})
			continue
		}
		mc := Judge(ov, nv, opt)
		mc.ID, mc.Metric = id, k
		switch {
		case ov.Median == 0 && nv.Median != 0:
			mc.Note, mc.Delta = "was 0", "was 0"
			c.MetricChanges = append(c.MetricChanges, mc)
		case !mc.Significant():
			c.MetricsUnchanged++
		case mc.verdict == "":
			// An undeclared direction (a count): a change, neither way.
			c.MetricChanges = append(c.MetricChanges, mc)
		case !isGated && opt.Bands != nil:
			mc.Note = "informational: judged by the band"
			c.MetricChanges = append(c.MetricChanges, mc)
		case !isGated:
			mc.Note = "informational: not a perf case of a GPU backend"
			c.MetricChanges = append(c.MetricChanges, mc)
		case mc.verdict == report.PerfRegression:
			c.MetricRegressions = append(c.MetricRegressions, mc)
		default:
			c.MetricImprovements = append(c.MetricImprovements, mc)
		}
	}
}

func index(rs []report.Result) map[string]report.Result {
	m := make(map[string]report.Result, len(rs))
	for _, r := range rs {
		m[r.ID()] = r // a later entry (a rerun) wins
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
	s = cli.Clip(s, 100) // never mid-word, never mid-character
	// A detail is a rank's or a driver's text: control bytes (an escape
	// code would set the terminal's title or colours) are shown quoted.
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '�'
		}
		return r
	}, s)
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

// VerdictLine is the comparison's answer in one line, printed first.
func (c *Comparison) VerdictLine() string {
	word := "no regression"
	if c.Regressed {
		word = "REGRESSED"
	}
	metrics := plural(len(c.MetricRegressions), "metric regression")
	switch {
	case c.Perf != nil:
		metrics = plural(len(c.Perf.Failing()), "perf regression") + " (" + c.MetricsBy + ")"
	case c.Unconfirmed:
		metrics += " (unconfirmed: one run a side)"
	}
	return fmt.Sprintf("p2pcompare: %s — %s, %s", word, plural(len(c.Regressions), "case regression"), metrics)
}

// writePerf lists the band's findings: failing first (expect.JudgeMetrics's order).
func (c *Comparison) writePerf(w io.Writer) {
	if c.Perf == nil {
		return
	}
	fmt.Fprintf(w, "perf (%s): %d gated, %d in band\n", c.MetricsBy, c.Perf.Gated, c.Perf.InBand)
	for _, f := range c.Perf.Findings {
		fmt.Fprintf(w, "  %s: %s; %s\n", f.Verdict, f.Named(), f.Detail)
	}
}

// WriteTable prints the comparison for people: the verdict first, then
// what decided it (case and metric regressions), then one line counting
// everything else; verbose lists that too (fixes, changes, enabled,
// disabled, known flakes, improvements, informational metric changes).
func (c *Comparison) WriteTable(w io.Writer, verbose bool) {
	fmt.Fprintln(w, c.VerdictLine())
	fmt.Fprintf(w, "old: %s (%s)\nnew: %s (%s)\n", c.Old, stackLine(c.OldStack), c.New, stackLine(c.NewStack))
	flakes := "flakes: none read (no expectation folder for the old run's stack; --expectations=PATH names one)"
	if c.FlakesFrom != "" {
		flakes = "flakes: " + c.FlakesFrom
	}
	fmt.Fprintf(w, "%s; the old run's flake verdicts count too\n", flakes)
	fmt.Fprintf(w, "metrics: Mann-Whitney U at alpha %.2g and a median moved more than %.0f%%; without samples, only min–max ranges that do not overlap\n", c.Alpha, c.Threshold*100)
	if c.Unconfirmed {
		fmt.Fprintln(w, "metric regressions are unconfirmed (one run a side cannot tell a change from run-to-run noise): they do not regress; judge by --expectations with a perf.txt, or by at least 3 runs a side")
	}
	c.writePerf(w)
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
	msection := func(title string, ms []MetricChange) {
		if len(ms) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s (%d):\n", title, len(ms))
		for _, m := range ms {
			ov, nv := pairs.Format(m.Old), pairs.Format(m.New)
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
			note := ""
			if m.Note != "" && m.Note != "new metric" && m.Note != "metric gone" {
				note = "\t" + m.Note
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s %s\t%s\t%s%s\n", m.ID, m.Metric, ov, nv, m.Unit, m.Delta, better, note)
		}
	}
	section("case regressions", c.Regressions, arrow)
	if c.Unconfirmed {
		msection("unconfirmed metric regressions", c.MetricRegressions)
	} else {
		msection("metric regressions", c.MetricRegressions)
	}
	if verbose {
		section("fixes", c.Fixes, arrow)
		section("changes", c.Changes, arrow)
		section("known flakes that changed outcome (not regressions)", c.Flaky, arrow)
		section("enabled (only in new)", c.Enabled, func(ch Change) string { return string(ch.New) })
		section("disabled (only in old)", c.Disabled, func(ch Change) string { return "was " + string(ch.Old) })
		msection("metric improvements", c.MetricImprovements)
		msection("metric changes (informational)", c.MetricChanges)
	}
	tw.Flush()
	rest := fmt.Sprintf("%s, %s, %s, %d enabled, %d disabled, %s, %s, %d metrics unchanged (~)",
		plural(len(c.Fixes), "fix"), plural(len(c.Changes), "change"), plural(len(c.Flaky), "known flake"),
		len(c.Enabled), len(c.Disabled), plural(len(c.MetricImprovements), "metric improvement"),
		plural(len(c.MetricChanges), "informational metric change"), c.MetricsUnchanged)
	if !verbose {
		rest += "; -v lists them"
	}
	fmt.Fprintf(w, "\nalso: %s\n", rest)
}

func stackLine(st map[string]string) string {
	var parts []string
	for _, k := range []string{"vendor", "arch", "driver"} {
		if v := st[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
