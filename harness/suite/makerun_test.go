package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 49 U17: `make run` with a usage error wrote out/exit_status=2 beside
// the previous run's PASS results.json: one folder, two verdicts. The
// status goes into out/ only when the suite made a new out/ (a new marker).
// The Makefile's run recipe runs here with a stand-in for bin/specs.test
// (make -o: the real binary is not built).
func TestMakeRunWritesExitStatusOnlyForItsOwnOut(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is what this test runs: %v", err)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644)
	os.Mkdir(filepath.Join(dir, "bin"), 0o755)
	// The stand-in: FAKE_TOUCH=1 makes --out afresh as the suite does (the
	// old one moved aside, a new marker); it exits FAKE_RC.
	fake := `#!/bin/bash
for a in "$@"; do case $a in --out=*) out=${a#--out=};; esac; done
if [ "$FAKE_TOUCH" = 1 ]; then
  rm -rf "$out.prev"; [ -e "$out" ] && mv "$out" "$out.prev"
  mkdir -p "$out" && echo "p2patomics suite pid $$" >"$out/.p2patomics-out"
fi
exit $FAKE_RC
`
	os.WriteFile(filepath.Join(dir, "bin", "specs.test"), []byte(fake), 0o755)
	out := filepath.Join(dir, "out")
	run := func(touch, rc string) string {
		t.Helper()
		cmd := exec.Command("make", "-s", "--no-print-directory", "-C", dir, "-o", "bin/specs.test", "run", "OUT="+out)
		cmd.Env = append(os.Environ(), "FAKE_TOUCH="+touch, "FAKE_RC="+rc)
		b, _ := cmd.CombinedOutput()
		return strings.TrimSpace(string(b))
	}
	// A run that made out/: its status is there.
	if log := run("1", "0"); !strings.HasSuffix(log, "make run: the suite exited 0 (in "+out+"/exit_status; make itself exits 2 for any non-zero status, scripts/run passes it through)") {
		t.Fatalf("a run: %q", log)
	}
	os.WriteFile(filepath.Join(out, "results.json"), []byte(`{"summary":{"verdict":"PASS","exit_status":0}}`), 0o644)
	// A refusal before --out was touched: the previous run's folder stays
	// as it was.
	log := run("0", "2")
	if b, _ := os.ReadFile(filepath.Join(out, "exit_status")); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("a refused run wrote out/exit_status %q beside the previous run's results.json", b)
	}
	if !strings.Contains(log, "make run: the suite exited 2 (not written to "+out+": the suite refused before it touched it;") {
		t.Errorf("a refused run's last line: %q", log)
	}
	if _, err := os.Stat(out + ".prev"); err == nil {
		t.Errorf("a refused run moved out/ aside")
	}
	// No out/ at all and a refusal: none is made.
	os.RemoveAll(out)
	run("0", "2")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run made %s: %v", out, err)
	}
	// A failing run that made out/: 1 recorded.
	run("1", "0")
	run("1", "1")
	if b, _ := os.ReadFile(filepath.Join(out, "exit_status")); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("a FAIL run's exit_status: %q", b)
	}
}

// Issue 49 B5 through scripts/run: it marked OUT as a run before the suite
// ran (touch OUT/.p2patomics-out), so OUT=<a folder of the user's> became
// a run the suite moved aside, and the next run removed. The suite alone
// decides what is a run.
func TestScriptsRunMarksNoFolder(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is what scripts/run runs: %v", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"Makefile", "scripts/run"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), b, 0o755)
	}
	os.Mkdir(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.sum"), nil, 0o644)
	// The stand-in refuses, as the suite refuses a folder that is not a
	// run, touching nothing; it is newer than go.mod, so make build keeps it.
	os.WriteFile(filepath.Join(dir, "bin", "specs.test"), []byte("#!/bin/sh\nexit 2\n"), 0o755)
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "important.txt"), []byte("precious\n"), 0o644)
	cmd := exec.Command(filepath.Join(dir, "scripts", "run"), "--backend=host")
	cmd.Env = append(os.Environ(), "OUT="+proj)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("scripts/run: %v, want the stand-in's exit 2: %s", cmd.ProcessState, out)
	}
	if _, err := os.Stat(filepath.Join(proj, OutMarker)); !os.IsNotExist(err) {
		t.Errorf("scripts/run marked the user's folder as a run: %v", err)
	}
	os.RemoveAll(proj)
	cmd = exec.Command(filepath.Join(dir, "scripts", "run"))
	cmd.Env = append(os.Environ(), "OUT="+proj)
	cmd.Run()
	if _, err := os.Stat(proj); !os.IsNotExist(err) {
		t.Errorf("scripts/run made OUT before the suite ran: %v", err)
	}
}
