package specs

import (
	"flag"
	"slices"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
)

// everyCase is the catalogue of every backend and kind in a world of 4 ranks
// (so rank-count variants appear). The suite's planted cases (suite.Planter)
// are built by the same add, out of this walk's reach.
func everyCase(t *testing.T) []*harness.Case {
	t.Helper()
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 4
	var all []*harness.Case
	for be, kinds := range harness.Matrix {
		for _, k := range kinds {
			all = append(all, Catalogue(&o, be, k)...)
		}
	}
	if len(all) == 0 {
		t.Fatal("the catalogue is empty")
	}
	return all
}

// unset names the fields of the Spec behind c that a registration left at
// zero though every case needs them: Spec's named fields let a literal omit
// Ranks, Timeout or Run and still compile. add copies them into the case.
func unset(c *harness.Case) []string {
	var bad []string
	if c.Ranks <= 0 {
		bad = append(bad, "Ranks")
	}
	if c.Timeout <= 0 {
		bad = append(bad, "Timeout")
	}
	if c.Run == nil {
		bad = append(bad, "Run")
	}
	return bad
}

// TestEverySpecIsComplete: every registered Spec sets Ranks, Timeout and
// Run. Planted: a Spec without them must be reported, each by name.
func TestEverySpecIsComplete(t *testing.T) {
	for _, c := range everyCase(t) {
		if bad := unset(c); len(bad) > 0 {
			t.Errorf("%s: its Spec sets no %v", c.ID, bad)
		}
	}
	b := &builder{o: &suite.Options{}, backend: backends.HostName, kind: string(backends.Memfd)}
	planted := b.add(Spec{Name: "counter", Variant: "x", Expected: report.Pass})
	if bad := unset(planted); !slices.Equal(bad, []string{"Ranks", "Timeout", "Run"}) {
		t.Errorf("a planted Spec with no Ranks, Timeout or Run: got %v", bad)
	}
}

// TestCanariesAreMarked: exactly the canary spec's cases carry
// Case.Canary, the runner's exemption from setup streaks
// (harness.TestSetupStreakSparesCanaries); a canary that lost it would be
// judged from a streak without dying as it exists to. Planted: a canary
// case without the field must be reported.
func TestCanariesAreMarked(t *testing.T) {
	marked := func(c *harness.Case) bool { return c.Canary == (c.Identity().Spec == canarySpec) }
	n := 0
	for _, c := range everyCase(t) {
		if c.Canary {
			n++
		}
		if !marked(c) {
			t.Errorf("%s: spec %q, Canary=%v", c.ID, c.Identity().Spec, c.Canary)
		}
	}
	if n == 0 {
		t.Error("no catalogue case is a canary")
	}
	b := &builder{o: &suite.Options{}, backend: backends.HostName, kind: string(backends.Memfd)}
	planted := b.add(Spec{Name: canarySpec, Variant: "abort", Ranks: 2, Expected: report.Crash})
	planted.Canary = false
	if marked(planted) {
		t.Error("a canary case without Case.Canary was not reported")
	}
}

// hostCases is the host backend's catalogue under the default flags (every
// flag at its registered default), in catalogue order.
func hostCases(t *testing.T) []*harness.Case {
	t.Helper()
	var o suite.Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return Catalogue(&o, backends.HostName, string(backends.Memfd))
}
