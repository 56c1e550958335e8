// Package pairs is the per-pair model of a run: which ordered pair of
// ranks a case measures (report.Case.Pair, spelt pair=<src>-<dst> in its
// labels), the matrices of a per-pair metric over every pair (Matrices;
// row = the case's first rank, column = its second; which way the data
// moved is Matrix.Flow, in nvbandwidth's "GPU(row) <- GPU(column)" form),
// the report's pair rows (PairRows) and their text table, the matrices in
// nvbandwidth's JSON shape (Export), each case's state as the verdict
// counts it (Classify) and number formatting (Format). The pictures of
// all this are package heatmap's; this package draws nothing.
//
// A matrix collects one metric name over one case family: the case id
// with its pair field left out (pairs.add_u64_relaxed_sys.r0r1 and .r1r0
// are one family; cuda.ipc.perf.copy_ce_write.r0r1 is another from
// cuda.vmm's), or the id itself for a pair case whose id names no pair
// (perf.pingpong_latency_local, pair 0-0). Heatmap files are named
// <family>.<metric>.svg.
package pairs

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// Cell is one measured pair.
type Cell struct {
	Src, Dst int
	Metric   report.Metric
	Case     string // case id
	Outcome  report.Outcome
	State    State
}

// Matrix is one heatmap.
type Matrix struct {
	Metric string // metric name
	Family string // case family (see package doc)
	Unit   string
	// Better is the metric's declared direction (report.Metric.Direction,
	// of the first cell found: one metric name is one declaration).
	Better report.Direction
	Size   int // max(GPU index)+1
	Cells  map[[2]int]Cell
	File   string // file name WriteAll uses: <family>.<metric>.svg
	// Shared: some cell's two ranks ran on one GPU (a run with more ranks
	// than GPUs), so rows and columns are ranks, not GPUs.
	Shared bool
}

// Pair is a result's ordered pair of ranks (report.Case.Pair); ok is
// false for a result that measures no pair.
func Pair(r report.Result) (src, dst int, ok bool) {
	if r.Pair == nil {
		return 0, 0, false
	}
	return r.Pair[0], r.Pair[1], true
}

// pairField is the variant's last field that names the pair (the suite's
// ids spell pair s-d as .r<s>r<d>).
func pairField(r report.Result) string {
	return fmt.Sprintf(".r%dr%d", r.Pair[0], r.Pair[1])
}

// Family is the case id with its pair field left out (see package doc):
// its parts with the variant's .r<s>r<d> removed, the world size kept.
// An id outside the suite's grammar (no spec) is its own family.
func Family(r report.Result) string {
	if r.Spec == "" || r.Pair == nil {
		return r.ID()
	}
	return report.CaseID(r.Backend, r.Kind, r.Spec, strings.TrimSuffix(r.Variant, pairField(r)), r.Case.Ranks)
}

// Spec is the family without backend, kind and world size: a pair
// grid's column (spec and variant without the pair field).
func Spec(r report.Result) string {
	if r.Spec == "" || r.Pair == nil {
		return r.ID()
	}
	return r.Spec + "." + strings.TrimSuffix(r.Variant, pairField(r))
}

// Matrices builds every heatmap the results hold, sorted by file name.
// Results without pair information or metrics are ignored; a later result
// for the same cell replaces an earlier one. Every file is named
// <family>.<metric>.svg, whether the run holds one family or many, so a
// single-family run and the whole suite name a picture alike.
func Matrices(results []report.Result) []*Matrix {
	byKey := map[[2]string]*Matrix{}
	for _, r := range results {
		if len(r.Metrics) == 0 {
			continue
		}
		src, dst, ok := Pair(r)
		if !ok {
			continue
		}
		fam := Family(r)
		for name, m := range r.Metrics {
			k := [2]string{name, fam}
			mx := byKey[k]
			if mx == nil {
				mx = &Matrix{Metric: name, Family: fam, Unit: m.Unit, Better: m.Direction(), Cells: map[[2]int]Cell{}}
				byKey[k] = mx
			}
			mx.Cells[[2]int{src, dst}] = Cell{Src: src, Dst: dst, Metric: m, Case: r.ID(), Outcome: r.Outcome, State: Classify(r)}
			if sharedGPU(r, src, dst) {
				mx.Shared = true
			}
			if n := max(src, dst) + 1; n > mx.Size {
				mx.Size = n
			}
		}
	}
	out := make([]*Matrix, 0, len(byKey))
	for _, mx := range byKey {
		mx.File = Safe(mx.Family) + "." + Safe(mx.Metric) + ".svg"
		out = append(out, mx)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

var unsafeRe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func Safe(s string) string {
	s = unsafeRe.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// Flow says which way a matrix's data moved, in nvbandwidth's words:
// dir is the short form nvbandwidth puts in its descriptions ("GPU(row) ->
// GPU(column)", "GPU(row) <- GPU(column)"), text says it in a sentence.
// Row is always the case's first rank (r<s> in r<s>r<d>, pair=<s>-<d>),
// column its second; what moves depends on the spec: a copy_*_write moves
// data s → d, a copy_*_read moves it d → s (s reads the peer's memory),
// a bidir copy moves both ways at once and exists once per unordered pair.
func (m *Matrix) Flow() (dir, text string) {
	key := strings.ToLower(m.Family + "." + m.Metric)
	switch {
	case strings.Contains(key, "bidir"):
		return "GPU(row) <-> GPU(column)", "both ways at once: the row's GPU writes into the column's while the column's writes into the row's; one case per pair (upper triangle)"
	case strings.Contains(key, "read"):
		return "GPU(row) <- GPU(column)", "data moves from the column's GPU into the row's: the row's GPU reads the column's memory"
	case strings.Contains(key, "write"):
		return "GPU(row) -> GPU(column)", "data moves from the row's GPU into the column's: the row's GPU writes the column's memory"
	case strings.Contains(key, "pingpong") || strings.Contains(key, "latency") || strings.Contains(key, "rtt"):
		return "GPU(row) <-> GPU(column)", "round trip: the row's GPU starts the chain and times it, the column's answers"
	case strings.Contains(key, "pair") || strings.Contains(key, "atomic"):
		return "GPU(row) -> GPU(column)", "the row's GPU runs atomics on the column's memory while the column's GPU runs them locally"
	}
	return "GPU(row) -> GPU(column)", "row: the case's first rank, column: its second"
}

// Bidir reports whether the matrix holds one case per unordered pair.
func (m *Matrix) Bidir() bool {
	d, _ := m.Flow()
	return strings.Contains(d, "<->") && strings.Contains(strings.ToLower(m.Family), "bidir")
}

// ScaleMax is the value the colour scale ends at; it starts at zero, so a
// 2% spread between cells looks like 2%. It is the physical ceiling when
// the cells carry one (the largest, for cells whose bytes cross different
// resources), so a cell's colour says how close it came; else the largest
// value any cell saw (its max, not only its median). A sample above a
// ceiling is a measurement error, and the scale still reaches it.
func (m *Matrix) ScaleMax() float64 {
	hi := 0.0
	for _, c := range m.Cells {
		hi = math.Max(hi, math.Max(c.Metric.Max, c.Metric.Median))
	}
	if v, _ := m.Ceiling(); v > hi {
		return v
	}
	return hi
}

// Ceiling is the largest physical ceiling among the cells and what it is
// (its basis); 0 and "" when no cell has one.
func (m *Matrix) Ceiling() (value float64, basis string) {
	for _, c := range m.Cells {
		if cl := c.Metric.Ceiling; cl != nil && cl.Value > value {
			value, basis = cl.Value, cl.Basis
		}
	}
	return value, basis
}

// Export is the matrices in nvbandwidth's JSON shape, for results.json's
// "matrices" section: the medians, null where no case measured a pair,
// and sum/min/max/average over the measured cells.
func Export(results []report.Result) []report.PairMatrix {
	var out []report.PairMatrix
	for _, m := range Matrices(results) {
		dir, text := m.Flow()
		pm := report.PairMatrix{Name: m.Family, Metric: m.Metric, Unit: m.Unit, Direction: dir,
			Description: fmt.Sprintf("%s (%s), median per cell; %s: %s", m.Metric, m.Unit, dir, text),
			Matrix:      make([][]*float64, m.Size)}
		n := 0
		for i := range m.Size {
			pm.Matrix[i] = make([]*float64, m.Size)
			for j := range m.Size {
				c, ok := m.Cells[[2]int{i, j}]
				if !ok {
					continue
				}
				v := c.Metric.Median
				pm.Matrix[i][j] = &v
				if n == 0 || v < pm.Min {
					pm.Min = v
				}
				if n == 0 || v > pm.Max {
					pm.Max = v
				}
				pm.Sum += v
				n++
			}
		}
		if n > 0 {
			pm.Average = math.Round(pm.Sum/float64(n)*1000) / 1000
			pm.Sum = math.Round(pm.Sum*1000) / 1000
		}
		out = append(out, pm)
	}
	return out
}

// PairRows builds the report's pair matrix: for each backend, kind and
// ordered pair of ranks, the cases that name the pair (see Pair), how many
// are unmet as the verdict counts them (Classify: a not-supported skip or
// a known bug is not), the worst outcome, and every metric the cases
// measured. Rows come sorted by backend, kind, source, destination.
func PairRows(results []report.Result) []report.PairRow {
	type key struct {
		backend, kind string
		src, dst      int
	}
	rows := map[key]*report.PairRow{}
	for _, r := range results {
		s, d, ok := Pair(r)
		if !ok || r.Spec == "" {
			continue
		}
		k := key{r.Backend, r.Kind, s, d}
		row := rows[k]
		if row == nil {
			row = &report.PairRow{Backend: k.backend, Kind: k.kind, Src: s, Dst: d, Worst: report.Pass}
			rows[k] = row
		}
		row.Cases++
		if sharedGPU(r, s, d) {
			row.SharedGPU = true
		}
		if Classify(r) == Unmet {
			row.Unmet++
		}
		if r.Outcome.Severity() > row.Worst.Severity() {
			row.Worst = r.Outcome
		}
		for name, m := range r.Metrics {
			if row.Metrics == nil {
				row.Metrics = map[string]report.Metric{}
			}
			row.Metrics[name] = m
		}
	}
	out := make([]report.PairRow, 0, len(rows))
	for _, row := range rows {
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Backend != b.Backend {
			return a.Backend < b.Backend
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Src != b.Src {
			return a.Src < b.Src
		}
		return a.Dst < b.Dst
	})
	return out
}

// sharedGPU reports whether a GPU case ran ranks s and d on one device,
// from its rank evidence (the host backend's ranks all report device 0,
// the CPU: not a GPU they share).
func sharedGPU(r report.Result, s, d int) bool {
	if s == d || !backends.IsGPU(r.Backend) {
		return false
	}
	dev := map[int]int{}
	for _, rk := range r.Ranks {
		dev[rk.Rank] = rk.Device
	}
	ds, okS := dev[s]
	dd, okD := dev[d]
	return okS && okD && ds == dd
}
