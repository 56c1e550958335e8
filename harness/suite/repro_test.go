package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/backends"
)

// Issue 49 U5: every printed repro (the inline `repro:` line, results.json's
// repro, summary.txt, junit's system-out, report.html) carries the gate the
// case was judged by, as repro.sh did: at 6615a8b only repro.sh had
// --expectations, so an unexpected pass re-run as printed read PASS.
func TestReproCarriesTheGate(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	os.Mkdir("bl", 0o755)
	os.WriteFile(filepath.Join("bl", "cases.txt"), []byte("host.memfd.counter.add\n"), 0o644)
	o := &Options{Seed: 1, Expectations: "bl", AllowNewFlakes: true, AllowStackMismatch: true}
	got := Repro(o, backends.HostName, "memfd", "host.memfd.counter.add", 2)
	want := " --expectations=" + filepath.Join(dir, "bl") + " --allow-stack-mismatch --allow-new-flakes"
	if !strings.HasSuffix(got, want) {
		t.Errorf("gated repro %q, want it to end %q", got, want)
	}
	// The evidence's repro.sh and make form read the same gate (reproGate).
	p := &Plan{Opts: o}
	g, err := gateSet(o)
	if err != nil || g == nil {
		t.Fatalf("gate of an empty folder: %v", err)
	}
	p.gate = g
	if !strings.HasSuffix(got, " "+p.reproGate()) {
		t.Errorf("repro %q and repro.sh's gate %q differ", got, p.reproGate())
	}
	// Ungated, and recording a baseline (not judged by it): no gate.
	for _, o := range []*Options{{Seed: 1}, {Seed: 1, Expectations: "bl", UpdateExpectations: true}} {
		if r := Repro(o, backends.HostName, "memfd", "host.memfd.counter.add", 2); strings.Contains(r, "--expectations") {
			t.Errorf("%+v: repro %q names a gate", o, r)
		}
	}
}
