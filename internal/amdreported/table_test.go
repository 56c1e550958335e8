package amdreported

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/specs"
)

var root = filepath.Join("..", "..")

func readCases(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(root, "expectations", "amd-gfx942-reported", "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ids = append(ids, l)
		}
	}
	return ids
}

// want is every generated file's expected content.
func want(t *testing.T) map[string]string {
	dir := filepath.Join(root, "expectations", "amd-gfx942-reported")
	files := map[string]string{filepath.Join(dir, "fails.txt"): Fails(readCases(t)), filepath.Join(dir, "flakes.txt"): Flakes(readCases(t))}
	for _, rt := range Runtimes() {
		files[filepath.Join(dir, rt, "skips.txt")] = Skips(rt)
	}
	for _, doc := range []string{"README.md", filepath.Join("docs", "AMD.md")} {
		p := filepath.Join(root, doc)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Splice(string(b), Block())
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		files[p] = s
	}
	return files
}

// TestInSync: the reported gfx942 baseline, the README and docs/AMD.md say
// what the table says (issue 17, defect 3: the baseline expected every
// hsa.coarse case to pass while the docs said it faults).
func TestInSync(t *testing.T) {
	for p, w := range want(t) {
		if os.Getenv("P2PAT_UPDATE") == "1" {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(w), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, _ := os.ReadFile(p)
		if string(got) != w {
			t.Errorf("%s is not what internal/amdreported generates: run P2PAT_UPDATE=1 go test ./internal/amdreported", p)
		}
	}
}

// TestEveryCrashingStackListed: each crash row lists all its P2P-atomic
// cases (the counters alone are 61 per stack) and the pass row none; a
// planted table without the hsa.coarse row no longer generates today's
// file.
func TestEveryCrashingStackListed(t *testing.T) {
	cases := readCases(t)
	fails := Fails(cases)
	for _, r := range Table {
		n := strings.Count(fails, "\n"+r.Stack+".")
		switch {
		case r.Outcome == "pass" && n != 0:
			t.Errorf("%s passes but has %d fails.txt lines", r.Stack, n)
		case r.Outcome == "crash" && n < 61+10:
			t.Errorf("%s crashes but has only %d fails.txt lines", r.Stack, n)
		}
	}
	saved, block := Table, Block()
	defer func() { Table = saved }()
	Table = nil
	for _, r := range saved {
		if r.Stack != "hsa.coarse" {
			Table = append(Table, r)
		}
	}
	if Fails(cases) == fails || Block() == block {
		t.Error("dropping the hsa.coarse row changed neither fails.txt nor the docs' block")
	}
}

func TestSpliceNeedsMarkers(t *testing.T) {
	if _, err := Splice("no markers", "x"); err == nil {
		t.Error("accepted a document without markers")
	}
	s, err := Splice("a\n"+Begin+"\nold\n"+End+"\nb", "new\n")
	if err != nil || s != "a\n"+Begin+"\nnew\n"+End+"\nb" {
		t.Errorf("%q %v", s, err)
	}
}

// TestGeneralisedIsMarked (issue 30, seed coverage): the reports behind
// the crash rows ran f32 adds only, so the f32-add lines stand under the
// report and every other op under a GENERALISED note (a44624c put them all
// under the report alone); the seed's f32 add at acq_rel is in the baseline.
func TestGeneralisedIsMarked(t *testing.T) {
	f := Fails(readCases(t))
	i := strings.Index(f, "hip.pinned.counter.add_f32_acqrel_sys,crash")
	j := i + strings.Index(f[max(i, 0):], "# GENERALISED")
	k := strings.Index(f, "hip.pinned.counter.add_u64_relaxed_sys,crash")
	if i < 0 || j < 0 || k < 0 || !(i < j && j < k) {
		t.Fatalf("want the f32 lines, then the GENERALISED note, then the integer lines (at %d, %d, %d)", i, j, k)
	}
	if strings.Contains(f, "hsa.fine.") {
		t.Error("hsa.fine is expected to pass: no line for it")
	}
}

// TestEveryRowHasCases: each row's stack prefixes at least one id of the
// reported baseline, so no row (hip.pinned.hsavmem's one case included)
// describes cases the catalogue does not have.
func TestEveryRowHasCases(t *testing.T) {
	cases := readCases(t)
	for _, r := range Table {
		n := 0
		for _, id := range cases {
			if strings.HasPrefix(id, r.Stack+".") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("row %s matches no case id of cases.txt", r.Stack)
		}
	}
}

// TestPlainCasesNotExpectedToFault (issue 50, Q1): the cases that run no
// read-modify-write across GPUs are in the catalogue but never listed as
// faulting: the all-to-all kernel copy, and the planted racy counter and
// the litmus environments, whose round barriers on AMD are store barriers
// (kernels' TestAMDGPUDisassembly: no atomic in those AMD kernels). And
// pairs.racy_pair_in_round, whose round runs the counter add from one GPU
// on the other's memory besides its planted racy pair, is listed on every
// crashing row like the other pairs. The rule before (pairs.racy_ never
// listed) was wrong: on hip.pinned it expected a fail where the counter
// adds fault.
func TestPlainCasesNotExpectedToFault(t *testing.T) {
	cases := readCases(t)
	plain := regexp.MustCompile(`\.(alltoall\.copy_|planted\.racy_|litmus\.)`)
	n := 0
	for _, id := range cases {
		if plain.MatchString(id) {
			n++
		}
	}
	if n < 3 {
		t.Fatalf("cases.txt has %d plain cases of the kinds checked: the check would pass on nothing", n)
	}
	fails := Fails(cases)
	for _, l := range strings.Split(fails+Flakes(cases), "\n") {
		if plain.MatchString(l) {
			t.Errorf("plain case expected to fault: %s", l)
		}
	}
	for _, r := range Table {
		if r.Outcome != "crash" {
			continue
		}
		id := r.Stack + ".pairs.racy_pair_in_round"
		if slices.Contains(cases, id) && !strings.Contains(fails, "\n"+id+",crash\n") {
			t.Errorf("%s runs P2P counter adds in its round but is not listed as crashing", id)
		}
	}
}

// TestSingleGPUAtomicsNotExpectedToCrash (issue 40, review 3 P2a): the
// local atomic perf cases are rank 0's atomics on its own buffer; atomics
// on a GPU's own coarse VRAM work, so none is listed as crashing (ce5f99b
// listed 12, which would gate as unexpected passes on any MI300X).
func TestSingleGPUAtomicsNotExpectedToCrash(t *testing.T) {
	cases := readCases(t)
	local := 0
	for _, id := range cases {
		if strings.Contains(id, ".perf.atomic_") && strings.Contains(id, "_local_") {
			local++
		}
	}
	if local == 0 {
		t.Fatal("cases.txt has no local atomic perf case: the check would pass on nothing")
	}
	for _, l := range strings.Split(Fails(cases)+Flakes(cases), "\n") {
		if strings.Contains(l, ".perf.atomic_") && strings.Contains(l, "_local_") {
			t.Errorf("a single-GPU atomic expected to crash: %s", l)
		}
	}
}

// TestSkipsGatedUnderTheirRuntime (issue 40, review 3 P2b): every stack the
// table's Summary calls a skip on some runtime has a runtime line, and
// under the baseline plus that line's skips.txt every one of its cases is
// an expected skip; under the baseline alone none is (a ROCm 7 skip stays
// a finding). At ce5f99b no skips.txt matched hip.uncached: on ROCm 6.x
// all its ids gated.
func TestSkipsGatedUnderTheirRuntime(t *testing.T) {
	cases := readCases(t)
	dir := filepath.Join(root, "expectations", "amd-gfx942-reported")
	base, err := expect.Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Table {
		if !strings.Contains(r.Summary, "skip") {
			continue
		}
		if r.SkipOn == "" {
			t.Errorf("%s: the Summary names a skip but the row has no runtime line (SkipOn)", r.Stack)
			continue
		}
		withRT, err := expect.Load([]string{dir, filepath.Join(dir, r.SkipOn, "skips.txt")})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, id := range cases {
			if !strings.HasPrefix(id, r.Stack+".") {
				continue
			}
			n++
			if _, ok := withRT.Skipped(id); !ok {
				t.Errorf("%s: not a skip under %s/skips.txt", id, r.SkipOn)
			}
			if why, ok := base.Skipped(id); ok && why == strings.ReplaceAll(r.SkipReason, "\n", " ") {
				t.Errorf("%s: a skip on every runtime, not only %s", id, r.SkipOn)
			}
		}
		if n == 0 {
			t.Errorf("%s: no case", r.Stack)
		}
	}
}

// TestDoubtIsNotGated (issue 40, review 3 P2): hsa.coarse's crash is by
// analogy, and upstream amdgpu suggests it may pass, so its P2P-atomic ids
// are known-flakes (reported, not gated) while hip.pinned's reported crash
// stays gated.
func TestDoubtIsNotGated(t *testing.T) {
	s, err := expect.Load([]string{filepath.Join(root, "expectations", "amd-gfx942-reported")})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"hsa.coarse.counter.add_f32_acqrel_sys", "hsa.coarse.counter.add_u64_relaxed_sys"} {
		if s.Fails[id] != report.Crash {
			t.Errorf("%s: baseline %q, want crash", id, s.Fails[id])
		}
		r := report.Result{Case: report.ParseCase(id, nil), Outcome: report.Pass, Expected: report.Pass}
		if v := expect.Judge(r, s, nil); v != report.KnownFlake {
			t.Errorf("%s passing: %s, want known-flake", id, v)
		}
	}
	if _, ok := s.Flaky("hip.pinned.counter.add_f32_acqrel_sys"); ok {
		t.Error("hip.pinned's reported crash is not gated")
	}
}

// reportedRun is what a first MI300X run that behaves exactly as the table
// reports would show: each crashing row's P2P-atomic ids crash, or, where
// coarse is doubted, pass (coarsePasses); on ROCm 6 (rocm6) every case of
// a row that skips there skips but its canaries; every other case ends at its spec's
// expected outcome (specs.Catalogue, 2 ranks; pass for ids it builds
// inside a round).
func reportedRun(t *testing.T, cases []string, rocm6, coarsePasses bool) []report.Result {
	t.Helper()
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 2
	expected := map[string]report.Outcome{}
	for _, b := range []string{backends.HIPName, backends.HSAName} {
		for _, k := range backends.Lookup(b).Kinds {
			for _, c := range specs.Catalogue(&o, b, string(k.Name)) {
				expected[c.ID] = c.Expected
			}
		}
	}
	var out []report.Result
	for _, id := range cases {
		want, ok := expected[id]
		if !ok {
			want = report.Pass
		}
		got := want
		for _, r := range Table {
			if !strings.HasPrefix(id, r.Stack+".") {
				continue
			}
			if r.Outcome == "crash" && slices.Contains(r.atomicIDs([]string{id}), id) {
				got = report.Crash
				if r.Doubt != "" && coarsePasses {
					got = report.Pass
				}
			}
			if rocm6 && r.SkipOn == "rocm6" && !strings.Contains(id, ".canary.") {
				got = report.Skip // the canaries allocate nothing: they run
			}
		}
		out = append(out, report.Result{Case: report.ParseCase(id, nil), Outcome: got, Expected: want})
	}
	return out
}

// TestBaselinePassesItsOwnGate (issue 50): judged against the reported
// baseline (plus rocm6/skips.txt on ROCm 6, as scripts/amd-first-run.sh
// adds it), a first run that behaves as the table reports gates nothing,
// on ROCm 6 and 7, whether hsa.coarse's doubted P2P atomics crash or pass.
// A baseline that expects a skip's ROCm line on the wrong runtime, or a
// crash the table does not report, fails it.
func TestBaselinePassesItsOwnGate(t *testing.T) {
	cases := readCases(t)
	dir := filepath.Join(root, "expectations", "amd-gfx942-reported")
	for _, rocm6 := range []bool{true, false} {
		paths := []string{dir}
		if rocm6 {
			paths = append(paths, filepath.Join(dir, "rocm6", "skips.txt"))
		}
		s, err := expect.Load(paths)
		if err != nil {
			t.Fatal(err)
		}
		for _, coarsePasses := range []bool{false, true} {
			gated := 0
			for _, r := range reportedRun(t, cases, rocm6, coarsePasses) {
				if v := expect.Judge(r, s, nil); v.Gating() {
					gated++
					if gated <= 5 {
						t.Errorf("ROCm 6 %v, coarse passes %v: %s ends %s (spec %s): %s", rocm6, coarsePasses, r.ID(), r.Outcome, r.Expected, v)
					}
				}
			}
			if gated > 5 {
				t.Errorf("ROCm 6 %v, coarse passes %v: %d gated in all", rocm6, coarsePasses, gated)
			}
		}
	}
}
