package ab

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// TestPairedFixedSamples: the paired test on fixed ratios, checked by
// hand: ratios 0.5, 0.5, 0.5 are a -50 % change with no spread; 1.02,
// 0.98, 1.00 have mean log ratio ~0 and a t(2) interval of about ±5 %.
func TestPairedFixedSamples(t *testing.T) {
	c, lo, hi, ok := Paired([]float64{0.5, 0.5, 0.5})
	if !ok || math.Abs(c+0.5) > 1e-12 || math.Abs(lo+0.5) > 1e-12 || math.Abs(hi+0.5) > 1e-12 {
		t.Fatalf("halved: %v %v %v %v", c, lo, hi, ok)
	}
	c, lo, hi, ok = Paired([]float64{1.02, 0.98, 1.00})
	// logs: 0.019803, -0.020203, 0 → mean -0.0001333, sd 0.020003, se 0.011549, h = 4.303*se = 0.049695
	if !ok || math.Abs(c-(math.Exp(-0.000133)-1)) > 1e-5 || math.Abs(lo-(math.Exp(-0.000133-0.049695)-1)) > 1e-4 ||
		math.Abs(hi-(math.Exp(-0.000133+0.049695)-1)) > 1e-4 {
		t.Fatalf("noise: %v [%v, %v] %v", c, lo, hi, ok)
	}
	if _, _, _, ok := Paired([]float64{0.9}); ok {
		t.Fatal("one block gave an interval")
	}
	if _, _, _, ok := Paired([]float64{0.9, 0}); ok {
		t.Fatal("a zero ratio gave an interval")
	}
}

// TestDecide: a regression needs the whole interval beyond the minimum
// effect in the worse direction; noise straddling it, or a real change
// smaller than it, is no difference.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		sign   int
		want   string
	}{
		{-0.52, -0.48, +1, report.ABPerfRegression},  // a rate halved
		{0.48, 0.52, -1, report.ABPerfRegression},    // a time up 50 %
		{-0.12, -0.03, +1, report.ABNoDifference},    // straddles -8 %
		{-0.05, -0.04, +1, report.ABNoDifference},    // real, under the minimum effect
		{0.10, 0.20, +1, report.ABPerfImprovement},   // a rate up
		{-0.30, -0.10, -1, report.ABPerfImprovement}, // a time down
		{-0.30, -0.10, 0, report.ABNoDifference},     // no direction: never judged
	} {
		if got := Decide(c.lo, c.hi, 0.08, c.sign); got != c.want {
			t.Errorf("Decide(%v, %v, sign %d) = %s, want %s", c.lo, c.hi, c.sign, got, c.want)
		}
	}
}

func metric(med float64) map[string]report.Metric {
	return map[string]report.Metric{"bw_copy_gbps": {Unit: "GB/s", Median: med, N: 5, Better: report.Higher},
		"count": {Unit: "", Median: 3, N: 5}}
}

// res is a perf case's result on a GPU backend (its metrics gated, as
// perf.Gated gates them).
func res(o report.Outcome, med float64) report.Result {
	return report.Result{Case: report.ParseCase("cuda.vmm.perf.copy_ce_write.r0r1", nil), Labels: []string{"perf"},
		Outcome: o, Expected: report.Pass, Metrics: metric(med)}
}

// TestJudgeAA: the same numbers on both sides, block by block, with
// block-to-block drift both share, are no difference at all.
func TestJudgeAA(t *testing.T) {
	c := Case{ID: "cuda.vmm.copy.one", A: []report.Result{res(report.Pass, 100), res(report.Pass, 90), res(report.Pass, 110)},
		B: []report.Result{res(report.Pass, 101), res(report.Pass, 89), res(report.Pass, 111)}}
	a := Judge("same", 3, report.ABStack{Side: "A"}, report.ABStack{Side: "B"}, []Case{c})
	if a.Differs() || len(a.Pairs) != 1 || a.Pairs[0].Change != report.ABSame {
		t.Fatalf("A/A differs: %+v", a)
	}
	ms := a.Pairs[0].Metrics
	if len(ms) != 1 || ms[0].Name != "bw_copy_gbps" || ms[0].Verdict != report.ABNoDifference || ms[0].Tolerance != 0.08 {
		t.Fatalf("metrics: %+v (the undirected count must not be paired)", ms)
	}
}

// TestJudgeHostNotGated: the host's metrics are paired and shown but
// gate nothing (perf.Gated), however far apart: a halved host copy is
// not-gated, never a perf regression.
func TestJudgeHostNotGated(t *testing.T) {
	host := func(med float64) report.Result {
		r := res(report.Pass, med)
		r.Case = report.ParseCase("host.memfd.perf.copy_ce_write.r0r1", nil)
		return r
	}
	c := Case{ID: "host.memfd.perf.copy_ce_write.r0r1", A: []report.Result{host(100), host(100), host(100)}, B: []report.Result{host(50), host(50), host(50)}}
	a := Judge("same", 3, report.ABStack{Side: "A"}, report.ABStack{Side: "B"}, []Case{c})
	if m := a.Pairs[0].Metrics[0]; a.Differs() || m.Verdict != report.ABNotGated || m.Change != -0.5 {
		t.Fatalf("host metric: %+v, differs %v", m, a.Differs())
	}
}

// TestJudgeAB: B halves the copy rate (every block) and fails one case
// where A passed: one perf regression, one regression; a case B passes
// where A failed is an improvement; B skipping as not supported where A
// ran is a regression.
func TestJudgeAB(t *testing.T) {
	half := Case{ID: "cuda.vmm.copy.one", A: []report.Result{res(report.Pass, 100), res(report.Pass, 96), res(report.Pass, 104)},
		B: []report.Result{res(report.Pass, 50), res(report.Pass, 49), res(report.Pass, 51)}}
	fails := Case{ID: "cuda.vmm.read", A: []report.Result{res(report.Pass, 1), res(report.Pass, 1)},
		B: []report.Result{res(report.Pass, 1), {Outcome: report.Fail, Expected: report.Pass, Detail: "word 0 differs"}}}
	better := Case{ID: "cuda.vmm.write", A: []report.Result{{Outcome: report.Crash, Expected: report.Pass}}, B: []report.Result{{Outcome: report.Pass, Expected: report.Pass}}}
	skips := Case{ID: "cuda.vmm.atomic", A: []report.Result{{Outcome: report.Pass, Expected: report.Pass}},
		B: []report.Result{{Outcome: report.Skip, Expected: report.Pass, NotSupported: "no host atomics"}}}
	a := Judge("/opt/b", 3, report.ABStack{Side: "A"}, report.ABStack{Side: "B"}, []Case{half, fails, better, skips})
	if a.Regressions != 2 || a.Improvements != 1 || a.PerfRegressions != 1 || !a.Fails() {
		t.Fatalf("counts: %d regressions, %d improvements, %d perf regressions", a.Regressions, a.Improvements, a.PerfRegressions)
	}
	m := a.Pairs[0].Metrics[0]
	if m.Verdict != report.ABPerfRegression || m.Change > -0.49 || m.Change < -0.51 || m.High >= -0.08 {
		t.Fatalf("halved copy: %+v", m)
	}
	if p := a.Pairs[1]; p.Change != report.ABRegression || p.B.Outcome != report.Fail || p.B.Detail != "word 0 differs" ||
		strings.Join([]string{string(p.B.Outcomes[0]), string(p.B.Outcomes[1])}, ",") != "pass,fail" {
		t.Fatalf("failing B: %+v", p)
	}
	if a.Pairs[2].Change != report.ABImprovement || a.Pairs[3].Change != report.ABRegression || a.Pairs[3].B.NotSupported == "" {
		t.Fatalf("improvement %+v, skip %+v", a.Pairs[2], a.Pairs[3])
	}
	if w := a.Words(); !strings.Contains(w, "B: 2 regressions (cuda.vmm.read pass→fail, cuda.vmm.atomic pass→skip)") ||
		!strings.Contains(w, "1 perf regression (cuda.vmm.copy.one bw_copy_gbps -50% ±") {
		t.Fatalf("words: %s", w)
	}
}

// TestBFirstIsSeededAndMixed: each block's order is a function of the
// seed, the case and the block, and both orders occur.
func TestBFirstIsSeededAndMixed(t *testing.T) {
	n := 0
	for b := 0; b < 64; b++ {
		first, again := BFirst(1, "host.memfd.copy", b), BFirst(1, "host.memfd.copy", b)
		if first != again {
			t.Fatal("not deterministic")
		}
		if first {
			n++
		}
	}
	if n < 16 || n > 48 {
		t.Fatalf("B first in %d of 64 blocks", n)
	}
}

// TestParseRefuses: every bad SPEC is ErrBadSpec with a line naming it.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"", "empty SPEC"},
		{"inject:", "names no rule"},
		{"inject:nosuchkind:x", "nosuchkind"},
		{"/no/such/libcuda.so.1", "neither same, inject:RULES nor a library"},
	} {
		_, err := Parse(c.spec)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.spec, err, c.want)
		}
	}
	if s, err := Parse("same"); err != nil || s.Kind != Same {
		t.Fatalf("same: %+v %v", s, err)
	}
	if s, err := Parse("inject:corrupt-read:0"); err != nil || s.Kind != Inject || strings.Join(s.RuleStrings(), ",") != "corrupt-read:0" {
		t.Fatalf("inject: %+v %v", s, err)
	}
}

// TestResolveRefuses: a file that is not ELF, a shared object that is not
// the backend's driver library, a folder without it, and a backend that
// loads no library.
func TestResolveRefuses(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "libcuda.so.1")
	os.WriteFile(text, []byte("not elf"), 0o644)
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib64/libc.so.6", "/usr/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
		}
	}
	cases := []struct{ path, backend, want string }{
		{text, "cuda", "is not a loadable library"},
		{t.TempDir(), "cuda", "holds no cuda driver library"},
		{text, backends.HostName, "backend " + backends.HostName + " loads none"},
	}
	if libc != "" {
		cases = append(cases, struct{ path, backend, want string }{libc, "cuda", "not the cuda driver library"})
	}
	for _, c := range cases {
		s, err := Parse(c.path)
		if err == nil {
			_, err = s.Resolve(c.backend)
		}
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want %q", c.path, c.backend, err, c.want)
		}
	}
}

// TestCUDAVersion: a user-mode driver older than the kernel module, or
// newer than forward compatibility runs on it, is refused; the same
// version, a supported forward-compatible one, and an unreadable version
// are not.
func TestCUDAVersion(t *testing.T) {
	dir := t.TempDir()
	kmd := filepath.Join(dir, "version")
	os.WriteFile(kmd, []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"), 0o644)
	lib := func(v string) string {
		p := filepath.Join(dir, v, "libcuda.so."+v)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
		l := filepath.Join(dir, v, "libcuda.so.1")
		os.Symlink(p, l)
		return l
	}
	for _, c := range []struct{ v, want string }{
		{"550.54.15", ""},
		{"570.86.10", ""}, // CUDA 12.8 compat on R550
		{"535.104.05", "older than the kernel module 550.54.15"},
		{"550.90.07", "within a branch they must match exactly"},
		{"580.65.06", ""}, // CUDA 13 compat on R550 (floor 535)
	} {
		err := CheckCUDAVersion(lib(c.v), kmd)
		if (c.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadSpec))) {
			t.Errorf("%s: %v, want %q", c.v, err, c.want)
		}
	}
	os.WriteFile(kmd, []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02\n"), 0o644)
	if err := CheckCUDAVersion(lib("580.65.06"), kmd); err == nil || !strings.Contains(err.Error(), "forward compatibility runs it on kernel modules from branch 535") {
		t.Errorf("CUDA 13 on R470: %v", err)
	}
	if err := CheckCUDAVersion(filepath.Join(dir, "550.54.15", "libcuda.so.1"), filepath.Join(dir, "absent")); err != nil {
		t.Errorf("no kernel module version: %v", err)
	}
}

// TestResolveTheShim: the stand-in driver of the device test
// (scripts/ab-shim/shim.c), built as its header says, is a cuda library
// SPEC by its file name (it has no soname) and its cuInit; the folder
// holding it resolves to it. Skipped without a C compiler.
func TestResolveTheShim(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libcuda.so.1")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, "../../scripts/ab-shim/shim.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	for _, spec := range []string{lib, dir} {
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Resolve("cuda")
		if err != nil || got != lib {
			t.Fatalf("Resolve(%s) = %q, %v; want %s", spec, got, err, lib)
		}
		if _, err := s.Resolve("hip"); err == nil || !strings.Contains(err.Error(), "hip driver library") {
			t.Fatalf("the shim taken as a HIP runtime: %v", err)
		}
	}
}
