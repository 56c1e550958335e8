package suite

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// plantFake registers a sleep case whose id the test chooses, the way the
// catalogue registers its own.
func plantFake(t *testing.T) {
	old := planters
	t.Cleanup(func() { planters = old })
	Planter(PlantSleep, func(o *Options, backend, kind string) *harness.Case {
		id := backend + "." + kind + ".planted.nap"
		if o.Ranks != 2 {
			id += ".r" + string(rune('0'+o.Ranks))
		}
		return &harness.Case{ID: id, Case: report.Case{Backend: backend, Kind: kind, Ranks: o.Ranks}, Labels: []string{backend, kind, "canary", "manual"}, Expected: report.Pass}
	})
}

// A planted case is planned only where its variable asks for it, on the
// backend's first kind, with the id its planter gives it.
func TestPlantedCasesComeFromTheCatalogue(t *testing.T) {
	plantFake(t)
	o := &Options{Backend: backends.HostName, Ranks: 2, Repeat: 1, Clocks: "off", Out: t.TempDir()}
	r, err := NewRun(o, "", hostCatalogue)
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.Plan.IDs(); slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(id, "planted") }) {
		t.Errorf("planted without its variable: %v", ids)
	}
	t.Setenv(plantEnv[PlantSleep], "1")
	r, err = NewRun(o, "", hostCatalogue)
	if err != nil {
		t.Fatal(err)
	}
	first := "host." + harness.Matrix[backends.HostName][0] + ".planted.nap"
	var got []string
	for _, id := range r.Plan.IDs() {
		if strings.Contains(id, "planted") {
			got = append(got, id)
		}
	}
	if len(got) != 1 || got[0] != first {
		t.Errorf("planted cases %v, want [%s] (first kind only)", got, first)
	}
}

// The SIGTERM canary's child runs the sleep case the catalogue planted,
// named by the id the planter gives for the child's options (its rank
// count included), with the sleep variable and no other P2PAT_ setting.
func TestSigtermChildRunsThePlantedCase(t *testing.T) {
	plantFake(t)
	t.Setenv("P2PAT_ALLOC", "vmm")
	r := &selfChecks{opts: &Options{Backend: "auto", Alloc: "memfd", Ranks: 3}}
	cmd, err := r.sleepChild(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := "--case=host." + harness.Matrix[backends.HostName][0] + ".planted.nap.r3"
	if !slices.Contains(cmd.Args, want) || !slices.Contains(cmd.Args, "--ranks=3") || !slices.Contains(cmd.Args, "--backend=host") {
		t.Errorf("child args %q, want %s, --ranks=3, --backend=host", cmd.Args, want)
	}
	var p2p []string
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "P2PAT_") {
			p2p = append(p2p, kv)
		}
	}
	// Issue 52: the child skips the own Go tests this run already passed
	// (named by this process's pid, so only its own child skips them).
	// Planted: the child without the setting runs them again (1.2 s).
	skip := "P2PAT_INTERNAL_OWN_TESTS_PASSED=" + strconv.Itoa(os.Getpid())
	if len(p2p) != 2 || p2p[0] != plantEnv[PlantSleep]+"=1" || p2p[1] != skip {
		t.Errorf("child P2PAT_ environment %v, want only %s=1 and %s", p2p, plantEnv[PlantSleep], skip)
	}
	planters[PlantSleep] = nil
	if _, err := r.sleepChild(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no sleep case") {
		t.Errorf("no planter: %v", err)
	}
}
