package cuda

import (
	"reflect"
	"strings"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/trace"
)

// fakeMemCreate stands in for the vendor function: the trace tests never
// load libcuda.
func fakeMemCreate(h *uint64, size uint64, prop *memAllocationProp, flags uint64) cuResult {
	if size == 0 {
		return cudaErrorInvalidValue
	}
	*h = 0xabc0
	return cudaSuccess
}

func tracedFake(t testing.TB) (*driver, func(*uint64, uint64, *memAllocationProp, uint64) status) {
	d := &driver{bound: map[string]string{}, missing: map[string]error{}}
	var fn func(*uint64, uint64, *memAllocationProp, uint64) status
	s := binding.Sym4(&fn, d.end, ">handle:x size prop flags:x", "cuMemCreate")
	*s.Raw.(*func(*uint64, uint64, *memAllocationProp, uint64) cuResult) = fakeMemCreate
	s.Bind("cuMemCreate")
	return d, fn
}

// TestTraceOffZeroAllocs: with tracing off a traced entry point costs no
// allocation, whether the call succeeds or fails (no argument formatting,
// no error-name lookup).
func TestTraceOffZeroAllocs(t *testing.T) {
	trace.Off()
	_, fn := tracedFake(t)
	var h uint64
	prop := memAllocationProp{Type: memAllocationTypePinned}
	ok := testing.AllocsPerRun(1000, func() {
		if fn(&h, 2<<20, &prop, 0).Code != cudaSuccess {
			t.Fatal("fake failed")
		}
	})
	bad := testing.AllocsPerRun(1000, func() {
		if fn(&h, 0, &prop, 0).Code == cudaSuccess {
			t.Fatal("fake succeeded")
		}
	})
	if ok != 0 || bad != 0 {
		t.Fatalf("tracing off: %v allocs per successful call, %v per failed call; want 0", ok, bad)
	}
}

func TestTraceRecordsCall(t *testing.T) {
	_, fn := tracedFake(t)
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	var h uint64
	prop := memAllocationProp{Type: memAllocationTypePinned}
	fn(&h, 2<<20, &prop, 0)
	fn(&h, 0, &prop, 0)
	recs := trace.Since(seq)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Name != "cuMemCreate" || r.Code != 0 || r.CodeName != "CUDA_SUCCESS" || r.Err || r.InFlight ||
		!strings.HasPrefix(r.Args, "size=2097152, prop={Type:1 ") || !strings.HasSuffix(r.Args, "flags=0x0; handle=0xabc0") {
		t.Errorf("success: %+v", r)
	}
	r = recs[1]
	if r.Code != cudaErrorInvalidValue || r.CodeName != "CUDA_ERROR_INVALID_VALUE" || !r.Err || strings.Contains(r.Args, "handle=") {
		t.Errorf("failure: %+v", r)
	}
	for _, r := range recs {
		t.Log(trace.Line(r, 0))
	}
}

// TestProbeNotMarked: a failure inside beginProbe/endProbe is recorded but
// not marked as an error.
func TestProbeNotMarked(t *testing.T) {
	d, fn := tracedFake(t)
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	var h uint64
	d.beginProbe()
	fn(&h, 0, &memAllocationProp{}, 0)
	d.endProbe()
	recs := trace.Since(seq)
	if len(recs) != 1 || recs[0].Err || recs[0].Code != cudaErrorInvalidValue {
		t.Fatalf("probe: %+v", recs)
	}
}

// TestEveryEntryPointTraced binds every symbol of the table to the
// missing-symbol stand-in, wraps it as loadDriver does, calls it with zero
// arguments and checks the trace got one record under its name (or none for
// the few left untraced on purpose).
func TestEveryEntryPointTraced(t *testing.T) {
	d := &driver{bound: map[string]string{}, missing: map[string]error{}}
	untraced := map[string]bool{"cuGetErrorName": true, "cuGetErrorString": true, "cuIpcOpenMemHandle_v2": true,
		"cuStreamQuery": true} // the watchdog's look (watch.go): an observer, outside the trace and the injector
	syms := d.symbols()
	if err := binding.Validate(syms); err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		bindMissing(s.Raw)
		if (s.Bind == nil) != untraced[s.Name()] {
			t.Errorf("%s: traced=%v", s.Name(), s.Bind != nil)
		}
		if s.Bind != nil {
			s.Bind(s.Name())
		}
	}
	trace.On()
	t.Cleanup(trace.Off)
	for _, s := range syms {
		if s.Bind == nil {
			continue
		}
		fv := reflect.ValueOf(s.Fn).Elem()
		args := make([]reflect.Value, fv.Type().NumIn())
		for i := range args {
			args[i] = reflect.Zero(fv.Type().In(i))
		}
		seq := trace.Seq()
		fv.Call(args)
		recs := trace.Since(seq)
		if len(recs) != 1 || recs[0].Name != s.Name() || recs[0].CodeName != "symbol missing" || !recs[0].Err {
			t.Errorf("%s: records %+v", s.Name(), recs)
		}
		if st := fv.Call(args)[0].Interface().(status); st.Call != s.Name() || st.Code != resultSymbolMissing {
			t.Errorf("%s: returned %+v, want the symbol's name and its code", s.Name(), st)
		}
	}
	// The IPC open is traced by its one caller.
	seq := trace.Seq()
	d.ipcOpenMemHandle(ipcMemHandle{1, 2}, ipcMemLazyEnablePeerAccess)
	if recs := trace.Since(seq); len(recs) != 1 || recs[0].Name != "cuIpcOpenMemHandle_v2" ||
		!strings.HasPrefix(recs[0].Args, "handle=0102000000") {
		t.Errorf("cuIpcOpenMemHandle_v2: %+v", recs)
	}
}

func BenchmarkTracedCallOff(b *testing.B) {
	trace.Off()
	_, fn := tracedFake(b)
	var h uint64
	prop := memAllocationProp{}
	b.ReportAllocs()
	for b.Loop() {
		fn(&h, 2<<20, &prop, 0)
	}
}

func BenchmarkBareCall(b *testing.B) {
	fn := fakeMemCreate
	var h uint64
	prop := memAllocationProp{}
	b.ReportAllocs()
	for b.Loop() {
		fn(&h, 2<<20, &prop, 0)
	}
}

func BenchmarkTracedCallOn(b *testing.B) {
	_, fn := tracedFake(b)
	trace.On()
	defer trace.Off()
	var h uint64
	prop := memAllocationProp{}
	b.ReportAllocs()
	for b.Loop() {
		fn(&h, 2<<20, &prop, 0)
	}
}
