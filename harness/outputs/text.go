package outputs

import (
	"fmt"
	"io"
	"sort"

	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

// PrintMatrices prints every per-pair metric as a matrix in the layout of
// CUDA's p2pBandwidthLatencyTest: rows are the initiating rank, columns
// the peer, one matrix per metric and case family.
func PrintMatrices(w io.Writer, results []report.Result) {
	for _, m := range pairs.Matrices(results) {
		fmt.Fprintf(w, "\n%s: %s (%s, median; D\\D as in p2pBandwidthLatencyTest: rows the initiating rank, columns its peer)\n   D\\D", m.Family, m.Metric, m.Unit)
		for j := 0; j < m.Size; j++ {
			fmt.Fprintf(w, "%8d", j)
		}
		fmt.Fprintln(w)
		for i := 0; i < m.Size; i++ {
			fmt.Fprintf(w, "%6d ", i)
			for j := 0; j < m.Size; j++ {
				if c, ok := m.Cells[[2]int{i, j}]; ok {
					fmt.Fprintf(w, "%8.2f", c.Metric.Median)
				} else {
					fmt.Fprintf(w, "%8s", "n/a")
				}
			}
			fmt.Fprintln(w)
		}
	}
}

// printTiming says what the worlds cost to start, per size, and the wall
// clock of the whole run.
func printTiming(w io.Writer, t *report.Timing) {
	by := map[string][]float64{}
	var keys []string
	for _, s := range t.Worlds {
		k := fmt.Sprintf("%s x%d", s.Backend, s.Ranks)
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], s.Seconds)
	}
	fmt.Fprintln(w)
	for _, k := range keys {
		v := append([]float64(nil), by[k]...)
		sort.Float64s(v)
		fmt.Fprintf(w, "world start %s: %d starts, median %.3f s, min %.3f s, max %.3f s (first %.3f s)\n",
			k, len(v), v[len(v)/2], v[0], v[len(v)-1], by[k][0])
	}
	fmt.Fprintf(w, "suite wall clock: %.1f s\n", t.SuiteWallS)
}
