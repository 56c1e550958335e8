package pairs

import (
	"fmt"
	"io"
	"sort"

	"p2patomics/harness/report"
)

// WritePairTable prints the pair matrix (report.Pairs) as one table per backend
// and kind: a row per ordered pair of ranks with its case count, misses,
// worst outcome and each metric's median.
func WritePairTable(w io.Writer, rows []report.PairRow) {
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Backend == rows[i].Backend && rows[j].Kind == rows[i].Kind {
			j++
		}
		group := rows[i:j]
		seen := map[string]string{}
		for _, r := range group {
			for n, m := range r.Metrics {
				seen[n] = m.Unit
			}
		}
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\npairs %s.%s: cases naming each ordered pair of ranks; metrics are medians\n", rows[i].Backend, rows[i].Kind)
		fmt.Fprintf(w, "%-7s %5s %5s  %-10s", "SRC>DST", "CASES", "UNMET", "WORST")
		for _, n := range names {
			fmt.Fprintf(w, " %*s", max(12, len(n)), n)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-7s %5s %5s  %-10s", "", "", "", "")
		for _, n := range names {
			fmt.Fprintf(w, " %*s", max(12, len(n)), seen[n])
		}
		fmt.Fprintln(w)
		shared := false
		for _, r := range group {
			fmt.Fprintf(w, "%-7s %5d %5d  %-10s", fmt.Sprintf("%d>%d", r.Src, r.Dst), r.Cases, r.Unmet, r.Worst)
			for _, n := range names {
				if m, ok := r.Metrics[n]; ok {
					fmt.Fprintf(w, " %*.4g", max(12, len(n)), m.Median)
				} else {
					fmt.Fprintf(w, " %*s", max(12, len(n)), "-")
				}
			}
			if r.SharedGPU {
				shared = true
				fmt.Fprint(w, "  shared GPU")
			}
			fmt.Fprintln(w)
		}
		if shared {
			fmt.Fprintln(w, "shared GPU: both ranks on one device; their kernels are time-sliced unless MPS runs, and no link between GPUs carries their copies")
		}
		i = j
	}
}
