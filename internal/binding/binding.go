// Package binding is the purego plumbing every vendor binding (rank/cuda,
// rank/hip, rank/hsa) shares: a symbol table whose entries name each C entry
// point once, the traced dlopen, the dlsym loop that binds a table, and the
// wrappers that put every bound function behind the trace point.
//
// Each backend still owns its library: its handle, its table, the Go types of
// its entry points, how its status codes are named and what a failure
// becomes (its check). This package knows no vendor and imports no backend.
//
// A status-returning entry point is bound in two layers: purego registers the
// C address into a raw func(...) C (C the vendor's status type), the trace
// wraps that, and the field the backend calls returns Status[C], the code
// together with the symbol name it came from. A call site therefore reads
// l.check(l.memCreate(...)): the name is spelled only in the table.
package binding

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/ebitengine/purego"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// Code is a C status enum as a binding declares it (CUresult,
// hipError_t, hsa_status_t).
type Code interface{ ~int32 | ~uint32 }

// Status is what a bound status-returning entry point returns: the C status
// and the name of the symbol that returned it (the name actually bound, e.g.
// cuEventElapsedTime where the _v2 is absent).
type Status[C Code] struct {
	Call string
	Code C
}

// Symbol is one entry of a binding table.
type Symbol struct {
	// Names are the symbols to try, in order; the first is the entry
	// point's name in errors and in the table's missing list.
	Names []string
	// Raw is the *func(...) that purego.RegisterFunc binds the address to.
	Raw any
	// Fn is the *func(...) the backend calls: Raw itself for untraced and
	// value-returning entries, the Status-returning field otherwise.
	Fn any
	// Bind puts Raw behind the trace point and fills Fn, under the name
	// actually bound; nil for an untraced entry (Fn is Raw).
	Bind func(bound string)
	// Injected says a call of the entry asks the driver-fault injector
	// first (internal/inject): every status entry (SymN, Launch) and a
	// Manual one. inject.Symbols lists exactly these entries' names.
	Injected bool
}

// Name is the entry point's first (preferred) name.
func (s Symbol) Name() string { return s.Names[0] }

// Untraced binds fn directly: the error-name lookups, which only word a
// result for the trace and for errors.
func Untraced(fn any, names ...string) Symbol { return Symbol{Names: names, Raw: fn, Fn: fn} }

// Manual binds fn directly for a backend that wraps the call itself (a
// signature the SymN family cannot carry, such as cuIpcOpenMemHandle_v2's
// by-value handle): the backend's wrapper asks Injected before it calls,
// and its own test shows that it does.
func Manual(fn any, names ...string) Symbol {
	return Symbol{Names: names, Raw: fn, Fn: fn, Injected: true}
}

// status returns the Bind of a status entry: wrap raw with the trace (wrap
// is one of trace.WrapN, already given the argSpec) and make fn return the
// Status under the bound name.
func status[R, F any](names []string, fn *F, mk func(raw *R, name string) F) Symbol {
	raw := new(R)
	return Symbol{Names: names, Raw: raw, Fn: fn, Bind: func(bound string) { *fn = mk(raw, bound) }, Injected: true}
}

// The arity families (Sym0…Sym10, Value1…5, Void1…2) are generated into
// zz_arity.go by genarity from one template, with a test over every arity
// (zz_arity_test.go): a change that crosses every arity, as the injector's
// guard did, is made there once. Launch below is the one hand-written
// status entry: its trace shows the grid and block as triples.
//
//go:generate go run ./genarity -root ../..

// Launch is the entry of a kernel launch with the CUDA/HIP shape (function,
// grid and block triples, shared bytes, stream, params, extra): the trace
// shows grid and block as triples under the vendor's argument names.
func Launch[C Code](fn *func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) Status[C],
	end trace.Ender[C], sharedName, paramsName string, names ...string) Symbol {
	type launch = func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) C
	type launchStatus = func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) Status[C]
	return status(names, fn, func(raw *launch, name string) launchStatus {
		f := *raw
		return func(fu uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream, params, extra uintptr) Status[C] {
			if st, skip := injected(names, name, end); skip {
				return st
			}
			sp := trace.Begin(name, func() string {
				return trace.KV("f", trace.Hex(fu), "grid", dim3(gx, gy, gz), "block", dim3(bx, by, bz),
					sharedName, shared, "stream", trace.Hex(stream), paramsName, trace.Hex(params), "extra", trace.Hex(extra))
			})
			r := f(fu, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
			end(sp, r, nil)
			return Status[C]{name, r}
		}
	})
}

// injected is the binding choke point's seam of the driver-fault injector
// (internal/inject): when a rule names the entry point (its first name or
// the one bound) the call is not made and the rule's status is returned,
// recorded in the trace the vendor's way, so the case's evidence shows the
// call as failed (fail) or as a success that did nothing (noop).
//
// A hang rule (hang, hang-at) wedges the call instead: its record is begun
// and never ended, so the ring shows it in flight for the parent to name,
// and the rank's thread stays in it until the harness kills the rank.
func injected[C Code](names []string, bound string, end trace.Ender[C]) (Status[C], bool) {
	return Injected(names, bound, end)
}

// Injected is the seam for a Manual entry's own wrapper: skip says the
// call is not to be made and st is what it returns instead.
func Injected[C Code](names []string, bound string, end trace.Ender[C]) (st Status[C], skip bool) {
	if r, wedge := inject.Wedge(bound, names...); wedge {
		trace.Begin(bound, func() string { return "injected " + r.String() + ": never returns" })
		inject.Block()
	}
	code, skip, r := inject.Call(bound, names...)
	if !skip {
		return Status[C]{}, false
	}
	sp := trace.Begin(bound, func() string { return "injected " + r.String() + ": not called" })
	end(sp, C(code), nil)
	return Status[C]{bound, C(code)}, true
}

func dim3(x, y, z uint32) string { return fmt.Sprintf("(%d,%d,%d)", x, y, z) }

// value wraps an entry point in place: for the ones that return a value,
// not a status (HSA signal loads and waits, queue indices, signal stores).
func value[F any](fn *F, names []string, mk func(f F, name string) F) Symbol {
	return Symbol{Names: names, Raw: fn, Fn: fn, Bind: func(bound string) { *fn = mk(*fn, bound) }}
}

// returned is how a value entry's record shows its result: "returned=N",
// after the inputs (the record's code stays 0).
func returned[R int64 | uint64](v R) string { return "returned=" + fmt.Sprint(v) }

// Dlopen opens path with the trace recording the attempt. lastTry says
// whether a failure ends the search (earlier candidates are probes: their
// failure is recorded but not marked as the failing call).
func Dlopen(path string, flags int, flagNames string, lastTry bool) (uintptr, error) {
	sp := trace.Begin("dlopen", func() string { return trace.KV("path", path, "flags", flagNames) })
	h, err := purego.Dlopen(path, flags)
	if err != nil {
		sp.EndStatus(-1, err.Error(), lastTry, nil)
		return 0, err
	}
	if path == pinned {
		if err := checkMapped(path, "/proc/self/maps"); err != nil {
			sp.EndStatus(-1, err.Error(), true, nil)
			return 0, err
		}
	}
	sp.End(0, "OK", func() string { return "handle=" + trace.Hex(h) })
	return h, nil
}

// Candidates lists where to look for a library: each soname in each of
// first that exists, then each soname bare (the loader's own search:
// LD_LIBRARY_PATH, ld.so.cache), then in each of dirs that exists, in
// order. first is $ROCM_PATH/lib when the user set it, as Triton's AMD
// driver does: a distro ROCm 5.x in the loader path must not shadow the
// install the user named (ROCr cannot be loaded twice, so the search cannot
// fall back after a dlopen). A ROCm install whose lib directory is not in
// the loader config (AMD's install guide makes that a manual step) is found
// through dirs (/opt/rocm/lib).
func Candidates(sonames, first, dirs []string) []string {
	if pinned != "" {
		// An A/B run's stack B: exactly the named file, no search (a
		// fallback would judge a stack nobody named).
		return []string{pinned}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	inDirs := func(ds []string) {
		for _, d := range ds {
			if d == "" {
				continue
			}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				continue
			}
			for _, n := range sonames {
				add(filepath.Join(d, n))
			}
		}
	}
	inDirs(first)
	for _, n := range sonames {
		add(n)
	}
	inDirs(dirs)
	return out
}

// OtherOnDisk lists the candidates with a directory that exist as files
// and are not the library the process loaded (loaded: its mapped path):
// the runtimes a too-old loaded one shadowed, for its skip to name.
func OtherOnDisk(cands []string, loaded string) []string {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	me := real(loaded)
	var out []string
	for _, c := range cands {
		if !strings.Contains(c, "/") {
			continue
		}
		if fi, err := os.Stat(c); err != nil || fi.IsDir() || real(c) == me {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Loaded is the file the process actually mapped for handle's library,
// from /proc/self/maps (the soname alone does not say which install): the
// first mapped path whose base name starts with base. "" if not found.
func Loaded(base string) string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		p := line[i:]
		if strings.HasPrefix(filepath.Base(p), base) {
			return p
		}
	}
	return ""
}

// Bind resolves every symbol of table in the library handle h: the first of
// its Names that dlsym finds is registered into Raw and, for a traced entry,
// Bind puts it behind the trace point under that name. It returns the names
// bound (first name -> the name found) and, sorted, the first names of the
// entries it could not find; what an absent entry means is the backend's
// call (absent stand-in, optional feature, broken install).
func Bind(h uintptr, table []Symbol) (bound map[string]string, missing []string) {
	bound = map[string]string{}
	for _, s := range table {
		for _, name := range s.Names {
			addr, err := purego.Dlsym(h, name)
			if err != nil || addr == 0 {
				continue
			}
			purego.RegisterFunc(s.Raw, addr)
			bound[s.Name()] = name
			if s.Bind != nil {
				s.Bind(name)
			}
			break
		}
		if bound[s.Name()] == "" {
			missing = append(missing, s.Name())
		}
	}
	sort.Strings(missing)
	return bound, missing
}

// BindFuncs binds table to Go functions instead of a library's addresses:
// the tests' fakes of a binding's function table, which exercise a
// backend's logic through the same wrappers and Status values a real
// library gets. fns maps an entry's first name to a function of its Raw
// type; every other entry gets a stand-in that calls unbound(name) and
// returns zero values (a zero status is success in every vendor's enum, so
// unbound should fail the test). A key that names no entry or a function of
// the wrong type is an error.
func BindFuncs(table []Symbol, fns map[string]any, unbound func(name string)) error {
	left := map[string]bool{}
	for k := range fns {
		left[k] = true
	}
	for _, s := range table {
		rv := reflect.ValueOf(s.Raw).Elem()
		name := s.Name()
		if f, ok := fns[name]; ok {
			delete(left, name)
			fv := reflect.ValueOf(f)
			if fv.Type() != rv.Type() {
				return fmt.Errorf("fake %s is a %s, the table binds a %s", name, fv.Type(), rv.Type())
			}
			rv.Set(fv)
		} else {
			t := rv.Type()
			rv.Set(reflect.MakeFunc(t, func([]reflect.Value) []reflect.Value {
				if unbound != nil {
					unbound(name)
				}
				out := make([]reflect.Value, t.NumOut())
				for i := range out {
					out[i] = reflect.Zero(t.Out(i))
				}
				return out
			}))
		}
		if s.Bind != nil {
			s.Bind(name)
		}
	}
	if len(left) > 0 {
		names := make([]string, 0, len(left))
		for k := range left {
			names = append(names, k)
		}
		sort.Strings(names)
		return fmt.Errorf("fakes for symbols not in the table: %v", names)
	}
	return nil
}

// Validate checks a table before anything is bound: every Raw is a pointer
// to a func whose results purego can return (no struct: a Status-returning
// Raw would panic in RegisterFunc on the first machine with the library),
// every Fn a pointer to a func, and no first name twice.
func Validate(table []Symbol) error {
	seen := map[string]bool{}
	for _, s := range table {
		if len(s.Names) == 0 {
			return fmt.Errorf("a table entry has no name")
		}
		n := s.Name()
		if seen[n] {
			return fmt.Errorf("%s is in the table twice", n)
		}
		seen[n] = true
		for _, f := range []any{s.Raw, s.Fn} {
			t := reflect.TypeOf(f)
			if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Func {
				return fmt.Errorf("%s: %v is not a pointer to a func", n, t)
			}
		}
		rt := reflect.TypeOf(s.Raw).Elem()
		for i := range rt.NumOut() {
			if k := rt.Out(i).Kind(); k == reflect.Struct || k == reflect.String {
				return fmt.Errorf("%s: the raw binding returns a %s, which purego cannot return", n, rt.Out(i))
			}
		}
		if s.Bind == nil && s.Raw != s.Fn {
			return fmt.Errorf("%s: untraced but its Fn is not its Raw", n)
		}
	}
	return nil
}

// ROCmPathDir is $ROCM_PATH/lib when the user set it, else nil: Candidates'
// first, searched before the loader's path (Candidates says why). The HSA
// and HIP backends share it, so both runtimes are looked for in one order.
func ROCmPathDir() []string {
	if r := os.Getenv("ROCM_PATH"); r != "" {
		return []string{filepath.Join(r, "lib")}
	}
	return nil
}

// ROCmLibDirs are searched after the loader's own path: AMD's install guide
// leaves adding /opt/rocm/lib to the loader config as a manual step, so a
// host that skipped it still finds the runtime ($ROCM_PATH first, as
// Triton's AMD driver does).
func ROCmLibDirs() []string {
	return append(ROCmPathDir(), "/opt/rocm/lib")
}

// Shadowed names the other runtimes on disk (OtherOnDisk) for a too-old
// loaded one's skip: "" when there are none.
func Shadowed(others []string) string {
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("; a different runtime is on disk: %s (set ROCM_PATH to its install)", strings.Join(others, ", "))
}

// pinned is the library file the hello named (wire.Settings.Library): an
// A/B run's stack B. Set once, before the backend opens; "" otherwise.
var pinned string

// Pin makes path the one library this process loads for its backend
// (Candidates returns it alone, Library returns it for a fixed soname) and
// makes Dlopen check that the process then maps that very file. "" unpins.
func Pin(path string) { pinned = path }

// Library is the path to dlopen for a backend whose library has one fixed
// soname (libcuda.so.1): the pinned file when one is pinned, else soname
// for the loader's own search.
func Library(soname string) string {
	if pinned != "" {
		return pinned
	}
	return soname
}

// ErrNotMapped is a pinned library the process did not map after loading
// it: the loader resolved the name to another file (an LD_PRELOAD, an
// already-loaded library of the same soname), so the stack under test is
// not the one named.
var ErrNotMapped = errors.New("the library named is not the one the process mapped")

// checkMapped reports whether the file path names (symlinks resolved) is
// mapped in maps (a /proc/<pid>/maps): an A/B run must judge the stack it
// named, never one the loader substituted.
func checkMapped(path, maps string) error {
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		want = path
	}
	b, err := os.ReadFile(maps)
	if err != nil {
		return fmt.Errorf("%s: reading %s to check the library mapped: %w", path, maps, err)
	}
	var same []string
	base := soBase(filepath.Base(want))
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		p := strings.TrimSuffix(line[i:], " (deleted)")
		if p == want {
			return nil
		}
		if strings.HasPrefix(filepath.Base(p), base) && !slices.Contains(same, p) {
			same = append(same, p)
		}
	}
	return fmt.Errorf("%s (%s) was named but the process mapped %s: %w", path, want, orNone(same), ErrNotMapped)
}

// soBase is a library file name up to ".so" ("libcuda" of libcuda.so.550.54.15).
func soBase(name string) string {
	if i := strings.Index(name, ".so"); i > 0 {
		return name[:i]
	}
	return name
}

func orNone(ps []string) string {
	if len(ps) == 0 {
		return "no library of that name"
	}
	return strings.Join(ps, ", ")
}
