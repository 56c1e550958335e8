package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// report.html beside results.json, the one verdict on stdout's last line
// and in the page, exit status the verdict's; usage errors exit 2, an
// unwritable folder 3, each one line.
func TestRunHTML(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.json")
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName}), Results: []report.Result{
		{Case: report.ParseCase("host.memfd.perf.copy.r0r1", nil), Labels: []string{"pair=0-1"}, Outcome: report.Pass, Expected: report.Pass,
			Metrics: map[string]report.Metric{"bw_copy_gbps": {Unit: "GB/s", Median: 12.5, Min: 12, Max: 13, N: 3, Method: "wall"}}},
		{Case: report.ParseCase("host.memfd.counter.add", nil), Outcome: report.Fail, Expected: report.Pass},
	}}
	if err := rep.Write(in); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if rc := run([]string{in}, &so, &se); rc != 1 {
		t.Fatalf("a run with an unexpected fail: rc %d, want 1: %s", rc, se.String())
	}
	line := "p2patomics: FAIL — 1 regression: host.memfd.counter.add pass → fail (" + filepath.Join(dir, "cases", "host.memfd.counter.add") + "/)"
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(b), line) {
		t.Fatalf("report.html beside results.json lacks the verdict line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	if lines[0] != filepath.Join(dir, "report.html") || lines[len(lines)-1] != line {
		t.Errorf("stdout %q: want the page's path first and %q last", so.String(), line)
	}
	other := filepath.Join(dir, "elsewhere")
	if rc := run([]string{"--out", other, in}, &so, &se); rc != 1 {
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
	// An unwritable folder: exit 3 (reports not written), one line.
	se.Reset()
	if rc := run([]string{"--out", filepath.Join(in, "sub"), in}, &so, &se); rc != 3 || strings.Count(se.String(), "\n") != 1 {
		t.Errorf("unwritable: rc %d %q", rc, se.String())
	}
}

// committed is the gated 2×H200 run as the tests read it (testdata/runs:
// gzipped from results/, which tests never read).
const committed = "../../testdata/runs/h200x2-580.159.04/results.json.gz"

// The committed gated 2xH200 run re-renders to failures="0" errors="0"
// and exit 0: the gate passed, so every report says so.
func TestRerenderCommittedRun(t *testing.T) {
	out := t.TempDir()
	var so, se bytes.Buffer
	if code := run([]string{"--out=" + out, committed}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s%s", code, so.String(), se.String())
	}
	b, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if !bytes.Contains(b, []byte(`<testsuites name="p2patomics" tests="332" failures="0" errors="0"`)) {
		t.Errorf("junit.xml of the committed run: %s", b[:min(len(b), 300)])
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "p2patomics: PASS — 332 cases, 0 unexpected") {
		t.Errorf("last line %q", last)
	}
	for _, f := range []string{"summary.txt", "results.csv", "failures.csv"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// A planted regression in the same run: exit 1, a JUnit <error>, and the
// last line names it and its folder.
func TestRerenderPlantedRegression(t *testing.T) {
	b, err := report.ReadRaw(committed)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	r0 := m["results"].([]any)[0].(map[string]any)
	r0["outcome"], r0["verdict"] = "crash", "regression"
	id := r0["id"].(string)
	dir := t.TempDir()
	b, _ = json.Marshal(m)
	p := filepath.Join(dir, "results.json")
	os.WriteFile(p, b, 0o644)
	var so, se bytes.Buffer
	if code := run([]string{p}, &so, &se); code != 1 {
		t.Fatalf("planted regression: exit %d", code)
	}
	j, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if !bytes.Contains(j, []byte(`failures="0" errors="1"`)) {
		t.Errorf("planted crash is not one JUnit error")
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	want := "p2patomics: FAIL — 1 regression: " + id + " pass → crash (" + filepath.Join(dir, "cases", id) + "/)"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}

func TestUsage(t *testing.T) {
	var so, se bytes.Buffer
	if code := run([]string{}, &so, &se); code != 2 || strings.Count(se.String(), "\n") != 1 {
		t.Errorf("no argument: exit %d, %q", code, se.String())
	}
	se.Reset()
	if code := run([]string{"/nonexistent/results.json"}, &so, &se); code != 2 || strings.Count(se.String(), "\n") != 1 {
		t.Errorf("missing file: exit %d, %q", code, se.String())
	}
}
