package cuda

import (
	"slices"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// TestSymbolsAreTheTable: the static list the suite checks rules against
// (inject.CUDASymbols) names exactly the table's entries behind the
// injector, and every one of them, called under fail:<name>, returns the
// rule's code without the function being called (binding.ProveInjected).
func TestSymbolsAreTheTable(t *testing.T) {
	trace.Off()
	d := &driver{bound: map[string]string{}, missing: map[string]error{}}
	table := d.symbols()
	got := binding.InjectedNames(table)
	slices.Sort(got)
	want := slices.Clone(inject.CUDASymbols)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the table puts %v behind the injector; inject.CUDASymbols lists %v", got, want)
	}
	if err := binding.ProveInjected(table); err != nil {
		t.Error(err)
	}
}

// cuIpcOpenMemHandle_v2 is bound Manual (its by-value handle): its own
// wrapper asks the injector, so a fail rule returns the code unmade.
func TestIpcOpenMemHandleInjected(t *testing.T) {
	trace.Off()
	d := &driver{bound: map[string]string{}, missing: map[string]error{}}
	called := false
	err := binding.BindFuncs(d.symbols(), map[string]any{
		"cuIpcOpenMemHandle_v2": func(p *uint64, flags uint32, a, b, c, e uint64, w0, w1, w2, w3, w4, w5, w6, w7 uint64) cuResult {
			called = true
			return cudaSuccess
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := inject.Parse("fail:cuIpcOpenMemHandle=201")
	if err != nil {
		t.Fatal(err)
	}
	inject.Set(rules)
	defer inject.Set(nil)
	if _, err := d.ipcOpenMemHandle(ipcMemHandle{}, 1); err == nil || called {
		t.Errorf("under fail:cuIpcOpenMemHandle=201: err %v, called %v", err, called)
	}
	if f := inject.Fired(); len(f) != 1 || f[0] != 1 {
		t.Errorf("fired %v", f)
	}
}
