package binding

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// A hang-at rule at the choke point: the N-th call is begun in the trace
// (in flight, naming the call) and never returns, and the entry point is
// not called for it; the calls before it are made and return.
func TestHangAtChokePoint(t *testing.T) {
	var sync func(int32) Status[code]
	var made atomic.Int32
	err := BindFuncs([]Symbol{Sym1(&sync, end, "stream", "cuStreamSynchronize")}, map[string]any{
		"cuStreamSynchronize": func(int32) code { made.Add(1); return 0 },
	}, func(n string) { t.Errorf("unbound %s called", n) })
	if err != nil {
		t.Fatal(err)
	}
	rules, err := inject.Parse("hang-at:cuStreamSynchronize=2")
	if err != nil {
		t.Fatal(err)
	}
	inject.Set(rules)
	t.Cleanup(func() { inject.Set(nil) })
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	if st := sync(1); st.Code != 0 {
		t.Fatalf("first call: %+v", st)
	}
	returned := make(chan struct{})
	go func() { sync(2); close(returned) }() // wedged: this goroutine sleeps until the test binary exits
	var rec *trace.Record
	for i := 0; i < 200 && rec == nil; i++ {
		time.Sleep(5 * time.Millisecond)
		for _, r := range trace.Since(seq) {
			if r.InFlight && r.Name == "cuStreamSynchronize" && strings.Contains(r.Args, "never returns") {
				rec = &r
			}
		}
	}
	if rec == nil {
		t.Fatalf("no in-flight record of the wedged call: %+v", trace.Since(seq))
	}
	select {
	case <-returned:
		t.Fatal("the wedged call returned")
	case <-time.After(50 * time.Millisecond):
	}
	if made.Load() != 1 {
		t.Errorf("the entry point was called %d times, want 1 (the wedged call is never made)", made.Load())
	}
}
