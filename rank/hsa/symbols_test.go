package hsa

import (
	"slices"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// TestSymbolsAreTheTable: the static list the suite checks rules against
// (inject.HSASymbols) names exactly the table's entries behind the
// injector, and every one of them (hsa_amd_memory_async_copy_on_engine's
// ten arguments too), called under fail:<name>, returns the rule's code
// without the function being called (binding.ProveInjected).
func TestSymbolsAreTheTable(t *testing.T) {
	trace.Off()
	l := &lib{missing: map[string]string{}}
	table := l.symbols()
	got := binding.InjectedNames(table)
	slices.Sort(got)
	want := slices.Clone(inject.HSASymbols)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the table puts %v behind the injector; inject.HSASymbols lists %v", got, want)
	}
	if err := binding.ProveInjected(table); err != nil {
		t.Error(err)
	}
}
