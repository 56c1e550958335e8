package hip

import (
	"slices"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// TestSymbolsAreTheTable: the static list the suite checks rules against
// (inject.HIPSymbols) names exactly the entries of the HIP backend's
// two tables (HIP and its HSA vmem calls) behind the injector, and every
// one of them, called under fail:<name>, returns the rule's code without
// the function being called (binding.ProveInjected).
func TestSymbolsAreTheTable(t *testing.T) {
	trace.Off()
	l := &lib{missing: map[string]string{}}
	h := &hsaLib{path: "fake-libhsa-runtime64.so.1"}
	got := append(binding.InjectedNames(l.symbols()), binding.InjectedNames(h.symbols())...)
	slices.Sort(got)
	want := slices.Clone(inject.HIPSymbols)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the tables put %v behind the injector; inject.HIPSymbols lists %v", got, want)
	}
	for _, table := range [][]binding.Symbol{l.symbols(), h.symbols()} {
		if err := binding.ProveInjected(table); err != nil {
			t.Error(err)
		}
	}
}
