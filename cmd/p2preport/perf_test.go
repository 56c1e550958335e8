package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// TestPerfGateHalvedCopyEngine: the committed 1×H200 run judged against
// the committed baseline (with its perf.txt) passes; the same run with
// every copy-engine metric halved (a driver that issues every copy twice)
// is FAIL with perf-regression, exit 1, the verdict line naming the
// metric old → new with the percentage.
func TestPerfGateHalvedCopyEngine(t *testing.T) {
	const exps = "../../expectations/nvidia-sm_90-580-x1"
	src := "../../testdata/runs/h200x1-580.159.04/results.json.gz" // gzipped from results/ for the tests
	for _, halve := range []bool{false, true} {
		rep, err := report.Read(src)
		if err != nil {
			t.Fatal(err)
		}
		if halve {
			for i, r := range rep.Results {
				for name, m := range r.Metrics {
					if strings.HasPrefix(name, "bw_ce_") {
						m.Median, m.Min, m.Max = m.Median/2, m.Min/2, m.Max/2
						for j := range m.Samples {
							m.Samples[j] /= 2
						}
						rep.Results[i].Metrics[name] = m
					}
				}
			}
		}
		dir := t.TempDir()
		in := filepath.Join(dir, "results.json")
		if err := rep.Write(in); err != nil {
			t.Fatal(err)
		}
		var so, se bytes.Buffer
		rc := run([]string{"--expectations=" + exps, in}, &so, &se)
		lines := strings.Split(strings.TrimSpace(so.String()), "\n")
		last := lines[len(lines)-1]
		if !halve {
			if rc != 0 || !strings.Contains(last, "PASS") || !strings.Contains(last, "perf: 69 of 69 in band") {
				t.Errorf("healthy: exit %d, last line %q (stderr %s)", rc, last, se.String())
			}
			continue
		}
		if rc != 1 || !strings.Contains(last, "FAIL — 15 perf regressions") || !strings.Contains(last, "cuda.ipc.perf.copy_ce_read.r0r1 bw_ce_read_gbps 2033 → 1036 GB/s (-49.0%") {
			t.Errorf("halved: exit %d, last line %q (stderr %s)", rc, last, se.String())
		}
	}
}
