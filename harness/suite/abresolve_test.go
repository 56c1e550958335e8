package suite

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// TestResolveABLibrary: a library SPEC (the device test's stand-in
// driver, built with cc) resolves to its file for the run's backend, B's
// one-rank probe is told that file in its hello (A's is not), and a B the
// rank refuses (it mapped another file than the one named: binding's
// /proc/self/maps check) is a one-line usage error naming stack B. The
// probe is faked: this machine has no CUDA driver. Skipped without cc.
func TestResolveABLibrary(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libcuda.so.1")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, "../../scripts/ab-shim/shim.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	old := probeFunc
	t.Cleanup(func() { probeFunc = old })
	var told []string
	refuse := ""
	probeFunc = func(be string, s wire.Settings) BackendProbe {
		told = append(told, s.Library)
		if s.Library != "" && refuse != "" {
			return BackendProbe{Probe: report.Probe{Backend: be, Why: refuse}}
		}
		return BackendProbe{Probe: report.Probe{Backend: be, Loaded: true}}
	}
	o := &Options{Backend: "cuda", AB: dir, ABBlocks: 3, Repeat: 1, Pairs: "rounds"}
	if err := o.validateAB(); err != nil {
		t.Fatal(err)
	}
	if err := o.resolveAB([]string{"cuda"}); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != lib || o.settingsB("cuda").Library != lib || o.Settings().Library != "" || o.Pairs != "alone" {
		t.Fatalf("B's probe was told %q, B's settings %q, A's %q, pairs %s", told, o.settingsB("cuda").Library, o.Settings().Library, o.Pairs)
	}
	refuse = lib + " (" + lib + ") was named but the process mapped /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05: the library named is not the one the process mapped"
	err = o.resolveAB([]string{"cuda"})
	var ue *UsageError
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "stack B ("+lib+") does not load on backend cuda: "+refuse) {
		t.Fatalf("a B that mapped another library: %v", err)
	}
}
