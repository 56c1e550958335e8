package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/report"
)

// Issue 49 U13: --help gives every flag's meaning and the exit statuses
// (it was one usage line), a bad flag is named with two dashes.
func TestHelpSaysFlagsAndExitStatus(t *testing.T) {
	fixture.CheckHelp(t, run, "expectations", "out", "allow-stack-mismatch")
}

// Issue 49 U13: a run's folder means its results.json (it was "is not a
// regular file (d---------)"), as p2pfleet already took a node's folder.
func TestRunFolderMeansItsResults(t *testing.T) {
	var so, se bytes.Buffer
	dir := filepath.Dir(fixture.Path)
	if rc := run([]string{"--out=" + t.TempDir(), dir}, &so, &se); rc != 0 || !strings.Contains(so.String(), "p2patomics: PASS — 14 cases") {
		t.Errorf("p2preport %s: exit %d\n%s%s", dir, rc, so.String(), se.String())
	}
}

// Issue 49 U22: a replay says what the live run said where the record
// holds it: the verdict line and junit.xml's gate property name the
// baseline the run was gated on (summary.gate), not "as recorded in
// results.json"; the verdict line is the live one, word for word.
func TestReplayNamesTheRecordedGate(t *testing.T) {
	rep, err := report.Read(fixture.Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var so, se bytes.Buffer
	if rc := run([]string{"--out=" + dir, fixture.Path}, &so, &se); rc != 0 {
		t.Fatalf("exit %d: %s", rc, se.String())
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	if last := lines[len(lines)-1]; last != rep.Summary.Line {
		t.Errorf("replayed line %q, the live run's %q", last, rep.Summary.Line)
	}
	j, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if want := `<property name="gate" value="` + rep.Summary.Gate + `">`; !strings.Contains(string(j), want) {
		t.Errorf("junit.xml lacks %s", want)
	}
}
