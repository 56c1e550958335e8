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
	fixture.CheckHelp(t, run, "v", "json", "metric-threshold", "alpha", "expectations")
}

// Issue 49 S3: a new run whose record lies (a passing case recorded as a
// crash, its verdict "expected") is a regression, exit 1, whatever the
// record says. p2pcompare already caught it by comparing outcomes (the
// review saw it hold); this keeps it so now that both sides are re-judged
// (expect.Recheck) first. Run folders are taken as their results.json (U13).
func TestCompareRejudgesARecordedLie(t *testing.T) {
	lie := filepath.Dir(fixture.Planted(t, "", fixture.CrashMarkedExpected(t)))
	var so, se bytes.Buffer
	if rc := run([]string{"--expectations=none", filepath.Dir(fixture.Path), lie}, &so, &se); rc != 1 || !strings.HasPrefix(so.String(), "p2pcompare: REGRESSED") || !strings.Contains(so.String(), fixture.After) {
		t.Errorf("exit %d:\n%s%s", rc, so.String(), se.String())
	}
}
