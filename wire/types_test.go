package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// typeConsts are the constants of type Type that wire.go declares.
func typeConsts(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "wire.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		typed := false // iota specs inherit the type of the first
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if vs.Type != nil {
				id, ok := vs.Type.(*ast.Ident)
				typed = ok && id.Name == "Type"
			}
			if typed {
				for _, n := range vs.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

// Every Type constant has a name, so Requests (which the rank's handler
// table is checked against) lists every request: a request type added to
// the const block alone would be served by no handler and caught by none.
func TestEveryTypeIsNamed(t *testing.T) {
	consts := typeConsts(t)
	if len(consts) < 10 || !slices.Contains(consts, "TTrace") {
		t.Fatalf("found Type constants %v: the parse missed some", consts)
	}
	if len(consts) != len(typeNames) {
		t.Errorf("wire.go declares %d Type constants %v, typeNames names %d", len(consts), consts, len(typeNames))
	}
	reqs := Requests()
	if len(reqs) != len(typeNames)-1 || slices.Contains(reqs, TReply) || !slices.IsSorted(reqs) {
		t.Errorf("Requests() = %v: want every named type but reply, in order", reqs)
	}
}
