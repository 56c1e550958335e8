package binding

import (
	"fmt"
	"slices"
	"testing"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// checkArity is the body of TestEverySymArity's subtests (generated in
// zz_arity_test.go): call makes the call and returns what the fake got.
// Its entry's names are <bound>_v2 (absent), bound (the one found) and
// <bound>_v1 (never tried).
func checkArity(t *testing.T, bound string, call func() (Status[code], []int32), code0 code, want []int32, args string) {
	t.Helper()
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	st, got := call()
	if st.Call != bound || st.Code != code0 || !slices.Equal(got, want) {
		t.Fatalf("call returned %+v with the fake given %v; want {Call:%s Code:%d} and %v", st, got, bound, code0, want)
	}
	checkRecord(t, trace.Since(seq), bound, args)
	for _, by := range []string{bound, bound + "_v2"} {
		rules, err := inject.Parse(fmt.Sprintf("fail:%s=%d", by, proofCode))
		if err != nil {
			t.Fatal(err)
		}
		inject.Set(rules)
		st, got := call()
		inject.Set(nil)
		if st.Code != proofCode || st.Call != bound || got != nil {
			t.Fatalf("under fail:%s=%d the call returned %+v and the fake got %v: the injector was not asked", by, proofCode, st, got)
		}
	}
}

// checkRecord requires exactly one trace record, under name, whose
// arguments read args (inputs, then "; " and a value entry's result).
func checkRecord(t *testing.T, recs []trace.Record, name, args string) {
	t.Helper()
	if len(recs) != 1 || recs[0].Name != name || recs[0].Args != args {
		t.Fatalf("trace records %+v; want one %s with args %q", recs, name, args)
	}
}
