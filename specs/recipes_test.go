package specs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"p2patomics/kernels"
)

// litmusVariants lists the variants of the catalogue's mutation-scored
// litmus cases (the host backend, default flags), in catalogue order.
func litmusVariants(t *testing.T) []string {
	t.Helper()
	var got []string
	for _, c := range hostCases(t) {
		if c.Spec == "litmus" && LabelMutation.In(c.Labels) && c.Variant != "planted-nofence" {
			got = append(got, c.Variant)
		}
	}
	return got
}

// literalsOf returns the string literals of Go source src that are in names.
func literalsOf(t *testing.T, src string, names []string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(names, v) {
				hits = append(hits, v)
			}
		}
		return true
	})
	return hits
}

// TestLitmusCasesDeriveFromManifest keeps docs/ARCHITECTURE.md's "How to
// add … a litmus test" true for specs/: the catalogue's litmus cases are
// exactly kernels.LitmusEnvs, in its order; a shape planted there becomes a
// case with no edit here; and no non-test file of specs/ spells a strong
// litmus kernel's name (a hand-kept list would be one more file to touch).
func TestLitmusCasesDeriveFromManifest(t *testing.T) {
	var want []string
	for _, k := range kernels.LitmusEnvs() {
		want = append(want, k.Name)
	}
	if len(want) < 6 {
		t.Fatalf("kernels.LitmusEnvs has %d shapes, want at least the six of docs/LITMUS.md", len(want))
	}
	if got := litmusVariants(t); !slices.Equal(got, want) {
		t.Errorf("the catalogue's litmus cases %v are not kernels.LitmusEnvs %v", got, want)
	}
	saved := litmusEnvKernels
	t.Cleanup(func() { litmusEnvKernels = saved })
	planted := kernels.LitmusEnvs()[0]
	planted.Name = "pplanted_u32_acqrel_sys"
	litmusEnvKernels = func() []kernels.Kernel { return append(kernels.LitmusEnvs(), planted) }
	if got := litmusVariants(t); !slices.Contains(got, planted.Name) {
		t.Errorf("a shape planted in the manifest's list is not a case: %v", got)
	}
	litmusEnvKernels = saved

	for f, src := range specsSources(t) {
		if hits := literalsOf(t, src, want); len(hits) > 0 {
			t.Errorf("%s spells litmus kernels %v: derive them from kernels.LitmusEnvs", f, hits)
		}
	}
	plant := "package specs\nvar x = []string{\"pmp_u32_acqrel_sys\", \"psb_u32_seqcst_sys\"}\n"
	if hits := literalsOf(t, plant, want); len(hits) != 2 {
		t.Errorf("a planted hand-kept list was missed: %v", hits)
	}
}
