package binding

import (
	"strings"
	"testing"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// The injector's rules at the choke point: a fail returns its status
// without calling the entry point, a noop returns success without calling
// it, a fail-every fails every N-th call and makes the others, matched by
// the table's first name or the one bound; the trace records the call.
func TestInjectAtChokePoint(t *testing.T) {
	var exp func(int32) Status[code]
	var grant func(int32, int32) Status[code]
	var open func(int32) Status[code]
	var launch func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) Status[code]
	table := []Symbol{
		Sym1(&exp, end, "a", "cuExport"),
		Sym2(&grant, end, "a b", "cuGrant_v2", "cuGrant"),
		Sym1(&open, end, "a", "cuOpen"),
		Launch(&launch, end, "shared", "params", "cuLaunch"),
	}
	calls := map[string]int{}
	err := BindFuncs(table, map[string]any{
		"cuExport":   func(int32) code { calls["cuExport"]++; return 0 },
		"cuGrant_v2": func(int32, int32) code { calls["cuGrant"]++; return 0 },
		"cuOpen":     func(int32) code { calls["cuOpen"]++; return 0 },
		"cuLaunch": func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) code {
			calls["cuLaunch"]++
			return 0
		},
	}, func(n string) { t.Errorf("unbound %s called", n) })
	if err != nil {
		t.Fatal(err)
	}
	rules, err := inject.Parse("fail:cuExport=801,noop:cuGrant,fail-every:cuOpen=201/3,fail:cuLaunch=700")
	if err != nil {
		t.Fatal(err)
	}
	inject.Set(rules)
	t.Cleanup(func() { inject.Set(nil) })
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	if st := exp(1); st.Code != 801 || st.Call != "cuExport" {
		t.Errorf("fail: %+v", st)
	}
	if st := grant(1, 2); st.Code != 0 || st.Call != "cuGrant_v2" {
		t.Errorf("noop: %+v", st)
	}
	if st := launch(0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0); st.Code != 700 {
		t.Errorf("fail on a launch: %+v", st)
	}
	var failed []int
	for i := 1; i <= 6; i++ {
		if st := open(int32(i)); st.Code != 0 {
			if st.Code != 201 {
				t.Errorf("fail-every code %d", st.Code)
			}
			failed = append(failed, i)
		}
	}
	if len(failed) != 2 || failed[0] != 3 || failed[1] != 6 {
		t.Errorf("fail-every:cuOpen=201/3 failed calls %v", failed)
	}
	if calls["cuExport"] != 0 || calls["cuGrant"] != 0 || calls["cuLaunch"] != 0 || calls["cuOpen"] != 4 {
		t.Errorf("calls made: %v", calls)
	}
	recs := trace.Since(seq)
	if len(recs) < 3 || recs[0].Name != "cuExport" || recs[0].Code != 801 || !recs[0].Err || recs[1].Err {
		t.Errorf("trace %+v", recs)
	}
	// The rules gone, every call is made again.
	inject.Set(nil)
	exp(1)
	grant(1, 2)
	if calls["cuExport"] != 1 || calls["cuGrant"] != 1 {
		t.Errorf("after the rules: %v", calls)
	}
}

// Every wrapper family asks the injector: a table with one entry of each
// arity (Sym0 … Sym8, Sym10, Launch) passes ProveInjected, which fails
// each entry's symbol in turn and requires the code back with the function
// never called. A hand-made entry whose wrapper calls straight through
// (what Sym10 was) is caught.
func TestEveryWrapperIsInjected(t *testing.T) {
	var (
		f0  func() Status[code]
		f1  func(int32) Status[code]
		f2  func(int32, int32) Status[code]
		f3  func(int32, int32, int32) Status[code]
		f4  func(int32, int32, int32, int32) Status[code]
		f5  func(int32, int32, int32, int32, int32) Status[code]
		f8  func(int32, int32, int32, int32, int32, int32, int32, int32) Status[code]
		f10 func(int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) Status[code]
		fl  func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) Status[code]
	)
	table := []Symbol{
		Sym0(&f0, end, "s0"),
		Sym1(&f1, end, "a", "s1"),
		Sym2(&f2, end, "a b", "s2"),
		Sym3(&f3, end, "a b c", "s3"),
		Sym4(&f4, end, "a b c d", "s4"),
		Sym5(&f5, end, "a b c d e", "s5"),
		Sym8(&f8, end, "a b c d e f g h", "s8"),
		Sym10(&f10, end, "a b c d e f g h i j", "s10"),
		Launch(&fl, end, "shared", "params", "sl"),
	}
	if err := ProveInjected(table); err != nil {
		t.Fatal(err)
	}
	want := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s8", "s10", "sl"}
	if got := InjectedNames(table); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("injected names %v, want %v", got, want)
	}
	// A wrapper that skips the seam: the proof must name it.
	var bypass func(int32) Status[code]
	raw := new(func(int32) code)
	leaky := Symbol{Names: []string{"leaky"}, Raw: raw, Fn: &bypass, Injected: true,
		Bind: func(bound string) { bypass = func(a int32) Status[code] { return Status[code]{bound, (*raw)(a)} } }}
	err := ProveInjected(append(table, leaky))
	if err == nil || !strings.Contains(err.Error(), "leaky: under fail:leaky the call was made") {
		t.Errorf("a wrapper without the seam passed the proof: %v", err)
	}
	if inject.Active() != nil {
		t.Errorf("ProveInjected left rules installed")
	}
}
