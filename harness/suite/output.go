package suite

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
)

// WriteJUnit writes junit.xml from the results (the suite writes it itself,
// so a run cut short by SIGTERM still has one).
func WriteJUnit(path string, results []report.Result) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type tc struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      float64  `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name `xml:"testsuite"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Time     float64  `xml:"time,attr"`
		Cases    []tc     `xml:"testcase"`
	}
	s := suite{Name: "p2patomics"}
	for _, r := range results {
		parts := strings.SplitN(r.ID, ".", 3)
		cls := r.ID
		if len(parts) == 3 {
			cls = parts[0] + "." + parts[1]
		}
		t := tc{Name: r.ID, Classname: cls, Time: r.Duration, SystemOut: fmt.Sprintf("outcome=%s expected=%s %s", shownOutcome(r), r.Expected, r.Detail)}
		switch {
		case !r.Met():
			t.Failure = &failure{Message: fmt.Sprintf("outcome %s, expected %s", r.Outcome, r.Expected), Type: string(r.Outcome), Text: r.Detail}
			s.Failures++
		case r.Outcome == report.Skip:
			t.Skipped = &skipped{Message: r.Detail}
			s.Skipped++
		}
		s.Time += r.Duration
		s.Cases = append(s.Cases, t)
	}
	s.Tests = len(s.Cases)
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// shownOutcome is the outcome as the table and junit system-out show it: a
// pass whose evidence is weak (no mutant killed, docs/LITMUS.md) says so,
// so that it never reads like a pass that proved something.
func shownOutcome(r report.Result) string {
	if r.Outcome == report.Pass && r.Evidence == report.EvidenceWeak {
		return "pass (weak evidence)"
	}
	return string(r.Outcome)
}

// PrintTable writes the readable summary: one line per case, then totals.
func PrintTable(w io.Writer, results []report.Result, events []string) {
	idw := 10
	for _, r := range results {
		idw = max(idw, len(r.ID))
	}
	idw = min(idw, 64)
	fmt.Fprintf(w, "\n%-*s  %-10s %-10s %-9s %s\n", idw, "CASE", "OUTCOME", "EXPECTED", "TIME", "DETAIL")
	counts := map[report.Outcome]int{}
	unmet := 0
	for _, r := range results {
		counts[r.Outcome]++
		mark := " "
		if !r.Met() {
			mark, unmet = "!", unmet+1
		}
		detail := r.Detail
		if len(detail) > 110 {
			detail = detail[:107] + "..."
		}
		if len(r.Metrics) > 0 {
			names := make([]string, 0, len(r.Metrics))
			for n := range r.Metrics {
				names = append(names, n)
			}
			sort.Strings(names)
			var ms []string
			for _, n := range names {
				m := r.Metrics[n]
				ms = append(ms, fmt.Sprintf("%s=%.3g %s", n, m.Median, m.Unit))
			}
			detail = strings.TrimSpace(strings.Join(ms, " ") + " " + detail)
		}
		id := r.ID
		if len(id) > idw {
			id = "…" + id[len(id)-idw+1:]
		}
		fmt.Fprintf(w, "%-*s %s%-10s %-10s %8.3fs %s\n", idw, id, mark, shownOutcome(r), r.Expected, r.Duration, detail)
		if r.Verdict != "" && r.Verdict != report.Expected {
			fmt.Fprintf(w, "%-*s   verdict: %s\n", idw, "", r.Verdict)
		}
		if len(r.KernelLog) > 0 {
			fmt.Fprintf(w, "%-*s   kernel log: %s (+%d more)\n", idw, "", r.KernelLog[0], len(r.KernelLog)-1)
		}
		if !r.Met() && r.Repro != "" {
			fmt.Fprintf(w, "%-*s   repro: %s\n", idw, "", r.Repro)
		}
	}
	var tot []string
	for _, o := range report.Outcomes {
		if counts[o] > 0 {
			tot = append(tot, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	for _, e := range events {
		fmt.Fprintf(w, "world event: %s\n", e)
	}
	fmt.Fprintf(w, "\n%d cases: %s; %d did not meet their expected outcome\n", len(results), strings.Join(tot, ", "), unmet)
}

// PrintMatrices prints every per-pair metric as a matrix in the layout of
// CUDA's p2pBandwidthLatencyTest: rows are the initiating rank, columns
// the peer, one matrix per metric and case family.
func PrintMatrices(w io.Writer, results []report.Result) {
	for _, m := range heatmap.Matrices(results) {
		fmt.Fprintf(w, "\n%s: %s (%s, median)\n   D\\D", m.Family, m.Metric, m.Unit)
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
