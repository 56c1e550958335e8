package outputs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The run loop's packages: the spawner (harness) and the suite that plans,
// runs and judges a selection (harness/suite). The suite is the Ginkgo
// binary built from specs/, not a command under cmd/.
var runLoop = []string{"p2patomics/harness", "p2patomics/harness/suite"}

// TestCommandsNeverImportTheRunLoop: the offline tools under cmd/ read and
// re-render recorded runs through report, expect, the pictures and this
// package; none may link the run loop (docs/ARCHITECTURE.md, "never: cmd →
// harness, suite"), which is why WriteReports and StdoutStyle live here and
// not in harness/suite. It asks go list for every command's dependencies,
// so an import added anywhere below a command is found too.
func TestCommandsNeverImportTheRunLoop(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go list is how this test reads the import graph: %v", err)
	}
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./cmd/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/...: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list ./cmd/... named %d package(s): %q", len(lines), out)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		deps := map[string]bool{}
		for _, d := range f[1:] {
			deps[d] = true
		}
		for _, p := range runLoop {
			if deps[p] {
				t.Errorf("%s imports %s (directly or below): the commands are offline tools over report, expect, outputs and the pictures", f[0], p)
			}
		}
	}
}

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}
