package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// committed1x are healthy 1×H200 runs, each on another H200; the first
// three are the old side, the next three the new.
// They are read from testdata/runs (fixtures gzipped from results/,
// which tests never read).
var committed1x = []string{"results.json.gz", "run-54c2e67/results.json.gz", "run-83641a1/results.json.gz",
	"run-8e5cbb8/results.json.gz", "run-a4fbedb/results.json.gz", "run-d20e28f/results.json.gz"}

func committed(t *testing.T, i int) string {
	t.Helper()
	p := filepath.Join("..", "..", "testdata", "runs", "h200x1-580.159.04", committed1x[i])
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("recorded run fixture: %v", err)
	}
	return p
}

// halvedCE is a copy of the run at p with every copy-engine metric's
// samples, median, min and max halved (every copy issued twice).
func halvedCE(t *testing.T, p string) string {
	t.Helper()
	rep, err := report.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Results {
		for name, m := range r.Metrics {
			if strings.HasPrefix(name, "bw_ce_") {
				m.Median, m.Min, m.Max = m.Median/2, m.Min/2, m.Max/2
				m.Samples = append([]float64(nil), m.Samples...)
				for j := range m.Samples {
					m.Samples[j] /= 2
				}
				rep.Results[i].Metrics[name] = m
			}
		}
	}
	out := filepath.Join(t.TempDir(), "results.json")
	if err := rep.Write(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func compare(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var so, se bytes.Buffer
	rc := run(args, &so, &se)
	return rc, so.String() + se.String()
}

// Issue 36 item 2: healthy committed runs judged by bands (the committed
// perf.txt, each pair; or a band from 3 old runs against 3 new ones) are
// no regression; with the copy-engine metrics halved on the new side they
// are. One run a side, the halving is listed but unconfirmed.
func TestBandsOnCommittedRuns(t *testing.T) {
	exps := "--expectations=" + filepath.Join("..", "..", "expectations", "nvidia-sm_90-580-x1")
	for _, pair := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
		o, n := committed(t, pair[0]), committed(t, pair[1])
		if rc, out := compare(t, exps, o, n); rc != 0 || !strings.HasPrefix(out, "p2pcompare: no regression — 0 case regressions, 0 perf regressions (band of ") {
			t.Errorf("healthy %s → %s with perf.txt: rc %d\n%s", o, n, rc, out)
		}
		if rc, out := compare(t, exps, o, halvedCE(t, n)); rc != 1 || !strings.HasPrefix(out, "p2pcompare: REGRESSED — 0 case regressions, 15 perf regressions") {
			t.Errorf("halved CE %s → %s with perf.txt: rc %d\n%s", o, n, rc, firstLines(out))
		}
	}
	olds := strings.Join([]string{committed(t, 0), committed(t, 1), committed(t, 2)}, ",")
	news := []string{committed(t, 3), committed(t, 4), committed(t, 5)}
	if rc, out := compare(t, "--expectations=none", olds, strings.Join(news, ",")); rc != 0 || !strings.Contains(out, "0 perf regressions (band from 3 old runs)") {
		t.Errorf("healthy 3 vs 3: rc %d\n%s", rc, firstLines(out))
	}
	halved := []string{halvedCE(t, news[0]), halvedCE(t, news[1]), halvedCE(t, news[2])}
	if rc, out := compare(t, "--expectations=none", olds, strings.Join(halved, ",")); rc != 1 || !strings.Contains(out, "confirmed by reruns") {
		t.Errorf("halved CE 3 vs 3: rc %d\n%s", rc, firstLines(out))
	}
	if rc, out := compare(t, "--expectations=none", committed(t, 0), halved[0]); rc != 0 || !strings.Contains(out, "metric regressions (unconfirmed: one run a side)") {
		t.Errorf("halved CE one run a side: rc %d, want 0 and unconfirmed\n%s", rc, firstLines(out))
	}
	if rc, out := compare(t, "--expectations=none", committed(t, 0)+","+committed(t, 1), news[0]); rc != 2 {
		t.Errorf("2 old runs: rc %d, want 2 (no rule judges them)\n%s", rc, out)
	}
}

func firstLines(s string) string {
	ls := strings.SplitN(s, "\n", 12)
	return strings.Join(ls[:min(len(ls), 11)], "\n")
}
