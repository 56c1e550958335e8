package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/report"
)

// committed: the 1×H200 runs the census is proven on, as recorded
// (testdata/runs: fixtures gzipped from results/, which tests never read).
const committed = "../../testdata/runs/h200x1-580.159.04/"

// The committed 1×H200 runs before issue 35 absorbed an Xid 31 into passing
// cases: the census must find it (owner_frees once, iriw three times), and
// must pass the same runs once those kernel-log lines are gone.
func TestCensusFindsTheAbsorbedXid(t *testing.T) {
	files, _ := filepath.Glob(committed + "run-*/results.json.gz")
	files = append(files, committed+"results.json.gz")
	if len(files) != 6 {
		t.Fatalf("want the 6 recorded 1×H200 runs, found %d", len(files))
	}
	var out, errb bytes.Buffer
	if rc := run(files, &out, &errb); rc != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", rc, errb.String())
	}
	for _, want := range []string{"cuda.vmm.lifetime.owner_frees 6 1", "cuda.vmm.litmus.iriw_u32_seqcst_sys.r3 6 3", "NVRM: Xid"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("census lacks %q:\n%s", want, tail(out.String()))
		}
	}
}

func TestCensusCleanRunsPass(t *testing.T) {
	clean := stripped(t, committed+"results.json.gz", "")
	var out, errb bytes.Buffer
	if rc := run([]string{clean, clean}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", rc, tail(out.String()), errb.String())
	}
	if !strings.Contains(out.String(), "2 runs × 371 cases, 0 misses") {
		t.Errorf("closing line: %s", tail(out.String()))
	}
}

// A planted miss (one case's outcome fail against pass) and a kernel-log
// line from a pid no rank had are each exit 1, named.
func TestCensusPlantedMisses(t *testing.T) {
	bad := stripped(t, committed+"results.json.gz", "cuda.ipc.fdexchange.pattern")
	var out, errb bytes.Buffer
	if rc := run([]string{bad}, &out, &errb); rc != 1 || !strings.Contains(out.String(), "cuda.ipc.fdexchange.pattern 1 1") {
		t.Fatalf("planted fail: exit %d:\n%s", rc, tail(out.String()))
	}
	clean := stripped(t, committed+"results.json.gz", "")
	kl := filepath.Join(t.TempDir(), "kmsg")
	os.WriteFile(kl, []byte("[  1.0] NVRM: Xid (PCI:0000:00:06): 31, pid=999999, name=other, Ch 00000008\n"), 0o644)
	out.Reset()
	if rc := run([]string{"--kmsg=" + kl, clean}, &out, &errb); rc != 1 || !strings.Contains(out.String(), "pid 999999, no rank of the census") {
		t.Fatalf("foreign pid: exit %d:\n%s", rc, tail(out.String()))
	}
}

// stripped copies a results.json with every kernel-log line removed and, if
// failID is set, that case's verdict made a regression.
func stripped(t *testing.T, path, failID string) string {
	t.Helper()
	b, err := report.ReadRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc["results"].([]any) {
		m := r.(map[string]any)
		delete(m, "kernel_log")
		if m["id"] == failID {
			m["outcome"], m["verdict"], m["detail"] = "fail", "regression", "planted"
		}
	}
	out, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// Issue 38 item 9: --help is the usage on stdout and exit 0 (it was Go's
// flag dump on stderr, exit 2).
func TestHelpExitsZero(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "usage: p2pcensus") || errb.Len() != 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// Issue 49 B2 and S3: a run that is not a finished PASS is a miss
// (interrupted, a killed suite's running checkpoint, the no-plan stub, a
// FAIL on run faults alone, cases that did not run to their end), and a
// recorded verdict its own outcome contradicts (a crash marked expected in
// a pass case) is judged again, never believed: each was "0 misses", exit 0.
func TestCensusMissesRunsThatAreNotAFinishedPass(t *testing.T) {
	const after = "host.memfd.canary.abort.after"
	for name, edit := range map[string]func(map[string]any){
		"interrupted": func(d map[string]any) {
			r := fixture.Result(t, d, after)
			r["outcome"], r["verdict"] = "incomplete", "not-run"
			s := d["summary"].(map[string]any)
			s["interrupted"], s["verdict"], s["exit_status"] = "SIGINT", "INTERRUPTED", 4
		},
		"running checkpoint": func(d map[string]any) {
			d["state"] = "running"
		},
		"no plan": func(d map[string]any) {
			d["state"], d["results"] = "no-plan", []any{}
		},
		"run faults": func(d map[string]any) {
			s := d["summary"].(map[string]any)
			s["run_faults"] = []any{"run health: rank 0 failed the probe after the last case"}
		},
		"not-run case": func(d map[string]any) {
			r := fixture.Result(t, d, after)
			r["outcome"], r["verdict"] = "not-run", "expected-fail"
			r["judged_from"] = map[string]any{"case": "host.memfd.canary.abort", "outcome": "pass"}
		},
		"crash marked expected": func(d map[string]any) {
			fixture.Result(t, d, after)["outcome"] = "crash" // verdict stays "expected"
		},
		"fail marked expected": func(d map[string]any) {
			fixture.Result(t, d, after)["outcome"] = "fail"
		},
		"crash of a rerun marked flake": func(d map[string]any) {
			r := fixture.Result(t, d, after)
			r["outcome"], r["verdict"] = "crash", "flake"
			r["rerun"] = map[string]any{"outcome": "pass", "detail": "", "duration_s": 0.1}
		},
	} {
		var out, errb bytes.Buffer
		rc := run([]string{fixture.Planted(t, "", edit)}, &out, &errb)
		if rc != 1 || strings.Contains(out.String(), " 0 misses") {
			t.Errorf("%s: exit %d, want 1 and a miss:\n%s%s", name, rc, tail(out.String()), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{fixture.Path}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "1 runs × 14 cases, 0 misses") {
		t.Errorf("the fixture as recorded: exit %d:\n%s%s", rc, tail(out.String()), errb.String())
	}
}

// Issue 49 U21: the census speaks plain words (no Go map syntax) and says
// each run's own case count where the runs differ.
func TestCensusPlainWordsAndRealCounts(t *testing.T) {
	short := fixture.Planted(t, "", func(d map[string]any) {
		d["results"] = d["results"].([]any)[:4]
		d["summary"].(map[string]any)["cases"] = 4
	})
	var out, errb bytes.Buffer
	run([]string{fixture.Path, fixture.Path, short}, &out, &errb)
	s := out.String()
	if strings.Contains(s, "map[") || !strings.Contains(s, "run verdicts: 3 PASS") || !strings.Contains(s, "3 runs (14, 14 and 4 cases)") {
		t.Errorf("census words:\n%s%s", tail(s), errb.String())
	}
}

// Issue 49 B6: --out never writes through another user's symlink (a
// nobody-owned census.txt in a sticky folder, pointing at root's file):
// one line, exit 2, the target untouched. Before: root's file held the
// census table.
func TestCensusOutRefusesAForeignLink(t *testing.T) {
	victim := fixture.Victim(t)
	link := fixture.ForeignLink(t, "census.txt", victim)
	var out, errb bytes.Buffer
	if rc := run([]string{"--out=" + link, fixture.Path}, &out, &errb); rc != 2 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "symlink") {
		t.Errorf("exit %d, stderr %q; want 2 and one line", rc, errb.String())
	}
	fixture.Untouched(t, victim)
}
