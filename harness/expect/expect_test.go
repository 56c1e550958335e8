package expect

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const failsTxt = `# stack: vendor=nvidia arch=sm_90 driver=580

# coarse pool has no P2P atomics: https://example.org/bug/1
hsa.coarse.counter.add_u64_relaxed_sys,Crash
hsa.coarse.counter.add_u32_relaxed_sys,crash

# HIP maps pinned onto the coarse pool
#   (CLR issue 123)
hip.pinned.counter.add_u64_relaxed_sys,FAIL
`

func TestLoadFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "fails.txt", failsTxt)
	write(t, dir, "flakes.txt", "# link training is flaky\ncuda\\.vmm\\.bw\\..*\n")
	write(t, dir, "skips.txt", "# takes an hour\n.*\\.soak\\..*\n\n# no host-native atomics\ncuda\\.vmm-host\\.host_atomics\\..*\n")
	write(t, dir, "cases.txt", "# stack: vendor=nvidia arch=sm_90 driver=580\nhsa.coarse.counter.add_u64_relaxed_sys\nhost.memfd.counter.add_u64_relaxed_sys\n")
	write(t, dir, "README.md", "not an expectation file\n")
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	wantFails := map[string]report.Outcome{
		"hsa.coarse.counter.add_u64_relaxed_sys": report.Crash,
		"hsa.coarse.counter.add_u32_relaxed_sys": report.Crash,
		"hip.pinned.counter.add_u64_relaxed_sys": report.Fail,
	}
	if !reflect.DeepEqual(s.Fails, wantFails) {
		t.Errorf("Fails = %v", s.Fails)
	}
	if got := s.Reasons["hsa.coarse.counter.add_u32_relaxed_sys"]; got != "coarse pool has no P2P atomics: https://example.org/bug/1" {
		t.Errorf("reason = %q", got)
	}
	if got := s.Reasons["hip.pinned.counter.add_u64_relaxed_sys"]; got != "HIP maps pinned onto the coarse pool (CLR issue 123)" {
		t.Errorf("reason = %q", got)
	}
	if !reflect.DeepEqual(s.Stack, map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580"}) {
		t.Errorf("Stack = %v", s.Stack)
	}
	if len(s.Cases) != 2 || !s.Cases["host.memfd.counter.add_u64_relaxed_sys"] {
		t.Errorf("Cases = %v", s.Cases)
	}
	if len(s.Sources) != 4 {
		t.Errorf("Sources = %v", s.Sources)
	}
	if why, ok := s.Skipped("host.memfd.soak.x"); !ok || why != "takes an hour" {
		t.Errorf("Skipped soak = %q %v", why, ok)
	}
	if why, ok := s.Skipped("cuda.vmm-host.host_atomics.add"); !ok || why != "no host-native atomics" {
		t.Errorf("Skipped host_atomics = %q %v", why, ok)
	}
	// Full-match anchoring: a pattern never matches a substring.
	if _, ok := s.Skipped("x.cuda.vmm-host.host_atomics.add"); ok {
		t.Error("skip pattern matched an unanchored substring")
	}
	if _, ok := s.Flaky("cuda.vmm.bw.ce"); !ok {
		t.Error("flake not matched")
	}
	if _, ok := s.Flaky("cuda.vmm.bwx"); ok {
		t.Error("flake matched wrongly")
	}
}

func TestLoadSingleFilesAndList(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "nvidia-sm_90-580-fails.txt", "a.b,fail\n")
	k := write(t, dir, "all-skips.txt", "x\\..*\n")
	s, err := LoadList(f + "," + k)
	if err != nil {
		t.Fatal(err)
	}
	if s.Fails["a.b"] != report.Fail || len(s.Skips) != 1 {
		t.Errorf("got %+v", s)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, file, body, want string
	}{
		{"duplicate fail", "fails.txt", "# r\na.b,fail\n\na.b,crash\n", "fails.txt:4: duplicate case a.b (first at "},
		{"unknown outcome", "fails.txt", "a.b,passed\n", `fails.txt:1: unknown outcome "passed"`},
		{"no comma", "fails.txt", "# why\na.b fail\n", `fails.txt:2: want "case-id,outcome"`},
		{"too many fields", "fails.txt", "a.b,fail,3.2\n", "fails.txt:1: want \"case-id,outcome\", got \"a.b,fail,3.2\" (too many fields)"},
		{"bad id", "fails.txt", "A/B,fail\n", `fails.txt:1: bad case id "A/B"`},
		{"bad regexp", "flakes.txt", "ok\n# x\nfoo(\n", `flakes.txt:3: bad regexp "foo(": missing closing )`},
		{"duplicate regexp", "skips.txt", "a.*\n\n# again\na.*\n", `skips.txt:4: duplicate pattern "a.*" (first at `},
		{"duplicate case", "cases.txt", "a\nb\na\n", "cases.txt:3: duplicate case a"},
		{"bad case id", "cases.txt", "a,b\n", `cases.txt:1: bad case id "a,b"`},
		{"bad stack", "cases.txt", "# stack: vendor\n", "cases.txt:1: stack header: want key=value"},
		{"unknown file", "notes.txt", "x\n", "not an expectation file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, c.file, c.body)
			_, err := Load([]string{p})
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if c.file != "notes.txt" && !strings.HasPrefix(err.Error(), p+":") {
				t.Fatalf("error %q does not start with %s:", err, p)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestLoadErrorsAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a-fails.txt", "# stack: vendor=nvidia\nx.y,fail\n")
	b := write(t, dir, "b-fails.txt", "x.y,crash\n")
	if _, err := Load([]string{a, b}); err == nil || !strings.Contains(err.Error(), "b-fails.txt:1: duplicate case x.y (first at "+a+":2)") {
		t.Errorf("cross-file duplicate: %v", err)
	}
	c := write(t, dir, "c-skips.txt", "# stack: vendor=amd\nz\n")
	if _, err := Load([]string{a, c}); err == nil || !strings.Contains(err.Error(), "c-skips.txt:1: stack vendor=amd disagrees") {
		t.Errorf("stack disagreement: %v", err)
	}
	empty := t.TempDir()
	if _, err := Load([]string{empty}); err == nil || !strings.Contains(err.Error(), "no expectation files") {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := Load([]string{filepath.Join(dir, "nope")}); err == nil {
		t.Error("missing path accepted")
	}
	if _, err := LoadList(a + ","); err == nil {
		t.Error("empty list element accepted")
	}
}

func res(id string, got, want report.Outcome) report.Result {
	return report.Result{Case: report.ParseCase(id, nil), Outcome: got, Expected: want, Labels: []string{}, Ranks: []report.Rank{}}
}

// judgeSet is the baseline TestJudge's table is judged against.
func judgeSet() *Set {
	s := NewSet()
	s.Fails["base.crash"] = report.Crash
	s.Fails["base.fail"] = report.Fail
	s.Fails["base.timeout"] = report.Timeout
	s.Fails["base.skip"] = report.Skip
	s.Fails["canary.listed"] = report.Crash
	s.Fails["racy.pass"] = report.Pass // planted racy counter that passed on this stack
	s.Flakes = []Pattern{{Re: mustRe(`flaky\..*`), Text: `flaky\..*`}}
	s.Skips = []Pattern{{Re: mustRe(`skipped\..*`), Text: `skipped\..*`}}
	return s
}

func rerunOf(o report.Outcome) *report.Result { r := res("x", o, report.Pass); return &r }

type judgeCase struct {
	name  string
	r     report.Result
	rerun *report.Result
	want  report.Verdict
}

// judgeCases is the verdict of every outcome against judgeSet, with and
// without a rerun.
func judgeCases() []judgeCase {
	P, K, F, E, T, C, I, A := report.Pass, report.Skip, report.Fail, report.Error, report.Timeout, report.Crash, report.Incomplete, report.Abort
	return []judgeCase{
		{"pass as expected", res("plain", P, P), nil, report.Expected},
		{"canary crashes as expected", res("canary", C, C), nil, report.Expected},
		{"canary listed as an expected crash", res("canary.listed", C, C), nil, report.ExpectedFail},
		{"listed canary stops crashing", res("canary.listed", P, C), nil, report.UnexpectedPass},
		{"canary times out as expected", res("canary.t", T, T), nil, report.Expected},
		{"racy counter fails as expected", res("racy", F, F), nil, report.Expected},
		{"listed crash seen again", res("base.crash", C, P), nil, report.ExpectedFail},
		{"listed fail seen again", res("base.fail", F, P), nil, report.ExpectedFail},
		{"listed skip seen again", res("base.skip", K, P), nil, report.ExpectedFail},
		{"listed pass on expected-fail case", res("racy.pass", P, F), nil, report.Expected},
		{"crash gone to pass", res("base.crash", P, P), nil, report.UnexpectedPass},
		// Only a pass is an improvement (issue 37 item 3): an expected
		// failure that ends otherwise lost what it controls.
		{"crash gone to fail", res("base.crash", F, P), nil, report.Regression},
		{"timeout gone to skip", res("base.timeout", K, P), nil, report.Regression},
		{"canary stops crashing", res("canary", P, C), nil, report.UnexpectedPass},
		{"canary fails instead of crashing", res("canary", F, C), nil, report.Regression},
		{"racy counter passes", res("racy", P, F), nil, report.UnexpectedPass},
		{"pass to fail", res("plain", F, P), nil, report.Regression},
		{"pass to skip", res("plain", K, P), nil, report.Regression},
		{"fail to crash", res("base.fail", C, P), nil, report.Regression},
		{"canary to abort", res("canary", A, C), nil, report.Regression},
		{"pass to incomplete", res("plain", I, P), nil, report.Regression},
		{"pass to error", res("plain", E, P), nil, report.Regression},
		{"unknown outcome", res("plain", "exploded", P), nil, report.Regression},
		// Issue 25 item 1: a flake the baseline does not list is a finding
		// (new-flake, gating; before: flake, not gating), and a crash or a
		// timeout is never forgiven by a rerun that met the baseline.
		{"regression met baseline on rerun", res("plain", F, P), rerunOf(P), report.NewFlake},
		{"error met baseline on rerun", res("plain", E, P), rerunOf(P), report.NewFlake},
		{"crash met baseline on rerun", res("plain", C, P), rerunOf(P), report.NewFlake},
		{"timeout met baseline on rerun", res("plain", T, P), rerunOf(P), report.NewFlake},
		{"listed fail, crash then fail on rerun", res("base.fail", C, P), rerunOf(F), report.NewFlake},
		{"known flake crashes, rerun passes", res("flaky.bw", C, P), rerunOf(P), report.KnownFlake},
		{"rerun still failing", res("plain", F, P), rerunOf(F), report.Regression},
		{"rerun better than baseline is not a match", res("base.fail", C, P), rerunOf(P), report.Regression},
		{"known flake regresses", res("flaky.bw", F, P), nil, report.KnownFlake},
		{"known flake regresses, rerun too", res("flaky.bw", F, P), rerunOf(F), report.KnownFlake},
		{"known flake at baseline", res("flaky.bw", P, P), nil, report.Expected},
		{"skip-listed case reports skip", res("skipped.x", K, P), nil, report.Expected},
		{"skip-listed case that ran and failed", res("skipped.x", F, P), nil, report.Regression},
	}
}

func TestJudge(t *testing.T) {
	s := judgeSet()
	for _, c := range judgeCases() {
		t.Run(c.name, func(t *testing.T) {
			if got := Judge(c.r, s, c.rerun); got != c.want {
				t.Fatalf("Judge(%s: %s, expected %s) = %s, want %s", c.r.ID(), c.r.Outcome, c.r.Expected, got, c.want)
			}
		})
	}
}

// TestJudgeFlagsRecordedAndUngated: --allow-new-flakes makes the same
// rerun a flake, reported, not gating (after a crash or a timeout it stays
// new-flake); a rerun recorded in the result (results.json) is judged like
// one handed in, so a re-render judges as the run did; with no
// expectations at all the case's own expected is the baseline.
func TestJudgeFlagsRecordedAndUngated(t *testing.T) {
	P, F, T, C := report.Pass, report.Fail, report.Timeout, report.Crash
	s := judgeSet()
	s.AllowNewFlakes = true
	if got := Judge(res("plain", F, P), s, rerunOf(P)); got != report.Flake {
		t.Errorf("--allow-new-flakes: %s, want flake", got)
	}
	if got := Judge(res("plain", C, P), s, rerunOf(P)); got != report.NewFlake {
		t.Errorf("--allow-new-flakes, crash: %s, want new-flake", got)
	}
	if got := Judge(res("plain", T, P), s, rerunOf(P)); got != report.NewFlake {
		t.Errorf("--allow-new-flakes, timeout: %s, want new-flake", got)
	}
	s.AllowNewFlakes = false
	rec := res("plain", F, P)
	rec.Rerun = &report.Attempt{Outcome: P}
	if got := Judge(rec, s, nil); got != report.NewFlake {
		t.Errorf("recorded rerun: %s, want new-flake", got)
	}
	if got := Judge(res("a", F, P), nil, nil); got != report.Regression {
		t.Errorf("nil set: %s", got)
	}
	if got := Judge(res("a", C, C), nil, nil); got != report.Expected {
		t.Errorf("nil set canary: %s", got)
	}
}

func mustRe(s string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + s + `)$`) }

// hostGateSet is a baseline of fails, skips, flakes and cases over host ids.
func hostGateSet(t *testing.T) *Set {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "fails.txt", "# canary\nhost.memfd.canary.crash,crash\n# planted: a fixed bug\nhost.memfd.planted.improved,crash\n")
	write(t, dir, "skips.txt", "# slow\nhost\\.memfd\\.soak\\..*\n")
	write(t, dir, "flakes.txt", "host\\.memfd\\.flaky\\..*\n")
	write(t, dir, "cases.txt", strings.Join([]string{
		"host.memfd.canary.crash",
		"host.memfd.planted.improved",
		"host.memfd.counter.add_u64_relaxed_sys",
		"host.memfd.counter.flaky_rerun",
		"host.memfd.flaky.x",
		"host.memfd.gone.away",
		"host.memfd.soak.long",
		"host.memfd.unselected.case",
	}, "\n")+"\n")
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGate(t *testing.T) {
	s := hostGateSet(t)
	first := res("host.memfd.counter.flaky_rerun", report.Fail, report.Pass)
	first.Verdict = Judge(first, s, &report.Result{Outcome: report.Pass}) // suite reran it
	results := []report.Result{
		res("host.memfd.canary.crash", report.Crash, report.Crash),
		res("host.memfd.planted.improved", report.Pass, report.Pass),
		res("host.memfd.counter.add_u64_relaxed_sys", report.Fail, report.Pass),
		first,
		res("host.memfd.flaky.x", report.Timeout, report.Pass),
		res("host.memfd.brand.new", report.Pass, report.Pass),
	}
	selected := func(id string) bool { return !strings.Contains(id, "unselected") }
	out, g := Gate(results, s, selected)
	got := map[string]report.Verdict{}
	for _, r := range out {
		got[r.ID()] = r.Verdict
	}
	want := map[string]report.Verdict{
		"host.memfd.canary.crash":                report.ExpectedFail,
		"host.memfd.planted.improved":            report.UnexpectedPass,
		"host.memfd.counter.add_u64_relaxed_sys": report.Regression,
		"host.memfd.counter.flaky_rerun":         report.NewFlake,
		"host.memfd.flaky.x":                     report.KnownFlake,
		"host.memfd.brand.new":                   report.Expected,
		"host.memfd.gone.away":                   report.Missing,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts:\n got %v\nwant %v", got, want)
	}
	if g.Pass {
		t.Error("gate passed")
	}
	wantReasons := []string{
		"unexpected pass: host.memfd.planted.improved went crash → pass (update the baseline with --update-expectations)",
		"regression: host.memfd.counter.add_u64_relaxed_sys went pass → fail",
		"new flake: host.memfd.counter.flaky_rerun went pass → fail, then the baseline's outcome on a rerun in a fresh world; flakes.txt does not list it (list it there, or pass --allow-new-flakes)",
		"missing: host.memfd.gone.away ran in the baseline but not now",
	}
	if !reflect.DeepEqual(g.Reasons, wantReasons) {
		t.Errorf("reasons:\n got %q\nwant %q", g.Reasons, wantReasons)
	}
	for _, r := range out {
		if r.Verdict == report.Missing && (r.Outcome != report.Skip || r.Labels == nil || r.Ranks == nil) {
			t.Errorf("missing entry malformed: %+v", r)
		}
	}
	// The input slice is not modified.
	if results[0].Verdict != "" {
		t.Error("Gate wrote into its input")
	}
}

// TestPlantedImprovementGates: an improvement alone must fail the gate
// (deqp-runner: improvements fail until the baseline is updated); only a
// pass is one: an expected timeout that ends skip, fail or error lost its
// control and is a regression (issue 37 item 3).
func TestPlantedImprovementGates(t *testing.T) {
	s := NewSet()
	s.Fails["host.memfd.counter.add_u64_relaxed_sys"] = report.Timeout
	s.Cases["host.memfd.counter.add_u64_relaxed_sys"] = true
	for _, o := range []report.Outcome{report.Pass, report.Skip, report.Fail, report.Error} {
		out, g := Gate([]report.Result{res("host.memfd.counter.add_u64_relaxed_sys", o, report.Pass)}, s, nil)
		want, says := report.Regression, "control lost"
		if o == report.Pass {
			want, says = report.UnexpectedPass, "--update-expectations"
		}
		if g.Pass || len(g.Reasons) != 1 || out[0].Verdict != want || !strings.Contains(g.Reasons[0], says) {
			t.Errorf("timeout → %s: %s, gate %+v; want %s saying %q", o, out[0].Verdict, g, want, says)
		}
	}
	_, g := Gate([]report.Result{res("host.memfd.counter.add_u64_relaxed_sys", report.Timeout, report.Pass)}, s, nil)
	if !g.Pass || g.Reasons == nil || len(g.Reasons) != 0 {
		t.Errorf("baseline met but gate = %+v", g)
	}
}

func TestGateAllClean(t *testing.T) {
	_, g := Gate([]report.Result{res("a", report.Pass, report.Pass), res("b", report.Crash, report.Crash)}, nil, nil)
	if !g.Pass || len(g.Reasons) != 0 {
		t.Errorf("gate = %+v", g)
	}
}

func TestCheckStack(t *testing.T) {
	nv := map[string]any{
		"vendor": "nvidia",
		"nvidia": map[string]any{"driver": "580.159.04"},
		"gpus":   []any{map[string]any{"arch": "sm_90", "ordinal": 0}},
	}
	host := map[string]any{"vendor": backends.HostName, "goarch": "amd64", "os": map[string]any{"kernel": "6.1.0-28-amd64"}}
	cases := []struct {
		name  string
		stack map[string]string
		env   map[string]any
		ok    bool
	}{
		{"no header", nil, nv, true},
		{"exact", map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580.159.04"}, nv, true},
		{"driver line", map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580"}, nv, true},
		{"driver line is not a string prefix", map[string]string{"vendor": "nvidia", "driver": "58"}, nv, false},
		{"other driver", map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "570"}, nv, false},
		{"other arch", map[string]string{"vendor": "nvidia", "arch": "sm_100"}, nv, false},
		{"fell back to host", map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580"}, host, false},
		{"host ignores driver and kernel", map[string]string{"vendor": backends.HostName, "arch": "amd64", "driver": "6.0", "kernel": "5.10"}, host, true},
		{"host other goarch", map[string]string{"vendor": backends.HostName, "arch": "arm64"}, host, false},
		{"case-insensitive", map[string]string{"vendor": "NVIDIA", "arch": "SM_90"}, nv, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckStack(c.stack, report.EnvironmentOf(c.env), false)
			if (err == nil) != c.ok {
				t.Fatalf("CheckStack = %v, want ok=%v", err, c.ok)
			}
			if err != nil {
				if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--allow-stack-mismatch") {
					t.Fatalf("error not one helpful line: %q", err)
				}
				if CheckStack(c.stack, report.EnvironmentOf(c.env), true) != nil {
					t.Fatal("allowMismatch did not allow")
				}
			}
		})
	}
}

// nvidiaBaseline writes an old baseline (fails with reasons, flakes,
// skips) into the H200 stack's folder under a fresh root and returns the
// folder, the flakes.txt it holds, and the run to record over it: one case
// of every kind WriteBaseline tells apart.
func nvidiaBaseline(t *testing.T) (string, string, *report.Report) {
	t.Helper()
	root := t.TempDir()
	env := map[string]any{
		"vendor": "nvidia",
		"nvidia": map[string]any{"driver": "580.159.04"},
		"gpus":   []any{map[string]any{"arch": "sm_90", "ordinal": 0}},
	}
	dir := Dir(root, report.EnvironmentOf(env))
	if filepath.Base(dir) != "nvidia-sm_90-580" {
		t.Fatalf("Dir = %s", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "fails.txt", "# stack: vendor=nvidia arch=sm_90 driver=580\n# coarse has no P2P atomics https://bugs/1\ncuda.vmm.old.crash,crash\n# fixed meanwhile\ncuda.vmm.fixed,fail\n")
	flakes := "# link flaps\ncuda\\.vmm\\.flaky\\..*\n"
	write(t, dir, "flakes.txt", flakes)
	write(t, dir, "skips.txt", "cuda\\.vmm\\.skipme\n")
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(env), Results: []report.Result{
		res("cuda.vmm.old.crash", report.Crash, report.Pass),     // keeps its reason
		res("cuda.vmm.fixed", report.Pass, report.Pass),          // drops out of fails
		res("cuda.vmm.new.fail", report.Fail, report.Pass),       // reason from caller
		res("cuda.vmm.new.timeout", report.Timeout, report.Pass), // default reason
		res("cuda.vmm.canary", report.Crash, report.Crash),       // canary meeting expected: not a fail
		res("cuda.vmm.racy", report.Pass, report.Fail),           // racy counter that passed: recorded
		res("cuda.vmm.flaky.bw", report.Fail, report.Pass),       // known flake: not baked in
		res("cuda.vmm.skipme", report.Skip, report.Pass),         // skip-listed
		{Case: report.ParseCase("cuda.vmm.gone", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.Missing},
	}}
	return dir, flakes, rep
}

func TestWriteBaseline(t *testing.T) {
	dir, flakes, rep := nvidiaBaseline(t)
	reasons := map[string]string{"cuda.vmm.new.fail": "new driver breaks it\nsecond line dropped", "cuda.vmm.old.crash": "caller reason loses to the file's"}
	if err := WriteBaseline(dir, rep, reasons); err != nil {
		t.Fatal(err)
	}
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatalf("written baseline does not load: %v", err)
	}
	wantFails := map[string]report.Outcome{
		"cuda.vmm.old.crash":   report.Crash,
		"cuda.vmm.new.fail":    report.Fail,
		"cuda.vmm.new.timeout": report.Timeout,
		"cuda.vmm.racy":        report.Pass,
	}
	if !reflect.DeepEqual(s.Fails, wantFails) {
		t.Errorf("fails = %v", s.Fails)
	}
	if got := s.Reasons["cuda.vmm.old.crash"]; got != "coarse has no P2P atomics https://bugs/1" {
		t.Errorf("old reason = %q", got)
	}
	if got := s.Reasons["cuda.vmm.new.fail"]; got != "new driver breaks it" {
		t.Errorf("new reason = %q", got)
	}
	if got := s.Reasons["cuda.vmm.new.timeout"]; got != DefaultReason {
		t.Errorf("default reason = %q", got)
	}
	if len(s.Cases) != 8 || s.Cases["cuda.vmm.gone"] {
		t.Errorf("cases = %v", s.Cases)
	}
	if !reflect.DeepEqual(s.Stack, map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580"}) {
		t.Errorf("stack = %v", s.Stack)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "flakes.txt")); string(b) != flakes {
		t.Errorf("flakes.txt changed: %q", b)
	}
	// The same run gated against what it just recorded passes.
	out, g := Gate(rep.Results[:8], s, nil)
	if !g.Pass {
		t.Errorf("self-gate failed: %v", g.Reasons)
	}
	for _, r := range out {
		if r.Verdict.Gating() {
			t.Errorf("%s: %s", r.ID(), r.Verdict)
		}
	}
}

func TestWriteBaselineHost(t *testing.T) {
	root := t.TempDir()
	env := map[string]any{"vendor": backends.HostName, "goarch": "amd64", "os": map[string]any{"kernel": "6.1.0"}}
	dir := Dir(root, report.EnvironmentOf(env))
	if filepath.Base(dir) != "host-amd64" {
		t.Fatalf("Dir = %s", dir)
	}
	rep := &report.Report{Schema: 1, Environment: report.EnvironmentOf(env), Results: []report.Result{res("host.memfd.a", report.Pass, report.Pass)}}
	if err := WriteBaseline(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# stack: vendor=host arch=amd64\n") {
		t.Errorf("cases.txt = %q", b)
	}
	// A malformed existing file is an error, not silently replaced.
	write(t, dir, "fails.txt", "garbage line\n")
	if err := WriteBaseline(dir, rep, nil); err == nil || !strings.Contains(err.Error(), "fails.txt:1:") {
		t.Errorf("malformed fails.txt: %v", err)
	}
}

// TestWriteBaselineRefusesInvalid: an id with a newline (a line of its own
// in fails.txt) is refused before anything is written.
func TestWriteBaselineRefusesInvalid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	env := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	rep := &report.Report{Schema: 1, Environment: report.EnvironmentOf(env), Results: []report.Result{res("host.memfd.a\nhost.memfd.b", report.Fail, report.Pass)}}
	if err := WriteBaseline(dir, rep, nil); err == nil || !strings.Contains(err.Error(), "invalid report") {
		t.Errorf("invalid id: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s written from an invalid report", dir)
	}
}

// A mutation-scored case whose baseline pass had strong evidence: a pass
// with weak (or no) evidence now is a regression, a rerun that regains the
// kill makes it a flake, a strong pass is expected; cases not listed in
// evidence.txt are judged by outcome alone.
func TestEvidenceRegression(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "evidence.txt", "# stack: vendor=nvidia arch=sm_90 driver=580\ncuda.vmm.litmus.pmp_u32_acqrel_sys\n")
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	res := func(id string, o report.Outcome, e report.Evidence) report.Result {
		return report.Result{Case: report.ParseCase(id, nil), Outcome: o, Expected: report.Pass, Evidence: e}
	}
	const id = "cuda.vmm.litmus.pmp_u32_acqrel_sys"
	strong, weak := res(id, report.Pass, report.EvidenceStrong), res(id, report.Pass, report.EvidenceWeak)
	for _, c := range []struct {
		r     report.Result
		rerun *report.Result
		want  report.Verdict
	}{
		{strong, nil, report.Expected},
		{weak, nil, report.Regression},
		{res(id, report.Pass, ""), nil, report.Regression},
		{weak, &strong, report.NewFlake},
		{weak, &weak, report.Regression},
		{res(id, report.Fail, ""), nil, report.Regression},
		{res("cuda.vmm.litmus.plb_u32_acqrel_sys", report.Pass, report.EvidenceWeak), nil, report.Expected},
	} {
		if got := Judge(c.r, s, c.rerun); got != c.want {
			t.Errorf("%s %s evidence %q (rerun %v): verdict %s, want %s", c.r.ID(), c.r.Outcome, c.r.Evidence, c.rerun != nil, got, c.want)
		}
	}
	weak.Verdict = Judge(weak, s, nil)
	if r := Reason(weak, s); !strings.Contains(r, "weak evidence") {
		t.Errorf("reason %q does not say the evidence was lost", r)
	}
	// WriteBaseline keeps strong-evidence passes only, and removes the file
	// when there are none.
	out := t.TempDir()
	rep := &report.Report{Schema: report.Schema, Environment: report.Environment{}, Results: []report.Result{strong,
		res("cuda.vmm.litmus.psb_u32_seqcst_sys", report.Pass, report.EvidenceWeak)}}
	if err := WriteBaseline(out, rep, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, EvidenceFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), id+"\n") || strings.Contains(string(b), "psb") {
		t.Errorf("evidence.txt:\n%s", b)
	}
	rep.Results = rep.Results[1:]
	if err := WriteBaseline(out, rep, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, EvidenceFile)); !os.IsNotExist(err) {
		t.Errorf("evidence.txt kept without strong passes: %v", err)
	}
}

// Issue 26 item 12: an environment field with a newline never reaches a
// baseline (at a44624c goarch "amd64\nid,crash" wrote an entry into
// fails.txt and cases.txt).
func TestWriteBaselineRefusesControlsInTheStack(t *testing.T) {
	dir := t.TempDir()
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(map[string]any{"vendor": backends.HostName, "goarch": "amd64\nhost.memfd.counter.add,crash"}),
		Results: []report.Result{{Case: report.ParseCase("host.memfd.counter.add", nil), Outcome: report.Pass, Expected: report.Pass}}}
	err := WriteBaseline(dir, rep, nil)
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("newline in goarch: %q", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, CasesFile)); strings.Contains(string(b), ",crash") {
		t.Fatalf("injected line written: %q", b)
	}
}
