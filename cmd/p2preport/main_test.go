package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.json")
	rep := &report.Report{Schema: report.Schema, Environment: map[string]any{"vendor": "host"}, Results: []report.Result{
		{ID: "host.memfd.perf.copy.r0r1", Labels: []string{"pair=0-1"}, Outcome: report.Pass, Expected: report.Pass,
			Metrics: map[string]report.Metric{"bw_copy_gbps": {Unit: "GB/s", Median: 12.5, Min: 12, Max: 13, N: 3, Method: "wall"}}},
		{ID: "host.memfd.counter.add", Outcome: report.Fail, Expected: report.Pass},
	}}
	if err := rep.Write(in); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if rc := run([]string{in}, &so, &se); rc != 0 {
		t.Fatalf("rc %d: %s", rc, se.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(b), "p2patomics: FAIL — 2 cases, 1 unexpected: host.memfd.counter.add") {
		t.Fatalf("report.html beside results.json: %v", err)
	}
	if want := filepath.Join(dir, "report.html") + "\np2patomics: FAIL — 2 cases, 1 unexpected: host.memfd.counter.add\n"; so.String() != want {
		t.Errorf("stdout %q, want %q", so.String(), want)
	}
	other := filepath.Join(dir, "elsewhere")
	if rc := run([]string{"--out", other, in}, &so, &se); rc != 0 {
		t.Fatalf("--out: rc %d", rc)
	}
	if _, err := os.Stat(filepath.Join(other, "report.html")); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema":1,"results":[{"id":`), 0o644)
	for _, args := range [][]string{{}, {in, in}, {"--bogus", in}, {filepath.Join(dir, "nope.json")}, {bad}} {
		so.Reset()
		se.Reset()
		if rc := run(args, &so, &se); rc != 2 {
			t.Errorf("%v: rc %d", args, rc)
		}
		if n := strings.Count(se.String(), "\n"); n != 1 {
			t.Errorf("%v: stderr is %d lines: %q", args, n, se.String())
		}
	}
	// An unwritable folder: exit 1, one line.
	se.Reset()
	if rc := run([]string{"--out", filepath.Join(in, "sub"), in}, &so, &se); rc != 1 || strings.Count(se.String(), "\n") != 1 {
		t.Errorf("unwritable: rc %d %q", rc, se.String())
	}
}
