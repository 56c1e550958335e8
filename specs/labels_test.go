package specs

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/kernels"
)

// derivedLabel says whether label l follows from case c itself rather than
// being declared (report.Facet): its identity (backend, kind, spec), a
// kernel's facet or litmus shape, or a pair=/needs= form.
func derivedLabel(c *harness.Case, l string, facets map[string]bool) bool {
	if l == c.Backend || l == c.Kind || l == c.Identity().Spec || facets[l] {
		return true
	}
	return strings.HasPrefix(l, report.PairPrefix) || strings.HasPrefix(l, report.NeedsPrefix)
}

// kernelFacets is every kernel's facet and litmus shape label, made once
// for all the cases (per case it was most of this test's time).
func kernelFacets() map[string]bool {
	facets := map[string]bool{}
	for _, k := range kernels.All() {
		for _, f := range []string{string(k.Op), string(k.Type), string(k.Order), string(k.Scope), shapeLabel(k.Op)} {
			facets[f] = true
		}
	}
	return facets
}

// undeclaredLabels lists c's labels that are neither declared (a
// report.ValidLabels.Add) nor derived from c (facets: kernelFacets).
func undeclaredLabels(c *harness.Case, facets map[string]bool) []string {
	var bad []string
	for _, l := range c.Labels {
		if !report.ValidLabels.Has(l) && !derivedLabel(c, l, facets) {
			bad = append(bad, l)
		}
	}
	return bad
}

// TestLabelsAreDeclared: every label of every catalogue case (every backend
// and kind, a large world so rank-count variants appear) is declared
// (report.ValidLabels.Add) or derived from the case; a case samples clocks
// exactly when it is labelled perf; a label is a type a string literal does
// not convert to, so Spec.Labels cannot take an undeclared spelling. A
// planted misspelt label and a planted second declaration must be reported.
func TestLabelsAreDeclared(t *testing.T) {
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 4
	n, facets := 0, kernelFacets()
	for be, kinds := range harness.Matrix {
		for _, k := range kinds {
			for _, c := range Catalogue(&o, be, k) {
				n++
				if bad := undeclaredLabels(c, facets); len(bad) > 0 {
					t.Errorf("%s: labels %v are neither declared (report.ValidLabels.Add) nor follow from the case", c.ID, bad)
				}
				if c.Clocks != LabelPerf.In(c.Labels) {
					t.Errorf("%s: Clocks=%v but labels %v", c.ID, c.Clocks, c.Labels)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("the catalogue is empty")
	}
	planted := &harness.Case{ID: "host.memfd.counter.x", Case: report.Case{Backend: backends.HostName, Kind: "memfd"}, Labels: []string{backends.HostName, "counter", "pref"}}
	if bad := undeclaredLabels(planted, facets); !slices.Equal(bad, []string{"pref"}) {
		t.Errorf("a planted misspelt label: got %v, want [pref]", bad)
	}

	// One statement declares and registers each label, so the set cannot
	// drift from the declarations; a name declared twice is refused (shown
	// on a set of the test's own).
	if twice := report.ValidLabels.Twice(); len(twice) > 0 {
		t.Errorf("labels declared twice: %v", twice)
	}
	var plant report.LabelSet
	plant.Add("perf")
	if plant.Add("perf"); !slices.Equal(plant.Twice(), []string{"perf"}) || !plant.Has("perf") || plant.Has("pref") {
		t.Errorf("a planted second declaration: twice %v", plant.Twice())
	}
	if !report.ValidLabels.Has(LabelPerf.String()) || !report.ValidLabels.Has(LabelWrite.String()) {
		t.Errorf("the declared labels are not in the validated set: %v", report.ValidLabels.Names())
	}
	// An untyped string constant converts to any type whose underlying
	// type is string: were report.Label one, []report.Label{"pref"} would
	// compile again.
	if k := reflect.TypeFor[report.Label]().Kind(); k == reflect.String {
		t.Errorf("report.Label is a %s: a bare literal compiles as a label", k)
	}
}
