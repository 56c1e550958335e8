package harness

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 51 item 1: a world event is built typed where it happens, and its
// line is rendered from the record, never the record read back from a
// line. Each rule's event comes out with its own kind, in order, and the
// lines stdout prints are the records' details behind a time (a world's
// start is a line, not an event). Planted: noteSetup's event made as
// EventOther fails here.
func TestWorldEventsAreTypedWhereTheyHappen(t *testing.T) {
	r := NewRunner(backends.HostName, wire.DefaultSettings, 1)
	r.log.started(report.WorldStart{Backend: backends.HostName, Ranks: 2, Seconds: 0.02}, true)
	setup := &RemoteError{Rank: 1, What: "alloc", Msg: "rank 1: NOT_SUPPORTED"}
	for i := range setupStreakMax {
		c := &Case{ID: "host.memfd.s." + string(rune('a'+i)), Case: report.Case{Kind: "memfd"}, Expected: report.Pass}
		r.streaks.noteSetup(c, report.Result{Outcome: report.Error, Detail: "x"}, setup)
	}
	w := &World{N: 2}
	unusable := &RemoteError{Rank: 0, What: "alloc", Msg: "Cannot allocate memory"}
	if !r.streaks.retireAfter(w, report.Result{Case: report.Case{Backend: backends.HostName, Kind: "memfd", Spec: "x", Variant: "y", Ranks: 2}, Outcome: report.Error}, unusable) {
		t.Fatal("an unusable rank did not retire its world")
	}
	for _, id := range []string{"a", "b"} {
		r.streaks.noteWedge(&Case{ID: id, Expected: report.Pass}, report.Result{Outcome: report.Timeout},
			&TimeoutError{Rank: 1, What: "launch", Call: "mmap"})
	}
	r.book.chargeElsewhere("", false, kmsg.Event{Lines: []kmsg.Line{{Text: "p2patomics-test: marker"}}}, nil)

	evs := r.WorldEvents()
	kinds := []string{report.EventSetupStreak, report.EventRetired, report.EventOther, report.EventOther}
	if len(evs) != len(kinds) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(kinds), evs)
	}
	for i, e := range evs {
		if e.Kind != kinds[i] || e.Backend != backends.HostName || e.Time == "" || e.Detail == "" {
			t.Errorf("event %d: %+v, want kind %s with its backend, time and detail", i, e, kinds[i])
		}
	}
	if got := r.TakeWorldEvents(); len(got) != len(evs) || got[0].Kind != report.EventSetupStreak {
		t.Fatalf("the first take handed out %+v, want every event", got)
	}
	r.book.chargeElsewhere("", false, kmsg.Event{Lines: []kmsg.Line{{Text: "p2patomics-test: second"}}}, nil)
	if got := r.TakeWorldEvents(); len(got) != 1 || !strings.Contains(got[0].Detail, "second") {
		t.Fatalf("the second take handed out %+v, want only the event after the first", got)
	}
	evs = r.WorldEvents()[:len(kinds)]
	lines := r.log.lines()[:len(kinds)+1]
	if len(lines) != 5 || lines[0] != "world of 2 host ranks ready in 0.020 s (a standby, started while the case before ran)" {
		t.Fatalf("lines %q: want the start's ready line, then one per event", lines)
	}
	stamp := regexp.MustCompile(`^[0-9]{2}:[0-9]{2}:[0-9]{2}: `)
	for i, l := range lines[1:] {
		if !stamp.MatchString(l) || strings.TrimPrefix(l, stamp.FindString(l)) != evs[i].Detail {
			t.Errorf("line %q is not event %d's detail %q behind its time", l, i, evs[i].Detail)
		}
	}
}

// Issue 51 item 1: no event is made as text. The package's code declares no
// string slice of events (the old Runner.Events, typed back by
// regexp), stamps no "HH:MM:SS: " line outside events.go's renderer,
// events.go parses nothing (no regexp, no strconv), and every
// report.WorldEvent the package builds names its kind. Planted: an
// `Events []string` field on Runner, or a fmt.Sprintf of
// time.Now().Format(time.TimeOnly) in pool.go, fails here.
func TestNoWorldEventIsMadeAsText(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		if f == "events.go" {
			for _, im := range af.Imports {
				if p := strings.Trim(im.Path.Value, `"`); p == "regexp" || p == "strconv" {
					t.Errorf("events.go imports %s: an event's record is never read back from its line", p)
				}
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if at, ok := n.Type.(*ast.ArrayType); ok {
					if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "string" {
						for _, name := range n.Names {
							if strings.Contains(strings.ToLower(name.Name), "event") {
								t.Errorf("%s: field %s []string: world events are kept typed (eventLog), not as text", fset.Position(n.Pos()), name.Name)
							}
						}
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && n.Sel.Name == "TimeOnly" && f != "events.go" {
					t.Errorf("%s: a line stamped with time.TimeOnly outside events.go: build a report.WorldEvent and let eventLog render it", fset.Position(n.Pos()))
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "WorldEvent" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "report" && !hasKey(n, "Kind") {
						t.Errorf("%s: a report.WorldEvent without its Kind", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
	if seen < 10 {
		t.Fatalf("read %d files: not the package's folder", seen)
	}
}

func hasKey(cl *ast.CompositeLit, key string) bool {
	for _, el := range cl.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}

// A run fault is typed where the fault book finds it; its line is the one
// results.json's summary.run_faults has always carried.
func TestRunFaultLines(t *testing.T) {
	f := &report.Fault{Vendor: "nvidia", Name: "Xid 31"}
	for _, c := range []struct {
		f    RunFault
		want string
	}{
		{RunFault{Case: "a", Outcome: report.Pass, What: "its world's rank 1 died idle (x)"}, "a ended pass, but after it its world's rank 1 died idle (x)"},
		{RunFault{Case: "a", Outcome: report.Pass, Who: "rank 1 (pid 7) of a world of 2", When: "between cases", Fault: f},
			"a ended pass, but rank 1 (pid 7) of a world of 2 logged a GPU fault after it was recorded (between cases): " + f.Error()},
		{RunFault{Who: "rank 1 (pid 7) of a world of 2", When: "between cases", Fault: f},
			"rank 1 (pid 7) of a world of 2 that had run no case logged a GPU fault (between cases): " + f.Error()},
		{RunFault{Who: "pid 9, none of the run's ranks,", When: "between cases", Fault: f, Foreign: true},
			"foreign GPU fault: pid 9, none of the run's ranks, logged between cases: " + f.Error()},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.f, got, c.want)
		}
	}
}
