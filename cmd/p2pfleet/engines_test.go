package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
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

// Issue 49 B7: a node's name is its folder's name, which anyone who can
// write the shared folder picks; the drain lines are for sh. Failing nodes
// named "n1;touch PWNED", "n2$(touch PWNED2)", "-n3" and "n4'x" get no
// drain line (a "#" comment and one stderr line each), a plain name gets
// its line, and the whole output piped to sh (scontrol and kubectl stood
// in by no-ops) creates no file. Before: sh ran touch PWNED and PWNED2.
func TestDrainQuotesNodeNames(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	bad := []string{"n1;touch PWNED", "n2$(touch PWNED2)", "-n3", "n4'x"}
	var nodes []string
	for _, n := range append([]string{"gpu-01.x_y"}, bad...) {
		nodes = append(nodes, filepath.Dir(fixture.Planted(t, filepath.Join(shared, n), fixture.CrashMarkedExpected(t))))
	}
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	for _, tool := range []string{"scontrol", "kubectl"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	for _, engine := range Engines {
		_, out, errOut := runCLI(t, append([]string{"--gate", "--drain=" + engine.Name}, nodes...)...)
		drain := out[strings.LastIndex(out, "\nfleet: FAIL"):]
		var lines, piped []string // the drain lines; what an admin pipes to sh
		for _, l := range strings.Split(drain, "\n") {
			if strings.HasPrefix(l, "scontrol ") || strings.HasPrefix(l, "kubectl ") {
				lines = append(lines, l)
			}
			if strings.HasPrefix(l, strings.Fields(engine.Drain)[0]+" ") || strings.HasPrefix(l, "#") {
				piped = append(piped, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], " gpu-01.x_y ") && !strings.Contains(lines[0], "=gpu-01.x_y ") {
			t.Errorf("%s: want one drain line, for gpu-01.x_y:\n%s", engine.Name, drain)
		}
		if n := strings.Count(drain, "\n# p2pfleet: node "); n != len(bad) {
			t.Errorf("%s: %d refusal comments, want %d:\n%s", engine.Name, n, len(bad), drain)
		}
		if n := strings.Count(errOut, "p2pfleet: --drain: node "); n != len(bad) {
			t.Errorf("%s: stderr has %d refusals, want %d: %q", engine.Name, n, len(bad), errOut)
		}
		sh := exec.Command("sh", "-c", strings.Join(piped, "\n"))
		sh.Dir = work
		sh.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		if b, err := sh.CombinedOutput(); err != nil {
			t.Errorf("%s: sh: %v\n%s", engine.Name, err, b)
		}
		if ents, _ := os.ReadDir(work); len(ents) != 0 {
			t.Errorf("%s: the drain lines piped to sh made %v", engine.Name, ents)
		}
	}
}
