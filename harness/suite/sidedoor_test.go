package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 51 item 2: the executor and the rest of the run loop reach the
// sinks only through the stream (emit, handed to them as a func). The
// executor used to hold the sinks and reach four of them by name 9 times
// (the live line for an abort, the rerun queue, the checkpoint after a
// rerun or a perf pass, the world log). Only the files that make and end
// the stream (run.go wires it, sinks.go makes it, outputs.go says the end)
// may name the sinks type or a field of that name.
func TestNoSideDoorToTheSinks(t *testing.T) {
	allowed := map[string]bool{"run.go": true, "sinks.go": true, "outputs.go": true}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || allowed[f] {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		n++
		ast.Inspect(af, func(x ast.Node) bool {
			switch v := x.(type) {
			case *ast.SelectorExpr:
				if v.Sel.Name == "sinks" {
					t.Errorf("%s: reaches the sinks (.sinks): emit an event instead", fset.Position(v.Pos()))
				}
			case *ast.Ident:
				if v.Name == "sinks" {
					t.Errorf("%s: names the sinks: emit an event instead", fset.Position(v.Pos()))
				}
			}
			return true
		})
	}
	if n < 10 {
		t.Fatalf("read %d files of harness/suite", n)
	}
}
