package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// brokenFleet is three healthy nodes and one without a result: the args.
func brokenFleet(t *testing.T) []string {
	t.Helper()
	b := filepath.Join(t.TempDir(), "broken")
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "broken-exit2", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "results.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, n := range []string{"indep-1", "indep-2", "indep-3"} {
		args = append(args, filepath.Join("testdata", n))
	}
	return append(args, b)
}

// TestDrainReadsTheRows: bare --drain is Slurm's line as ever, and
// --drain=<name> prints that row's line, so a planted row (a new engine)
// is offered with no edit to main.go or fleet.go; an unknown engine is a
// one-line usage error.
func TestDrainReadsTheRows(t *testing.T) {
	nodes := brokenFleet(t)
	_, out, _ := runCLI(t, append([]string{"--drain"}, nodes...)...)
	if want := "scontrol update nodename=broken state=drain reason=\"p2patomics: "; strings.Count(out, want) != 1 {
		t.Errorf("bare --drain: want one line starting %q:\n%s", want, out)
	}
	_, out, _ = runCLI(t, append([]string{"--drain=kubernetes"}, nodes...)...)
	if want := "kubectl cordon broken && kubectl annotate --overwrite node broken p2patomics/reason=\"p2patomics: "; strings.Count(out, want) != 1 || strings.Contains(out, "scontrol") {
		t.Errorf("--drain=kubernetes: want one line starting %q:\n%s", want, out)
	}
	saved := Engines
	t.Cleanup(func() { Engines = saved })
	Engines = append(slices.Clone(saved), Engine{Name: "flux", Folder: "flux", Drain: "flux resource drain %[1]s \"p2patomics: %[2]s\""})
	_, out, _ = runCLI(t, append([]string{"--drain=flux"}, nodes...)...)
	if strings.Count(out, "flux resource drain broken \"p2patomics: ") != 1 {
		t.Errorf("a planted row is not offered by --drain=flux:\n%s", out)
	}
	Engines = saved
	code, _, errOut := runCLI(t, append([]string{"--drain=flux"}, nodes...)...)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, `unknown engine "flux"`) {
		t.Errorf("--drain=flux without its row: exit %d, stderr %q; want 2 and one line", code, errOut)
	}
}
