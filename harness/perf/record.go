package perf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"p2patomics/harness/report"
)

// ErrTooFewRuns: a perf.txt is recorded from at least MinRuns runs.
var ErrTooFewRuns = fmt.Errorf("a perf baseline needs at least %d runs in fresh worlds", MinRuns)

// Record builds a perf.txt from runs made in fresh worlds (each a whole
// suite run: new ranks, new allocations), named by names in the header.
// stack is the header the correctness files carry. Each gated metric
// (Gated) whose case passed in at least MinRuns of them gets a line: band
// = the least and greatest run median, tol = min(Cap, max(family floor,
// 4 × between-run CV)), limit = lo·(1−tol) for a metric declared higher-is-better,
// hi·(1+tol) for lower (report.Metric.Direction: the op records it). Refused: fewer than MinRuns runs, an injected or interrupted run,
// or runs on GPUs of different names (no scope holds them).
func Record(runs []*report.Report, names []string, stack string) (*File, error) {
	return Recording{}.Record(runs, names, stack)
}

// Recording is how Record picks the metrics and the scope. The zero value
// is the perf gate's own: Gated, and the scope the runs' GPUs give. A
// test of the recording path on a machine without a GPU sets both (the
// suite's hook, harness/suite export_test.go); nothing else does.
type Recording struct {
	Gated func(report.Result, report.Metric) bool // nil: Gated
	Scope string                                  // "": from the runs' GPUs (machine or sku)
}

// Record is Record under rc's metric predicate and scope.
func (rc Recording) Record(runs []*report.Report, names []string, stack string) (*File, error) {
	gated := rc.Gated
	if gated == nil {
		gated = Gated
	}
	if len(runs) < MinRuns {
		return nil, fmt.Errorf("%w: got %d (one run's medians cannot tell run-to-run noise from a change; record from %d results.json)", ErrTooFewRuns, len(runs), MinRuns)
	}
	for i, r := range runs {
		if len(r.Environment.Inject) > 0 {
			return nil, fmt.Errorf("%s: the run was made under injected driver faults (%s): not a measurement of the driver", names[i], strings.Join(r.Environment.Inject, ","))
		}
		if r.Summary != nil && r.Summary.Interrupted != "" {
			return nil, fmt.Errorf("%s: the run was interrupted (%s)", names[i], r.Summary.Interrupted)
		}
	}
	scope := rc.Scope
	if scope == "" {
		var err error
		if scope, err = scopeOf(runs, names); err != nil {
			return nil, err
		}
	}
	f := &File{Stack: stack, Scope: scope, Recorded: fmt.Sprintf("%d runs in fresh worlds: %s", len(runs), strings.Join(names, ", "))}
	for _, k := range gatedKeys(runs, gated) {
		if l, ok := lineFor(k, runs, gated); ok {
			f.Lines = append(f.Lines, l)
		}
	}
	if len(f.Lines) == 0 {
		return nil, errors.New("no gated metric (a perf case of a GPU backend with ≥ 3 samples) passed in enough runs")
	}
	sort.SliceStable(f.Lines, func(i, j int) bool { return familyRank(f.Lines[i].Family) < familyRank(f.Lines[j].Family) })
	return f, nil
}

type key struct{ id, metric string }

// gatedKeys is every gated metric of any run, sorted by case id and name.
func gatedKeys(runs []*report.Report, gated func(report.Result, report.Metric) bool) []key {
	seen := map[key]bool{}
	var ks []key
	for _, rep := range runs {
		for _, r := range rep.Results {
			for name, m := range r.Metrics {
				k := key{r.ID(), name}
				if gated(r, m) && !seen[k] {
					seen[k] = true
					ks = append(ks, k)
				}
			}
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].id != ks[j].id {
			return ks[i].id < ks[j].id
		}
		return ks[i].metric < ks[j].metric
	})
	return ks
}

// lineFor is k's line from the medians of the runs where its case passed
// with the metric in the same unit; false with fewer than MinRuns.
func lineFor(k key, runs []*report.Report, gated func(report.Result, report.Metric) bool) (Line, bool) {
	var meds []float64
	unit, dir := "", report.Direction("")
	for _, rep := range runs {
		r, ok := find(rep, k.id)
		m, has := r.Metrics[k.metric]
		if !ok || !has || r.Outcome != report.Pass || !gated(r, m) || (unit != "" && (m.Unit != unit || m.Direction() != dir)) {
			continue
		}
		unit, dir = m.Unit, m.Direction()
		meds = append(meds, m.Median)
	}
	if len(meds) < MinRuns {
		return Line{}, false
	}
	fam := Classify(k.id, k.metric)
	lo, hi := slices.Min(meds), slices.Max(meds)
	tol := math.Min(Cap, math.Max(fam.Floor, 4*cv(meds)))
	tol = math.Round(tol*1000) / 1000
	l := Line{ID: k.id, Metric: k.metric, Unit: unit, Lo: lo, Hi: hi, Runs: len(meds), Tol: tol, Family: fam.Name}
	if dir == report.Higher {
		l.Op, l.Limit = ">=", lo*(1-tol)
	} else {
		l.Op, l.Limit = "<=", hi*(1+tol)
	}
	return l, true
}

// find is the last result of id in rep (a later entry is a rerun).
func find(rep *report.Report, id string) (report.Result, bool) {
	for i := len(rep.Results) - 1; i >= 0; i-- {
		if rep.Results[i].ID() == id {
			return rep.Results[i], true
		}
	}
	return report.Result{}, false
}

// cv is the sample standard deviation over the mean.
func cv(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	if mean == 0 || len(xs) < 2 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / math.Abs(mean)
}

func familyRank(name string) int {
	for i, f := range families {
		if f.Name == name {
			return i
		}
	}
	return 99
}

// scopeOf binds the baseline to one machine (every run on the same GPU
// UUIDs) or to a SKU (every GPU of one name).
func scopeOf(runs []*report.Report, names []string) (string, error) {
	uuids := GPUs(runs[0].Environment)
	same := true
	sku := ""
	for i, r := range runs {
		if !slices.Equal(GPUs(r.Environment), uuids) {
			same = false
		}
		for _, g := range r.Environment.GPUs {
			if sku == "" {
				sku = g.Name
			} else if g.Name != sku {
				return "", fmt.Errorf("%s: GPU %q is not the %q of the other runs: a perf baseline holds one machine or one SKU", names[i], g.Name, sku)
			}
		}
	}
	if same && len(uuids) > 0 {
		return "machine " + strings.Join(uuids, ","), nil
	}
	if sku == "" {
		return "", errors.New("the runs record no GPU: a perf baseline is scoped to a machine or a SKU")
	}
	return "sku " + sku, nil
}

// GPUs is env's GPU UUIDs, sorted.
func GPUs(env report.Environment) []string {
	var out []string
	for _, g := range env.GPUs {
		if g.UUID != "" && !slices.Contains(out, g.UUID) {
			out = append(out, g.UUID)
		}
	}
	sort.Strings(out)
	return out
}

// GPUNames is env's GPU names, distinct, in order, joined by "+" ("" for
// none): what a sku scope holds, and what names a card's perf file.
func GPUNames(env report.Environment) string {
	var out []string
	for _, g := range env.GPUs {
		if g.Name != "" && !slices.Contains(out, g.Name) {
			out = append(out, g.Name)
		}
	}
	return strings.Join(out, "+")
}

// ValidScope checks a "# scope:" value is one CheckScope reads: "machine
// GPU-…[,GPU-…]" or "sku NAME". The error is one line.
func ValidScope(scope string) error {
	kind, val, _ := strings.Cut(scope, " ")
	if (kind == "machine" || kind == "sku") && strings.TrimSpace(val) != "" {
		return nil
	}
	return fmt.Errorf("perf baseline: scope %q is neither \"machine GPU-…[,GPU-…]\" nor \"sku NAME\"", scope)
}

// CheckScope refuses to gate a run on GPUs the baseline was not recorded
// on (a machine scope's UUIDs, a SKU scope's name). The error is one line.
func CheckScope(f *File, env report.Environment) error {
	kind, val, _ := strings.Cut(f.Scope, " ")
	switch kind {
	case "machine":
		got := strings.Join(GPUs(env), ",")
		if got != val {
			return fmt.Errorf("perf baseline scope mismatch: recorded on GPUs %s; this run is on %s (record a perf baseline for this machine, or pass --allow-stack-mismatch to gate anyway)", val, orUnknown(got))
		}
	case "sku":
		for _, g := range env.GPUs {
			if g.Name != val {
				return fmt.Errorf("perf baseline scope mismatch: recorded for %s; this run has a %s (pass --allow-stack-mismatch to gate anyway)", val, orUnknown(g.Name))
			}
		}
	default:
		return fmt.Errorf("perf baseline: scope %q is neither \"machine GPU-…\" nor \"sku NAME\"", f.Scope)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
