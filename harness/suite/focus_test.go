package suite

import (
	"flag"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness/backends"
)

// The plan's focus filter selects exactly the specs Ginkgo itself runs
// under --focus and --skip, for the tree specs/suite_test.go builds
// (SuiteDescription, TopContainer, a container per group, an It per case):
// a real Ginkgo run over such a tree, its It bodies recording what ran,
// against focusFilter. The focus names the description and both
// containers, so a text built without one of them selects nothing.
func TestFocusFilterIsGinkgos(t *testing.T) {
	if f := flag.Lookup("test.count"); f != nil && f.Value.String() != "1" {
		// Ginkgo refuses go test -count=N (its RunSpecs exits): this
		// package's other tests keep working under it.
		t.Skip("Ginkgo's RunSpecs runs only under -count=1 (make unit's)")
	}
	plan := map[string][]string{
		"host.memfd": {"host.memfd.counter.add", "host.memfd.counter.sub", "host.memfd.canary.hang"},
		"host.suite": {"host.suite.canary.sigterm"},
		"cuda.vmm":   {"cuda.vmm.counter.add"},
	}
	focus := []string{`^p2patomics p2patomics host\.memfd host\.memfd\.counter`, `suite\.canary`}
	skip := []string{`sub$`}
	var mu sync.Mutex
	ran := map[string]bool{}
	ginkgo.Describe(TopContainer, func() {
		for _, g := range slices.Sorted(maps.Keys(plan)) {
			ginkgo.Describe(g, func() {
				for _, id := range plan[g] {
					ginkgo.It(id, func() {
						mu.Lock()
						ran[id] = true
						mu.Unlock()
					})
				}
			})
		}
	})
	cfg, rcfg := types.NewDefaultSuiteConfig(), types.NewDefaultReporterConfig()
	cfg.FocusStrings, cfg.SkipStrings = focus, skip
	rcfg.Succinct, rcfg.SilenceSkips, rcfg.NoColor = true, true, true
	if !ginkgo.RunSpecs(t, SuiteDescription, cfg, rcfg) {
		t.Fatal("the Ginkgo run failed")
	}
	in, err := focusFilter(focus, skip)
	if err != nil {
		t.Fatal(err)
	}
	for g, ids := range plan {
		for _, id := range ids {
			if in(g, id) != ran[id] {
				t.Errorf("%s %s: the plan keeps it %v, Ginkgo ran it %v (spec text %q)", g, id, in(g, id), ran[id], specText(g, id))
			}
		}
	}
	if len(ran) != 2 {
		t.Errorf("Ginkgo ran %v, want the counter.add and the sigterm canary", ran)
	}
}

// Issue 49 §4: a narrowed gated run is judged the same way however it was
// narrowed. At 6615a8b --ginkgo.label-filter=atomics passed while
// --ginkgo.focus/--ginkgo.skip called every baseline case outside the
// focus missing (FAIL). Now a baseline id is in the gate's selection when
// the plan holds it, or, narrowed by focus/skip, when the focus selects
// it (a focused case the catalogue lost is still missing); under a label
// filter only a planned id is. Planted: selects without the focus
// (the old rule) fails the focus rows.
func TestNarrowedGateSelectsLikeThePlan(t *testing.T) {
	o := &Options{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Repeat: 1, Clocks: "off", Out: t.TempDir()}
	for _, c := range []struct {
		focus, skip []string
		labels      string
		selected    map[string]bool
	}{
		{[]string{`counter\.add`}, nil, "", map[string]bool{"host.memfd.counter.add": true, "host.memfd.counter.sub": false, "host.memfd.counter.add_ghost": true}},
		{nil, []string{"sub"}, "", map[string]bool{"host.memfd.counter.add": true, "host.memfd.counter.sub": false, "host.memfd.counter.ghost": true}},
		{nil, nil, "counter", map[string]bool{"host.memfd.counter.add": true, "host.memfd.counter.ghost": false}},
		{nil, nil, "", map[string]bool{"host.memfd.counter.sub": true, "host.memfd.counter.ghost": true, "cuda.vmm.counter.add": false}},
	} {
		o.FocusStrings, o.SkipStrings = c.focus, c.skip
		r, err := NewRun(o, c.labels, hostCatalogue)
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range c.selected {
			if got := r.Plan.selects(id); got != want {
				t.Errorf("focus %v skip %v labels %q: %s selected %v, want %v", c.focus, c.skip, c.labels, id, got, want)
			}
		}
	}
}
