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
	fixture.CheckHelp(t, run, "specs", "out", "backend", "healthy", "jobs", "kernels")
}

// Issue 49 B6: --out through another user's link is one line, exit 2,
// before a run starts or a file is written.
func TestMutateOutRefusesAForeignLink(t *testing.T) {
	target := t.TempDir()
	link := fixture.ForeignLink(t, "mut", target)
	var so, se bytes.Buffer
	if rc := run([]string{"--specs=/bin/true", "--out=" + filepath.Join(link, "sub")}, &so, &se); rc != 2 || !strings.Contains(se.String(), "belongs to uid 65534") {
		t.Errorf("exit %d, stderr %q", rc, se.String())
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
