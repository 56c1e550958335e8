package stream_test

import (
	"go/ast"
	"go/types"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// writersOf lists, for each function of interest (by types.Func.FullName),
// the non-test functions of the module that call it or, for a marshal, hand
// it a report.Report: "caller" names as FullName gives them.
func writersOf(t *testing.T, callees map[string]bool) map[string][]string {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "p2patomics/...")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors)
		}
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				caller := p.TypesInfo.Defs[fd.Name].(*types.Func).FullName()
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					name, ok := calleeOf(p.TypesInfo, call)
					if ok && callees[name] && !slices.Contains(found[name], caller) {
						found[name] = append(found[name], caller)
					}
					return true
				})
			}
		}
	}
	for _, v := range found {
		sort.Strings(v)
	}
	return found
}

// calleeOf names the function a call calls, as types.Func.FullName gives
// it, so writersOf can match it; a json marshal of a report.Report is named
// "json of a report.Report", and a marshal of anything else, a func value's
// call, a conversion or a builtin is not named (ok false).
func calleeOf(info *types.Info, call *ast.CallExpr) (string, bool) {
	var id *ast.Ident
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		id = fn.Sel
	case *ast.Ident:
		id = fn
	}
	if id == nil {
		return "", false
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok {
		return "", false
	}
	name := fn.FullName()
	if name == "encoding/json.Marshal" || name == "encoding/json.MarshalIndent" {
		// A record encoded is a record about to be written.
		if len(call.Args) == 0 || !isReport(info.TypeOf(call.Args[0])) {
			return "", false
		}
		name = "json of a report.Report"
	}
	return name, true
}

// isReport: tv is report.Report or a pointer to one, the record a marshal
// of which is a write of results.json.
func isReport(tv types.Type) bool {
	if p, ok := tv.(*types.Pointer); ok {
		tv = p.Elem()
	}
	n, ok := tv.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "p2patomics/harness/report" && n.Obj().Name() == "Report"
}

// Issue 51 item 2, one writer per file: results.json is written by the
// checkpoint sink alone (every record through Checkpoint.store, its
// ReportsNotWritten rewrite through amend), junit.xml by the reports sink
// alone (RunDone's WriteReports, ReportsNotWritten's amend). Before, the
// suite's Prepare wrote the first record itself and recordNotWritten
// encoded and rewrote results.json and junit.xml on its own: 3 writers of
// one and 2 of the other. A new writer anywhere in the module's non-test
// code fails here (the offline tools write no results.json).
func TestOneWriterOfEachFile(t *testing.T) {
	const (
		store   = "(*p2patomics/harness/stream.Checkpoint).store"
		amend   = "(*p2patomics/harness/stream.Checkpoint).amend"
		reports = "(*p2patomics/harness/stream.Reports).Handle"
		ramend  = "(*p2patomics/harness/stream.Reports).amend"
	)
	want := map[string][]string{
		// results.json
		"(*p2patomics/harness/report.Report).Write": {store},
		"json of a report.Report": {
			"(*p2patomics/harness/report.Report).Write", amend, store,
		},
		// junit.xml
		"p2patomics/harness/report.JUnit":         {ramend, "p2patomics/harness/report.WriteJUnit"},
		"p2patomics/harness/report.WriteJUnit":    {"p2patomics/harness/outputs.WriteReports"},
		"p2patomics/harness/outputs.WriteReports": {reports},
	}
	callees := map[string]bool{}
	for k := range want {
		callees[k] = true
	}
	got := writersOf(t, callees)
	for k, w := range want {
		sort.Strings(w)
		if g := got[k]; !slices.Equal(g, w) {
			t.Errorf("%s is called by:\n\t%s\nwant only:\n\t%s", k, strings.Join(g, "\n\t"), strings.Join(w, "\n\t"))
		}
	}
}
