package harness

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// classRow is one error the runner tells apart and what it must be judged:
// the taxonomy the eight old switch sites spelt out each time.
type classRow struct {
	name    string
	err     error
	outcome report.Outcome
	fatal   bool
	weight  int
}

func classRows() []classRow {
	dead := &DeadError{Rank: 1, What: "launch"}
	tmo := &TimeoutError{Rank: 0, What: "launch"}
	proto := &ProtocolError{Rank: 0, Err: wire.ErrMalformed}
	return []classRow{
		{"nil", nil, report.Pass, false, 0},
		{"plain", errors.New("a spec's own error"), report.Error, false, 2},
		{"unwitnessed", fmt.Errorf("%w: check", ErrUnwitnessed), report.Error, false, 2},
		{"skip", Skipf("no peer access"), report.Skip, false, 2},
		{"fail", Failf("expected 1, got 2"), report.Fail, false, 2},
		{"timeout", tmo, report.Timeout, true, 3},
		{"dead", dead, report.Crash, true, 4},
		{"remote", &RemoteError{Rank: 0, What: "alloc", Msg: "invalid argument"}, report.Error, false, 2},
		{"integrity", &IntegrityError{Rank: 1, Err: &RemoteError{Rank: 1, What: "launch", Msg: "invalid argument"}}, report.Error, false, 2},
		{"remote not supported", &RemoteError{Rank: 0, What: "alloc", Msg: "no", NotSupported: true}, report.Skip, false, 2},
		{"remote fault", &RemoteError{Rank: 0, What: "launch", Msg: "fault", Fault: &wire.Fault{}}, report.Crash, true, 5},
		{"protocol", proto, report.Error, true, 2},
		{"start: dead", &StartError{Err: dead}, report.Crash, true, 4},
		{"start: timeout", &StartError{Err: tmo}, report.Timeout, true, 3},
		{"start: protocol", &StartError{Err: proto}, report.Error, true, 2},
		{"spawn", &SpawnError{Rank: 0, Err: syscall.EAGAIN}, report.Error, false, 2},
		// A round names itself around its body's error; teardown joins its
		// frees' errors: the heaviest, a fatal one among equals, decides.
		{"wrapped dead", fmt.Errorf("round 0 (members 4, run at once): %w", dead), report.Crash, true, 4},
		{"wrapped skip", fmt.Errorf("round: %w", Skipf("no peer")), report.Skip, false, 2},
		{"joined remote, dead", errors.Join(&RemoteError{Msg: "x"}, dead), report.Crash, true, 4},
		{"joined remote, protocol", errors.Join(&RemoteError{Msg: "x"}, proto), report.Error, true, 2},
		{"joined timeout, dead", errors.Join(tmo, dead), report.Crash, true, 4},
	}
}

// Every error's classification, as the runner's judgement, isWorldFatal
// and worstErr see it: a type whose outcome, fatality or weight changes
// fails here by name.
func TestErrorClassification(t *testing.T) {
	for _, row := range classRows() {
		ce := classOf(row.err)
		if got := [3]any{ce.outcome(), ce.fatal(), ce.weight()}; got != [3]any{row.outcome, row.fatal, row.weight} {
			t.Errorf("%s: outcome, fatal, weight = %v, want %v", row.name, got, [3]any{row.outcome, row.fatal, row.weight})
		}
		if isWorldFatal(row.err) != row.fatal {
			t.Errorf("%s: isWorldFatal %t, want %t", row.name, isWorldFatal(row.err), row.fatal)
		}
	}
	if o := (&StartError{Err: &DeadError{}}).Outcome(); o != report.Crash {
		t.Errorf("StartError.Outcome of a death: %s", o)
	}
	// worstErr keeps the heaviest, the first of equal weight.
	skip, tmo, dead := Skipf("s"), &TimeoutError{}, &DeadError{}
	fault := &RemoteError{Fault: &wire.Fault{}}
	for _, c := range []struct{ errs, want []error }{
		{[]error{nil, skip, nil}, []error{skip}},
		{[]error{tmo, dead}, []error{dead}},
		{[]error{dead, fault, tmo}, []error{fault}},
		{[]error{skip, Failf("f")}, []error{skip}},
		{[]error{nil, nil}, []error{nil}},
	} {
		if got := worstErr(c.errs); got != c.want[0] {
			t.Errorf("worstErr(%v) = %v, want %v", c.errs, got, c.want[0])
		}
	}
}

// Every error type the harness declares (a type with an Error method in
// its non-test files) classifies itself: it has a row above, and classOf
// returns the error itself, not the plain fallback. A new error type
// without its own outcome, fatality and weight would be judged a plain
// error silently; here it fails by name.
func TestEveryErrorTypeClassifiesItself(t *testing.T) {
	declared := errorTypes(t)
	rowed := map[string]bool{}
	for _, row := range classRows() {
		if row.err == nil {
			continue
		}
		ce := classOf(row.err)
		name := reflect.TypeOf(ce).String()
		if _, ok := ce.(plainError); !ok && errors.Is(row.err, ce) {
			rowed[strings.TrimPrefix(strings.TrimPrefix(name, "*"), "harness.")] = true
		}
	}
	// passed and plainError are classOf's own answers for nil and for any
	// other error; they are no error a case returns.
	delete(declared, "passed")
	delete(declared, "plainError")
	var missing []string
	for name := range declared {
		if !rowed[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("error types without a classification row that classifies as themselves: %v", missing)
	}
	if len(declared) < 8 {
		t.Errorf("found %d error types in the harness, want the eight at least: %v", len(declared), declared)
	}
}

// errorTypes names every type with an Error() string method declared in
// the harness package's non-test files.
func errorTypes(t *testing.T) map[string]bool {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "Error" || len(fd.Type.Params.List) != 0 {
				continue
			}
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				out[id.Name] = true
			}
		}
	}
	return out
}
