package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// halvedNode is a node folder named name holding a copy of the run at p
// with every copy-engine metric halved (every copy issued twice).
func halvedNode(t *testing.T, p, name string) string {
	t.Helper()
	rep, err := report.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Results {
		for k, m := range r.Metrics {
			if strings.HasPrefix(k, "bw_ce_") {
				m.Median, m.Min, m.Max = m.Median/2, m.Min/2, m.Max/2
				m.Samples = append([]float64(nil), m.Samples...)
				for j := range m.Samples {
					m.Samples[j] /= 2
				}
				rep.Results[i].Metrics[k] = m
			}
		}
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := rep.Write(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Issue 36 item 2: three healthy committed 1×H200 runs (three H200s) pass
// p2pfleet --gate, by the outlier rule on the perf gate's metrics and by
// the committed perf.txt's bands; one node's copy-engine metrics halved
// fails it both ways, naming that node. Before (flat 10 %, every metric
// of a GPU backend) the healthy three failed with 14 bad-side outliers.
func TestFleetGateOnCommittedRuns(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "runs", "h200x1-580.159.04")
	healthy := []string{filepath.Join(root, "results.json.gz"), filepath.Join(root, "run-54c2e67"), filepath.Join(root, "run-8e5cbb8")}
	exps := "--expectations=" + filepath.Join("..", "..", "expectations", "nvidia-sm_90-580-x1")
	halved := append(healthy[:2:2], halvedNode(t, filepath.Join(healthy[2], "results.json.gz"), "slow-node"))
	for _, c := range []struct {
		name  string
		args  []string
		want  int
		needs string
	}{
		{"healthy, outliers", append([]string{"--gate"}, healthy...), 0, "fleet: PASS"},
		{"healthy, perf.txt", append([]string{"--gate", exps}, healthy...), 0, "fleet: PASS"},
		{"halved CE, outliers", append([]string{"--gate"}, halved...), 1, "bw_ce_write_gbps: node slow-node low"},
		{"halved CE, perf.txt", append([]string{"--gate", exps}, halved...), 1, "node slow-node: perf-regression: "},
	} {
		var so, se bytes.Buffer
		rc := run(c.args, &so, &se)
		if rc != c.want || !strings.Contains(so.String(), c.needs) {
			t.Errorf("%s: exit %d, want %d and %q\n%s%s", c.name, rc, c.want, c.needs, tail(so.String()), se.String())
		}
	}
}

func tail(s string) string {
	if i := strings.Index(s, "fleet: "); i >= 0 {
		return s[i:min(len(s), i+1500)]
	}
	return s
}
