package backends

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nameCompares lists where src (a Go file) compares something with a
// backend's or a vendor's name taken from this package (backends.HostName,
// backends.CUDA.Name, backends.Host.Vendor, under any import name): ==, !=,
// strings.EqualFold and switch cases. A caller asks a property instead
// (IsGPU, RunsOnCPU, Driverless, a row's field), as cilium/ebpf's callers
// ask MapType's methods rather than compare map types.
func nameCompares(path, src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		return nil, err
	}
	local := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "p2patomics/harness/backends" {
			local = "backends"
			if im.Name != nil {
				local = im.Name.Name
			}
		}
	}
	if local == "" {
		return nil, nil
	}
	// isName: a selector chain rooted at the package whose last name is a
	// name or a vendor (HostName, CUDAName, Host.Vendor, HIP.Name).
	isName := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || !(strings.HasSuffix(sel.Sel.Name, "Name") || sel.Sel.Name == "Vendor") {
			return false
		}
		for x := sel.X; ; {
			switch v := x.(type) {
			case *ast.Ident:
				return v.Name == local
			case *ast.SelectorExpr:
				x = v.X
			default:
				return false
			}
		}
	}
	var found []string
	at := func(n ast.Node) { found = append(found, fmt.Sprintf("%s:%d", path, fset.Position(n.Pos()).Line)) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch v := n.(type) {
		case *ast.BinaryExpr:
			if (v.Op == token.EQL || v.Op == token.NEQ) && (isName(v.X) || isName(v.Y)) {
				at(v)
			}
		case *ast.CallExpr:
			if sel, ok := v.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "EqualFold" && slices.ContainsFunc(v.Args, isName) {
				at(v)
			}
		case *ast.CaseClause:
			if slices.ContainsFunc(v.List, isName) {
				at(v)
			}
		}
		return true
	})
	return found, nil
}

// TestNoNameCompareOutsideTheRows: only harness/backends (the rows' home)
// compares a backend's or vendor's name; every other non-test Go file asks
// a property. The planted file's every marked compare must be reported,
// and nothing else in it, so the check cannot pass by finding nothing.
func TestNoNameCompareOutsideTheRows(t *testing.T) {
	root := repoRoot(t)
	plant := filepath.Join("testdata", "namecompare", "planted.go")
	b, err := os.ReadFile(plant)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "// want") {
			want = append(want, fmt.Sprintf("%s:%d", plant, i+1))
		}
	}
	got, err := nameCompares(plant, string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 5 || !slices.Equal(got, want) {
		t.Fatalf("the planted compares: found %v, want %v", got, want)
	}
	for f, src := range goSources(t, root, false) {
		if strings.HasPrefix(f, "harness/backends/") {
			continue
		}
		got, err := nameCompares(f, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range got {
			t.Errorf("%s compares a backend's or vendor's name: ask the row's property (harness/backends) instead", at)
		}
	}
}
