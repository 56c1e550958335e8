package host

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestSymbols: the static list the suite checks rules against
// (inject.HostSymbols) is exactly the names this package's source
// hands its choke point, sys("<name>", ...): a call added without its
// name, or a name left after its call went, fails here.
func TestSymbols(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var called []string
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if id, isID := func() (*ast.Ident, bool) {
				if !ok {
					return nil, false
				}
				id, is := c.Fun.(*ast.Ident)
				return id, is
			}(); isID && id.Name == "sys" && len(c.Args) > 0 {
				lit, isLit := c.Args[0].(*ast.BasicLit)
				if !isLit {
					t.Errorf("%s: sys called with a name that is not a literal", fset.Position(c.Pos()))
					return true
				}
				name, _ := strconv.Unquote(lit.Value)
				if !slices.Contains(called, name) {
					called = append(called, name)
				}
			}
			return true
		})
	}
	slices.Sort(called)
	want := slices.Clone(Symbols)
	slices.Sort(want)
	if !slices.Equal(called, want) {
		t.Errorf("sys is called with %v; the static list is %v", called, want)
	}
}
