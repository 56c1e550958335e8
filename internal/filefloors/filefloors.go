// Package filefloors is for tests only: it checks that a package's files
// form one-way floors, a file using only what files below it define, so no
// two files reach each other through any chain (issue 51: a hub of files
// reaching back up into one type is what the floors keep out). The graph is
// the type checker's, not a reading of tokens: file A -> file B when A names
// a package-level name, a field or a method that B declares; a word in a
// comment or a string is no arrow.
package filefloors

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Graph is the package's file graph: from file → to file → the names
// that carry the arrow (sorted).
type Graph map[string]map[string][]string

// Read type-checks the non-test .go files of dir as the package at
// importPath and returns its file graph.
func Read(dir, importPath string) (Graph, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(importPath, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s's files: %w", importPath, err)
	}
	g := Graph{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Scope() {
			continue // a local variable
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		if g[from] == nil {
			g[from] = map[string][]string{}
		}
		if !slices.Contains(g[from][to], id.Name) {
			g[from][to] = append(g[from][to], id.Name)
		}
	}
	for _, tos := range g {
		for _, ids := range tos {
			sort.Strings(ids)
		}
	}
	return g, nil
}

// Circle is every arrow between two files of one strongly connected
// component (Tarjan's): each "from -> to (up to four names)", sorted; none
// when the files form one-way floors.
func (g Graph) Circle() []string {
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
		for w := range g[v] {
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
	for v := range g {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	var circle []string
	for from, tos := range g {
		for to, ids := range tos {
			if comp[from] == comp[to] {
				circle = append(circle, from+" -> "+to+" ("+strings.Join(ids[:min(len(ids), 4)], ", ")+")")
			}
		}
	}
	sort.Strings(circle)
	return circle
}
