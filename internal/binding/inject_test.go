package binding

import (
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
