package specs

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
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
// being declared: its identity (backend, kind, spec), another kind it uses
// (fdexchange's dmabuf), a kernel's facet or litmus shape, or a pair=/needs=
// form.
func derivedLabel(c *harness.Case, l string, facets map[string]bool) bool {
	if l == c.Backend || l == c.Kind || l == c.Identity().Spec || facets[l] {
		return true
	}
	if strings.HasPrefix(l, "pair=") || strings.HasPrefix(l, report.NeedsPrefix) {
		return true
	}
	for _, kinds := range harness.Matrix {
		if slices.Contains(kinds, l) {
			return true
		}
	}
	return false
}

// undeclaredLabels lists c's labels that are neither declared in labels.go
// nor derived from c.
func undeclaredLabels(c *harness.Case) []string {
	facets := map[string]bool{}
	for _, k := range kernels.All() {
		for _, f := range []string{string(k.Op), string(k.Type), string(k.Order), string(k.Scope), shapeLabel(k.Op)} {
			facets[f] = true
		}
	}
	var bad []string
	for _, l := range c.Labels {
		if !slices.Contains(declaredLabels, l) && !derivedLabel(c, l, facets) {
			bad = append(bad, l)
		}
	}
	return bad
}

// TestLabelsAreDeclared: every label of every catalogue case (every backend
// and kind, a large world so rank-count variants appear) is declared in
// labels.go or derived from the case; a case samples clocks exactly when it
// is labelled perf; labels.go's constants and the validated set agree. A
// planted misspelt label must be reported.
func TestLabelsAreDeclared(t *testing.T) {
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 4
	n := 0
	for be, kinds := range harness.Matrix {
		for _, k := range kinds {
			for _, c := range Catalogue(&o, be, k) {
				n++
				if bad := undeclaredLabels(c); len(bad) > 0 {
					t.Errorf("%s: labels %v are not declared in specs/labels.go", c.ID, bad)
				}
				if c.Clocks != slices.Contains(c.Labels, LabelPerf) {
					t.Errorf("%s: Clocks=%v but labels %v", c.ID, c.Clocks, c.Labels)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("the catalogue is empty")
	}
	planted := &harness.Case{ID: "host.memfd.counter.x", Backend: backends.HostName, Kind: "memfd", Labels: []string{backends.HostName, "counter", "pref"}}
	if bad := undeclaredLabels(planted); !slices.Equal(bad, []string{"pref"}) {
		t.Errorf("a planted misspelt label: got %v, want [pref]", bad)
	}

	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(specsDir(t), "labels.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, id := range vs.Names {
				if strings.HasPrefix(id.Name, "Label") {
					consts = append(consts, id.Name)
				}
			}
		}
		return true
	})
	if len(consts) != len(declaredLabels) {
		t.Errorf("labels.go declares %d Label constants, the validated set holds %d", len(consts), len(declaredLabels))
	}
	for i, l := range declaredLabels {
		if slices.Contains(declaredLabels[i+1:], l) {
			t.Errorf("label %q is in the validated set twice", l)
		}
	}
}
