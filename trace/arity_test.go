package trace

import (
	"slices"
	"testing"
)

// wrapEnd ends a span with an int32 result: an odd result is a failure,
// so the test sees the result reach end.
func wrapEnd(sp Span, r int32, out func() string) { sp.EndStatus(int64(r), "", r%2 == 1, out) }

// checkWrap is the body of TestEveryWrapArity's subtests (generated in
// zz_wrap_test.go).
func checkWrap(t *testing.T, name string, call func() int32, got func() []int32, res int32, want []int32, args string) {
	t.Helper()
	Off()
	seq := Seq()
	if r := call(); r != res || !slices.Equal(got(), want) || len(Since(seq)) != 0 {
		t.Fatalf("tracing off: returned %d, the function got %v, %d records; want %d, %v, none", r, got(), len(Since(seq)), res, want)
	}
	On()
	defer Off()
	seq = Seq()
	if r := call(); r != res || !slices.Equal(got(), want) {
		t.Fatalf("tracing on: returned %d, the function got %v; want %d, %v", r, got(), res, want)
	}
	recs := Since(seq)
	if len(recs) != 1 || recs[0].Name != name || recs[0].Args != args || recs[0].Code != int64(res) || recs[0].Err != (res%2 == 1) {
		t.Fatalf("tracing on: records %+v; want one %s, args %q, code %d", recs, name, args, res)
	}
}
