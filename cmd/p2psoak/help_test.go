package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
)

// Issue 49 U13: --help gives every flag's meaning and the exit statuses
// (it was one usage line), a bad flag is named with two dashes.
func TestHelpSaysFlagsAndExitStatus(t *testing.T) {
	fixture.CheckHelp(t, run, "specs", "out", "budget", "seed", "runs")
}

// Issue 49 B6: --out is removed and made afresh, so a --out through
// another user's link (a nobody-owned symlink in a sticky folder) is one
// line, exit 2, and the link's target keeps its files.
func TestSoakOutRefusesAForeignLink(t *testing.T) {
	target := t.TempDir()
	keep := filepath.Join(target, "keep")
	os.WriteFile(keep, []byte("x"), 0o644)
	link := fixture.ForeignLink(t, "soak", target)
	specs := filepath.Join(t.TempDir(), "specs.test")
	os.WriteFile(specs, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	var so, se bytes.Buffer
	if rc := run([]string{"--specs=" + specs, "--out=" + filepath.Join(link, "sub"), "--runs=1"}, &so, &se); rc != 2 || !strings.Contains(se.String(), "belongs to uid 65534") {
		t.Errorf("exit %d, stderr %q", rc, se.String())
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
}
