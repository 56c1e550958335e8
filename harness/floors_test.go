package harness

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Issue 51 item 1: the package's files form one-way floors — a file uses
// only what files below it define, so no two files reach each other
// through any chain (the hub the review found: 16 files reaching back up
// into run.go's Runner and Case and ctx.go's Ctx). The graph is the type
// checker's: file A -> file B when A names a package-level name, a field
// or a method B declares. Planted: a `var _ *Case` in errors.go (the
// classification reaching the case again) closes errors.go -> case.go ->
// ctx.go -> errors.go, and this fails naming those arrows.
func TestFilesFormOneWayFloors(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("p2patomics/harness", fset, files, info)
	if err != nil {
		t.Fatalf("type-checking the package's files: %v", err)
	}
	edges := map[string]map[string][]string{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Scope() {
			continue // a local variable
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		if from == to {
			continue
		}
		if edges[from] == nil {
			edges[from] = map[string][]string{}
		}
		if !slices.Contains(edges[from][to], id.Name) {
			edges[from][to] = append(edges[from][to], id.Name)
		}
	}
	// Tarjan's strongly connected components: a component of more than one
	// file is a circle.
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	comp := map[string]int{}
	var stack []string
	n, c := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		for w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp[w] = c
				if w == v {
					break
				}
			}
			c++
		}
	}
	for v := range edges {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	var circle []string
	for from, tos := range edges {
		for to, ids := range tos {
			if comp[from] == comp[to] {
				sort.Strings(ids)
				circle = append(circle, from+" -> "+to+" ("+strings.Join(ids[:min(len(ids), 4)], ", ")+")")
			}
		}
	}
	sort.Strings(circle)
	if len(circle) > 0 {
		t.Errorf("files of package harness reach each other in a circle:\n\t%s", strings.Join(circle, "\n\t"))
	}
	if len(edges) < 10 {
		t.Fatalf("%d files with arrows: not the package's folder", len(edges))
	}
}
