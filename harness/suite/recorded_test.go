package suite

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// Issue 49 S4 and U26: a run that records a baseline says so on its
// verdict line (stdout's last line, results.json's summary.line), and a
// forced update says it was forced and what it blessed. At 6615a8b
// P2PAT_UPDATE_EXPECTATIONS=1 P2PAT_FORCE=1 blessed a regression under a
// plain "PASS — 1 case, 0 unexpected (no baseline …)", and recording a new
// baseline ended on the same line as any ungated run.
func TestRecordedBaselineIsOnTheVerdictLine(t *testing.T) {
	const id = "host.memfd.counter.add"
	mk := func(o report.Outcome) *report.Report {
		res := []report.Result{{Case: report.ParseCase(id, nil), Outcome: o, Expected: report.Pass, Ranks: []report.Rank{}}}
		sum := report.Summarize(res, "", "out")
		return &report.Report{Schema: report.Schema, Environment: environment(&Options{}, nil), Results: res, Summary: &sum}
	}
	// A new baseline: named, not forced.
	fresh := filepath.Join(t.TempDir(), "new")
	rep := mk(report.Pass)
	var out bytes.Buffer
	if err := updateBaseline(&out, fresh, false, rep); err != nil {
		t.Fatal(err)
	}
	if l := rep.Summary.Line; !strings.HasSuffix(l, "; baseline recorded in "+fresh) || !strings.HasPrefix(l, "p2patomics: PASS — ") {
		t.Errorf("a recorded baseline's line: %q", l)
	}
	// A forced update over a regression: --force and what it blessed.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, expect.CasesFile), []byte("# stack: vendor=host arch="+goarch()+"\n"+id+"\n"), 0o644)
	rep = mk(report.Crash)
	if err := updateBaseline(&out, dir, true, rep); err != nil {
		t.Fatal(err)
	}
	want := "; baseline recorded in " + dir + " with --force: 1 regression blessed (first: " + id + ": pass → crash (regression))"
	if l := rep.Summary.Line; !strings.HasSuffix(l, want) {
		t.Errorf("a forced update's line: %q, want it to end %q", l, want)
	}
	if r := rep.Summary.Recorded; r == nil || !r.Forced || len(r.Blessed) != 1 || r.Dir != dir {
		t.Errorf("summary.baseline_recorded: %+v", r)
	}
	// --force that blessed nothing is still named.
	rep = mk(report.Crash)
	if err := updateBaseline(&out, dir, true, rep); err != nil {
		t.Fatal(err)
	}
	if l := rep.Summary.Line; !strings.HasSuffix(l, " with --force (it blessed no regression)") {
		t.Errorf("a forced update that blessed nothing: %q", l)
	}
}
