package binding

import (
	"os"
	"strings"
	"testing"

	"p2patomics/trace"
)

type code int32

func end(sp trace.Span, r code, out func() string) {
	if sp != (trace.Span{}) {
		sp.EndStatus(int64(r), "code", r != 0, out)
	}
}

// TestStatusCarriesBoundName: the Status of a call names the symbol
// actually bound, so a call site never spells it.
func TestStatusCarriesBoundName(t *testing.T) {
	var fn func(a, b int32) Status[code]
	s := Sym2(&fn, end, "a b", "fooV2", "foo")
	if err := BindFuncs([]Symbol{s}, map[string]any{"fooV2": func(a, b int32) code { return code(a - b) }}, nil); err != nil {
		t.Fatal(err)
	}
	if st := fn(5, 3); st.Call != "fooV2" || st.Code != 2 {
		t.Fatalf("got %+v", st)
	}
	s.Bind("foo") // the fallback name was the one found
	if st := fn(1, 1); st.Call != "foo" || st.Code != 0 {
		t.Fatalf("got %+v", st)
	}
}

// TestTraceOffZeroAllocs: the Status layer adds no allocation to a traced
// call with tracing off.
func TestTraceOffZeroAllocs(t *testing.T) {
	trace.Off()
	var fn func(*int64, int64, int64, int64) Status[code]
	s := Sym4(&fn, end, ">x a b c", "f")
	*s.Raw.(*func(*int64, int64, int64, int64) code) = func(p *int64, a, b, c int64) code { *p = a; return code(b) }
	s.Bind("f")
	var x int64
	if n := testing.AllocsPerRun(1000, func() { fn(&x, 1, 2, 3) }); n != 0 {
		t.Fatalf("%v allocs per call", n)
	}
}

func TestTraceRecordsUnderBoundName(t *testing.T) {
	var fn func(int32) Status[code]
	s := Sym1(&fn, end, "a", "bar_v2", "bar")
	*s.Raw.(*func(int32) code) = func(a int32) code { return code(a) }
	s.Bind("bar")
	trace.On()
	t.Cleanup(trace.Off)
	seq := trace.Seq()
	fn(7)
	recs := trace.Since(seq)
	if len(recs) != 1 || recs[0].Name != "bar" || recs[0].Code != 7 || !recs[0].Err || recs[0].Args != "a=7" {
		t.Fatalf("records %+v", recs)
	}
}

// TestBindAgainstLibc binds a table against a real library that has one of
// its symbols: the one found is bound and callable, the others are listed
// missing, sorted.
func TestBindAgainstLibc(t *testing.T) {
	h, err := Dlopen("libc.so.6", 2 /* RTLD_NOW */, "RTLD_NOW", true)
	if err != nil {
		t.Skipf("libc.so.6: %v", err)
	}
	var getpid func() Status[code]
	var nope func() Status[code]
	var zzz func() Status[code]
	table := []Symbol{Sym0(&zzz, end, "zz_none"), Sym0(&getpid, end, "no_such_getpid", "getpid"), Sym0(&nope, end, "aa_none")}
	if err := Validate(table); err != nil {
		t.Fatal(err)
	}
	bound, missing := Bind(h, table)
	if bound["no_such_getpid"] != "getpid" || strings.Join(missing, ",") != "aa_none,zz_none" {
		t.Fatalf("bound %v missing %v", bound, missing)
	}
	if st := getpid(); st.Call != "getpid" || st.Code <= 0 {
		t.Fatalf("getpid: %+v", st)
	}
	if p := Loaded("libc.so"); !strings.HasPrefix(p, "/") || !strings.Contains(p, "libc.so") {
		t.Errorf("Loaded(libc.so) = %q, want the mapped file", p)
	}
}

// TestValidateRejects plants the mistakes Validate exists for.
func TestValidateRejects(t *testing.T) {
	var st func() Status[code]
	var raw func() code
	for name, table := range map[string][]Symbol{
		"struct raw": {Untraced(&st, "a")},
		"twice":      {Untraced(&raw, "a"), Untraced(&raw, "a")},
		"not a func": {Untraced(new(int), "a")},
		"no name":    {{Raw: &raw, Fn: &raw}},
	} {
		if err := Validate(table); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
	if err := Validate([]Symbol{Untraced(&raw, "a"), Sym0(&st, end, "b")}); err != nil {
		t.Errorf("good table: %v", err)
	}
}

func TestBindFuncs(t *testing.T) {
	var a, b func(int32) Status[code]
	table := []Symbol{Sym1(&a, end, "x", "a"), Sym1(&b, end, "x", "b")}
	var unbound []string
	if err := BindFuncs(table, map[string]any{"a": func(x int32) code { return 1 }}, func(n string) { unbound = append(unbound, n) }); err != nil {
		t.Fatal(err)
	}
	if a(0).Code != 1 || b(0).Code != 0 || len(unbound) != 1 || unbound[0] != "b" {
		t.Fatalf("a=%v b=%v unbound=%v", a(0), b(0), unbound)
	}
	err := BindFuncs(table, map[string]any{"a": func(x int64) code { return 1 }}, nil)
	if err == nil || !strings.Contains(err.Error(), "fake a is a func(int64)") {
		t.Errorf("wrong type: %v", err)
	}
	err = BindFuncs(table, map[string]any{"c": func(x int32) code { return 1 }}, nil)
	if err == nil || !strings.Contains(err.Error(), "[c]") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestCandidates(t *testing.T) {
	dir := t.TempDir()
	got := Candidates([]string{"liba.so.2", "liba.so.1"}, nil, []string{"", dir + "/absent", dir, dir})
	want := []string{"liba.so.2", "liba.so.1", dir + "/liba.so.2", dir + "/liba.so.1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v want %v", got, want)
	}
}

// TestCandidatesRocmPathFirst (issue 30, N6): the directory the user named
// ($ROCM_PATH/lib) comes before the loader's own search, so a distro ROCm
// 5.x in the loader path cannot shadow it (a44624c listed the bare soname
// first); OtherOnDisk names what a loaded library shadowed.
func TestCandidatesRocmPathFirst(t *testing.T) {
	user, opt := t.TempDir(), t.TempDir()
	got := Candidates([]string{"liba.so.1"}, []string{user}, []string{user, opt})
	want := []string{user + "/liba.so.1", "liba.so.1", opt + "/liba.so.1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v want %v", got, want)
	}
	if err := os.WriteFile(opt+"/liba.so.1", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := OtherOnDisk(got, "/usr/lib/liba.so.1"); len(o) != 1 || o[0] != opt+"/liba.so.1" {
		t.Errorf("OtherOnDisk: %v", o)
	}
	if o := OtherOnDisk(got, opt+"/liba.so.1"); len(o) != 0 {
		t.Errorf("OtherOnDisk names the loaded library itself: %v", o)
	}
}
