package hip

import (
	"reflect"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/trace"
)

// fakeMemCreate stands in for hipMemCreate: the trace tests never need the
// runtime.
func fakeMemCreate(h *uintptr, size uint64, prop *allocProp, flags uint64) uint32 {
	if size == 0 {
		return errInvalidValue
	}
	*h = 0x7000
	return errSuccess
}

func tracedFake() (*lib, func(*uintptr, uint64, *allocProp, uint64) status) {
	l := &lib{missing: map[string]string{}}
	var fn func(*uintptr, uint64, *allocProp, uint64) status
	s := binding.Sym4(&fn, l.end, ">handle:x size prop flags:x", "hipMemCreate")
	*s.Raw.(*func(*uintptr, uint64, *allocProp, uint64) uint32) = fakeMemCreate
	s.Bind(s.Name())
	return l, fn
}

// TestTraceOffZeroAllocs: with tracing off a traced entry point costs no
// allocation, whether it succeeds or fails (no hipGetErrorName either).
func TestTraceOffZeroAllocs(t *testing.T) {
	trace.Off()
	_, fn := tracedFake()
	var h uintptr
	var p allocProp
	ok := testing.AllocsPerRun(1000, func() { fn(&h, 2<<20, &p, 0) })
	bad := testing.AllocsPerRun(1000, func() { fn(&h, 0, &p, 0) })
	if ok != 0 || bad != 0 {
		t.Fatalf("tracing off: %v allocs per successful call, %v per failed call; want 0", ok, bad)
	}
}

func TestTraceRecordsCall(t *testing.T) {
	l, fn := tracedFake()
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	var h uintptr
	var p allocProp
	fn(&h, 2<<20, &p, 0)
	fn(&h, 0, &p, 0)
	l.beginProbe()
	fn(&h, 0, &p, 0)
	l.endProbe()
	recs := trace.Since(seq)
	for _, r := range recs {
		t.Log(trace.Line(r, 0))
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	if r := recs[0]; r.Name != "hipMemCreate" || r.Err || r.CodeName != "hipSuccess" || r.Code != 0 {
		t.Errorf("success: %+v", r)
	}
	if r := recs[1]; !r.Err || r.Code != errInvalidValue || r.CodeName != "hipError 1" {
		t.Errorf("failure (no hipGetErrorName bound): %+v", r)
	}
	if r := recs[2]; r.Err || r.Code != errInvalidValue {
		t.Errorf("probe failure: %+v", r)
	}
}

// TestEveryEntryPointTraced binds every symbol of the table to a stand-in
// of its type, wraps it as open does, calls it and checks the trace got one
// record under its name (none for the error-name lookups).
func TestEveryEntryPointTraced(t *testing.T) {
	l := &lib{missing: map[string]string{}}
	syms := l.symbols()
	if err := binding.Validate(syms); err != nil {
		t.Fatal(err)
	}
	if len(syms) != len(requiredSymbols)+len(optionalSymbols) {
		t.Fatalf("%d symbols in the table", len(syms))
	}
	checkTraced(t, syms, func(n string) bool {
		// hipEventQuery and hipStreamQuery: the watchdog's looks (watch.go)
		return n == "hipGetErrorName" || n == "hipGetErrorString" || n == "hipEventQuery" || n == "hipStreamQuery"
	})
}

// TestEveryHSAEntryPointTraced: the hsa-fine kind's libhsa-runtime64 table
// goes through the same trace point, hsa_status_string alone untraced.
func TestEveryHSAEntryPointTraced(t *testing.T) {
	var h hsaLib
	syms := h.symbols()
	if err := binding.Validate(syms); err != nil {
		t.Fatal(err)
	}
	checkTraced(t, syms, func(n string) bool { return n == "hsa_status_string" })
}

// checkTraced calls every traced entry of syms, bound to a zero-returning
// stand-in, and wants one trace record of it, not an error.
func checkTraced(t *testing.T, syms []binding.Symbol, untracedName func(string) bool) {
	t.Helper()
	trace.On()
	t.Cleanup(trace.Off)
	for _, s := range syms {
		fv := reflect.ValueOf(s.Raw).Elem()
		ft := fv.Type()
		fv.Set(reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, ft.NumOut())
			for i := range out {
				out[i] = reflect.Zero(ft.Out(i))
			}
			return out
		}))
		untraced := untracedName(s.Name())
		if (s.Bind == nil) != untraced {
			t.Errorf("%s: traced=%v", s.Name(), s.Bind != nil)
		}
		if s.Bind == nil {
			continue
		}
		s.Bind(s.Name())
		fv = reflect.ValueOf(s.Fn).Elem()
		args := make([]reflect.Value, ft.NumIn())
		for i := range args {
			args[i] = reflect.Zero(ft.In(i))
		}
		seq := trace.Seq()
		fv.Call(args)
		recs := trace.Since(seq)
		if len(recs) != 1 || recs[0].Name != s.Name() || recs[0].Err || recs[0].InFlight {
			t.Errorf("%s: records %+v", s.Name(), recs)
		}
	}
}

func BenchmarkTracedCallOff(b *testing.B) {
	trace.Off()
	_, fn := tracedFake()
	var h uintptr
	var p allocProp
	b.ReportAllocs()
	for b.Loop() {
		fn(&h, 2<<20, &p, 0)
	}
}

func BenchmarkBareCall(b *testing.B) {
	fn := fakeMemCreate
	var h uintptr
	var p allocProp
	b.ReportAllocs()
	for b.Loop() {
		fn(&h, 2<<20, &p, 0)
	}
}

// TestTraceRealRuntime traces a real call into the installed runtime
// (bookworm's libamdhip64.so.5 in CI) on a machine without an AMD GPU:
// hipGetDeviceCount fails and the record carries hipGetErrorName's name.
func TestTraceRealRuntime(t *testing.T) {
	trace.On()
	t.Cleanup(trace.Off)
	var l *lib
	for _, n := range libNames {
		if x, err := open(n, false); err == nil {
			l = x
			break
		}
	}
	if l == nil {
		t.Skip("no libamdhip64 installed")
	}
	seq := trace.Seq()
	var n int32
	st := l.getDeviceCount(&n)
	recs := trace.Since(seq)
	for _, r := range recs {
		t.Log(trace.Line(r, 0))
	}
	if len(recs) != 1 || recs[0].Name != "hipGetDeviceCount" || recs[0].Code != int64(st.Code) || st.Call != "hipGetDeviceCount" {
		t.Fatalf("records %+v (status %+v)", recs, st)
	}
	if st.Code == errNoDevice && (recs[0].CodeName != "hipErrorNoDevice" || !recs[0].Err) {
		t.Errorf("no device: %+v", recs[0])
	}
}
