package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.json")
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName}), Results: []report.Result{
		{Case: report.ParseCase("host.memfd.perf.copy.r0r1", nil), Labels: []string{"pair=0-1"}, Outcome: report.Pass, Expected: report.Pass,
			Metrics: map[string]report.Metric{"bw_copy_gbps": {Unit: "GB/s", Median: 12.5, Min: 12, Max: 13, N: 3, Method: "wall"}}},
	}}
	if err := rep.Write(in); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	out := filepath.Join(dir, "svg")
	if rc := run([]string{in, "--out", out}, &so, &se); rc != 0 {
		t.Fatalf("rc %d: %s", rc, se.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "host.memfd.perf.copy.bw_copy_gbps.svg"))
	if err != nil || !strings.Contains(string(b), "12.5") {
		t.Fatalf("svg: %v %s", err, b)
	}
	if !strings.Contains(so.String(), "index.html") {
		t.Errorf("stdout: %s", so.String())
	}
	for _, args := range [][]string{{}, {in}, {"--out", out}, {"--bogus", in}, {"--out", out, in, in}, {"--out", out, filepath.Join(dir, "nope.json")}} {
		so.Reset()
		se.Reset()
		if rc := run(args, &so, &se); rc != 2 {
			t.Errorf("%v: rc %d", args, rc)
		}
		if n := strings.Count(se.String(), "\n"); n != 1 {
			t.Errorf("%v: stderr is %d lines: %q", args, n, se.String())
		}
	}
}

// Issue 49 U22: the verdict line names the run's own case folders (beside
// its results.json, where they exist), not folders under --out, where only
// pictures go; the pictures are no gate, so the exit status stays 0
// (documented: p2preport's is the verdict's).
func TestVerdictNamesFoldersThatExist(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	in := fixture.Planted(t, runDir, fixture.CrashMarkedExpected(t))
	if err := os.MkdirAll(filepath.Join(runDir, "cases", fixture.After), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hm")
	var so, se bytes.Buffer
	rc := run([]string{"--out=" + out, in}, &so, &se)
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	last := lines[len(lines)-1]
	if rc != 0 || !strings.HasPrefix(last, "p2patomics: FAIL") || !strings.Contains(last, filepath.Join(runDir, "cases", fixture.After)) || strings.Contains(last, out) {
		t.Errorf("exit %d, last line %q; want FAIL naming %s", rc, last, filepath.Join(runDir, "cases", fixture.After))
	}
}
