package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
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
