package hsa

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"p2patomics/internal/binding"
	"p2patomics/trace"
)

// fakeHandleCreate stands in for hsa_amd_vmem_handle_create: the trace
// tests never need the runtime.
func fakeHandleCreate(pool uint64, size uint64, typ uint32, flags uint64, out *uint64) uint32 {
	if size == 0 {
		return statusErrorInvalidArgument
	}
	*out = 0x5000
	return statusSuccess
}

func tracedFake() (*lib, func(uint64, uint64, uint32, uint64, *uint64) status) {
	l := &lib{missing: map[string]string{}}
	var fn func(uint64, uint64, uint32, uint64, *uint64) status
	s := binding.Sym5(&fn, l.end, "pool:x size type flags:x >memory_handle:x", "hsa_amd_vmem_handle_create")
	*s.Raw.(*func(uint64, uint64, uint32, uint64, *uint64) uint32) = fakeHandleCreate
	s.Bind(s.Name())
	return l, fn
}

// TestTraceOffZeroAllocs: with tracing off a traced entry point costs no
// allocation, whether it succeeds or fails.
func TestTraceOffZeroAllocs(t *testing.T) {
	trace.Off()
	_, fn := tracedFake()
	var h uint64
	ok := testing.AllocsPerRun(1000, func() { fn(0x1234, 2<<20, 0, 0, &h) })
	bad := testing.AllocsPerRun(1000, func() { fn(0x1234, 0, 0, 0, &h) })
	var sig int64
	load := func(uint64) int64 { return sig }
	binding.Value1(&load, "signal:x", "hsa_signal_load_relaxed").Bind("hsa_signal_load_relaxed")
	val := testing.AllocsPerRun(1000, func() { load(7) })
	if ok != 0 || bad != 0 || val != 0 {
		t.Fatalf("tracing off: %v allocs per successful call, %v per failed call, %v per value call; want 0", ok, bad, val)
	}
}

func TestTraceRecordsCall(t *testing.T) {
	l, fn := tracedFake()
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	var h uint64
	fn(0x1234, 2<<20, 0, 0, &h)
	fn(0x1234, 0, 0, 0, &h)
	l.beginProbe()
	fn(0x1234, 0, 0, 0, &h)
	l.endProbe()
	recs := trace.Since(seq)
	for _, r := range recs {
		t.Log(trace.Line(r, 0))
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	if r := recs[0]; r.Name != "hsa_amd_vmem_handle_create" || r.Err || r.CodeName != "HSA_STATUS_SUCCESS" ||
		r.Args != "pool=0x1234, size=2097152, type=0, flags=0x0; memory_handle=0x5000" {
		t.Errorf("success: %+v", r)
	}
	if r := recs[1]; !r.Err || r.Code != 0x1001 || r.CodeName != "HSA_STATUS_ERROR_INVALID_ARGUMENT" {
		t.Errorf("failure: %+v", r)
	}
	if r := recs[2]; r.Err || r.Code != 0x1001 {
		t.Errorf("probe failure: %+v", r)
	}
}

// TestEveryEntryPointTraced binds every symbol of the table to a stand-in
// of its type, wraps it as open does, calls it and checks the trace got one
// record under its name (none for hsa_status_string).
func TestEveryEntryPointTraced(t *testing.T) {
	l := &lib{missing: map[string]string{}}
	syms := l.symbols()
	if err := binding.Validate(syms); err != nil {
		t.Fatal(err)
	}
	if len(syms) != len(requiredSymbols)+len(optionalSymbols) {
		t.Fatalf("%d symbols in the table", len(syms))
	}
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
		if (s.Bind == nil) != (s.Name() == "hsa_status_string") {
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

// TestTraceRealRuntime traces real calls into the installed runtime
// (bookworm's ROCm 5.2 in CI): dlopen, and hsa_init failing without
// /dev/kfd with its status name.
func TestTraceRealRuntime(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("/dev/kfd exists")
	}
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	l, err := open(libName, true)
	if err != nil {
		t.Skipf("%s not installed: %v", libName, err)
	}
	st := l.init_()
	recs := trace.Since(seq)
	for _, r := range recs {
		t.Log(trace.Line(r, 0))
	}
	if len(recs) != 2 || recs[0].Name != "dlopen" || recs[1].Name != "hsa_init" ||
		recs[1].Code != int64(st.Code) || recs[1].CodeName != statusName(st.Code) || recs[1].Err != (st.Code != statusSuccess) {
		t.Fatalf("records %+v (status 0x%x)", recs, st)
	}
	if !strings.HasPrefix(recs[1].CodeName, "HSA_STATUS_") {
		t.Errorf("status name %q", recs[1].CodeName)
	}
}

func BenchmarkTracedCallOff(b *testing.B) {
	trace.Off()
	_, fn := tracedFake()
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		fn(0x1234, 2<<20, 0, 0, &h)
	}
}

func BenchmarkBareCall(b *testing.B) {
	fn := fakeHandleCreate
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		fn(0x1234, 2<<20, 0, 0, &h)
	}
}
