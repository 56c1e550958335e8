package report_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// idSplitters are the strings functions that take a case id apart.
var idSplitters = map[string]bool{
	"Split": true, "SplitN": true, "SplitAfter": true, "SplitAfterN": true, "Cut": true, "CutPrefix": true,
	"CutSuffix": true, "Fields": true, "Index": true, "IndexByte": true, "LastIndex": true, "LastIndexByte": true,
	"HasPrefix": true, "HasSuffix": true, "TrimPrefix": true, "TrimSuffix": true, "Count": true,
}

// idParsers lists every call under root (but not in harness/report) that
// hands a case id to one of idSplitters: an argument that is a Result's
// ID(), a Case's ID field, or a variable named id. Test files are
// included (a test that splits ids checks a second grammar).
func idParsers(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "out" || filepath.ToSlash(p) == "../../harness/report") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return nil // not ours to judge (a generated or broken file fails go vet)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && splitsID(c) {
				found = append(found, fset.Position(c.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func splitsID(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || len(c.Args) == 0 {
		return false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "strings" || !idSplitters[sel.Sel.Name] {
		return false
	}
	switch a := c.Args[0].(type) {
	case *ast.CallExpr: // r.ID()
		s, ok := a.Fun.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "ID" && len(a.Args) == 0
	case *ast.SelectorExpr: // c.ID
		return a.Sel.Name == "ID"
	case *ast.Ident:
		return a.Name == "id" || a.Name == "caseID"
	}
	return false
}

// TestNoCaseIDParserOutsideReport: a case's parts are report.Case's
// fields, and the one reader of an id is report.ParseCase, so no other
// package splits an id (issue 28: six parsers, two of them of pair
// spellings nothing produced). It fails on the planted file, and failed
// on the tree before report.Case (junit.go, heatmap.go, verdict.go,
// p2pcompare, p2pfleet, p2pmutate).
func TestNoCaseIDParserOutsideReport(t *testing.T) {
	planted := idParsers(t, filepath.Join("testdata", "idparser"))
	if len(planted) != 3 {
		t.Fatalf("the planted parsers: found %d of 3: %v", len(planted), planted)
	}
	var found []string
	for _, dir := range []string{"harness", "cmd", "specs"} {
		for _, p := range idParsers(t, filepath.Join("..", "..", dir)) {
			if !strings.Contains(p, "testdata") {
				found = append(found, p)
			}
		}
	}
	for _, p := range found {
		t.Errorf("%s: a case id taken apart outside harness/report (use report.Case's fields, or report.ParseCase for an id read from a file)", p)
	}
}
