package suite

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/wire"
)

// fakeProbes makes every GPU backend say why it did not load, except
// those in loaded, and plants GPU device nodes.
func fakeProbes(t *testing.T, nodes []string, loaded ...string) {
	oldP, oldN := probeFunc, gpuNodes
	t.Cleanup(func() { probeFunc, gpuNodes = oldP, oldN })
	probeFunc = func(be string, _ wire.Settings) BackendProbe {
		for _, l := range loaded {
			if l == be {
				return BackendProbe{Probe: report.Probe{Backend: be, Loaded: true, Devices: 2, Device: "NVIDIA H200 sm_90", Driver: "13.0"}}
			}
		}
		return BackendProbe{Probe: report.Probe{Backend: be, Why: be + ": libfoo.so.1: cannot open shared object file"}}
	}
	gpuNodes = func() []string { return nodes }
}

func TestResolveBackends(t *testing.T) {
	// No GPU nodes, nothing loads: host, and every probe said out loud.
	fakeProbes(t, nil)
	bes, probes, err := resolveBackends(&Options{Backend: "auto"})
	if err != nil || len(bes) != 1 || bes[0] != backends.HostName {
		t.Fatalf("auto on a CPU machine: %v %v", bes, err)
	}
	if len(probes) != 4 || !strings.Contains(probes[0].Line(), "backend cuda: not loaded: cuda: libfoo.so.1") || !probes[3].Used {
		t.Errorf("probes: %+v", probes)
	}
	// /dev/nvidia0 exists and libcuda is broken: never a quiet host run.
	fakeProbes(t, []string{"/dev/nvidia0"})
	_, _, err = resolveBackends(&Options{Backend: "auto"})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "/dev/nvidia0 exists but no GPU backend loaded") || !strings.Contains(err.Error(), "--backend=host") {
		t.Errorf("auto with GPU nodes and no loadable backend: %v", err)
	}
	// An explicit backend that cannot load: one line, a hint.
	_, _, err = resolveBackends(&Options{Backend: "cuda"})
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "hint:") {
		t.Errorf("explicit cuda that cannot load: %v", err)
	}
	// auto where cuda loads: cuda only, the line says devices and driver.
	fakeProbes(t, []string{"/dev/nvidia0"}, "cuda")
	bes, probes, err = resolveBackends(&Options{Backend: "auto"})
	if err != nil || len(bes) != 1 || bes[0] != "cuda" || probes[0].Line() != "backend cuda: loaded: 2 device(s) (NVIDIA H200 sm_90), driver 13.0" {
		t.Errorf("auto with cuda: %v %v %q", bes, err, probes[0].Line())
	}
}

func hostCatalogue(o *Options, backend, kind string) []*harness.Case {
	var cs []*harness.Case
	for _, v := range []string{"add", "sub"} {
		id := backend + "." + kind + ".counter." + v
		cs = append(cs, &harness.Case{ID: id, Case: report.Case{Backend: backend, Kind: kind}, Labels: []string{backend, kind, "counter"}, Expected: report.Pass})
	}
	return cs
}

// Focus narrows the plan: the unselected case is not planned, so it can
// never be reported incomplete.
func TestFocusNarrowsThePlan(t *testing.T) {
	o := &Options{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Repeat: 1, Clocks: "off", Out: t.TempDir(),
		FocusStrings: []string{`counter\.add`}}
	r, err := NewRun(o, "", hostCatalogue)
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.Plan.IDs(); len(ids) != 1 || ids[0] != "host.memfd.counter.add" {
		t.Errorf("focus: planned %v", ids)
	}
	o.FocusStrings, o.SkipStrings = nil, []string{"add"}
	r, _ = NewRun(o, "", hostCatalogue)
	if ids := r.Plan.IDs(); len(ids) != 1 || ids[0] != "host.memfd.counter.sub" {
		t.Errorf("skip: planned %v", ids)
	}
	if len(resultsOf(r)) != 1 {
		t.Errorf("results hold unselected cases: %v", resultsOf(r))
	}
}

// A baseline for another stack is refused in NewRun, before any case
// runs, naming the folders beside it that match.
func TestStackCheckedBeforeTheFirstCase(t *testing.T) {
	root := t.TempDir()
	for name, stack := range map[string]string{"riscv": "vendor=host arch=riscv64", "mine": "vendor=host arch=" + goarch()} {
		d := filepath.Join(root, name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, expect.CasesFile), []byte("# stack: "+stack+"\nhost.memfd.counter.add\n"), 0o644)
	}
	o := &Options{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Repeat: 1, Clocks: "off", Out: t.TempDir(),
		Expectations: filepath.Join(root, "riscv")}
	_, err := NewRun(o, "", hostCatalogue)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stack mismatch") || !strings.Contains(err.Error(), filepath.Join(root, "mine")) {
		t.Fatalf("wrong-stack baseline: %v", err)
	}
	o.Expectations = filepath.Join(root, "mine")
	if _, err := NewRun(o, "", hostCatalogue); err != nil {
		t.Errorf("matching baseline refused: %v", err)
	}
}

func goarch() string {
	return environment(&Options{}, nil).GOARCH
}

// --update-expectations shows what it would change and refuses to bless
// a regression without --force.
func TestUpdateExpectationsRefusesRegressions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, expect.CasesFile), []byte("# stack: vendor=host arch="+goarch()+"\nhost.memfd.counter.add\n"), 0o644)
	rep := &report.Report{Schema: 1, Environment: environment(&Options{}, nil), Results: []report.Result{
		{Case: report.ParseCase("host.memfd.counter.add", nil), Outcome: report.Crash, Expected: report.Pass, Ranks: []report.Rank{}}}}
	var out bytes.Buffer
	err := updateBaseline(&out, dir, false, rep)
	if err == nil || !strings.Contains(err.Error(), "refuses to bless 1 regression") {
		t.Fatalf("regression blessed: %v", err)
	}
	if !strings.Contains(out.String(), "host.memfd.counter.add: pass → crash (regression)") {
		t.Errorf("the change was not shown: %q", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, expect.FailsFile)); len(b) > 0 {
		t.Errorf("a refused update wrote fails.txt: %s", b)
	}
	if err := updateBaseline(&out, dir, true, rep); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, expect.FailsFile)); !strings.Contains(string(b), "host.memfd.counter.add,crash") {
		t.Errorf("--force did not record the crash: %s", b)
	}
}

func TestDefaultOutIsTheCheckoutsFromAnySubfolder(t *testing.T) {
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	root := filepath.Dir(filepath.Dir(wd)) // harness/suite → checkout
	os.Chdir(filepath.Join(root, "specs"))
	if got := DefaultOut(); got != filepath.Join(root, "out") {
		t.Errorf("from specs/: %s, want %s", got, filepath.Join(root, "out"))
	}
	os.Chdir(t.TempDir())
	if got := DefaultOut(); got != "./out" {
		t.Errorf("outside a checkout: %s", got)
	}
}

func TestHelpDescribesEveryFlag(t *testing.T) {
	var b bytes.Buffer
	Help(&b)
	for _, d := range FlagTable {
		if !strings.Contains(b.String(), "--"+d.Name) || !strings.Contains(b.String(), d.Usage) {
			t.Errorf("--help lacks %s: %s", d.Name, d.Usage)
		}
	}
}

// Issue 29 item 5: --list with an explicit backend reads the catalogue and
// never opens the driver (on a box without libcuda the CUDA ids list).
func TestListNeedsNoDriver(t *testing.T) {
	fakeProbes(t, nil)
	probed := false
	inner := probeFunc
	probeFunc = func(be string, s wire.Settings) BackendProbe { probed = true; return inner(be, s) }
	r, err := NewRun(&Options{Backend: "cuda", List: true, Ranks: 2, Pairs: "rounds", Clocks: "1ms"}, "", hostCatalogue)
	if err != nil || probed {
		t.Fatalf("cuda --list: probed=%v err=%v", probed, err)
	}
	if ids := r.Plan.IDs(); len(ids) == 0 || !strings.HasPrefix(ids[0], "cuda.") {
		t.Errorf("cuda --list ids: %v", ids)
	}
	// Without --list the explicit backend is still probed, and refused.
	if _, err := NewRun(&Options{Backend: "cuda", Ranks: 2, Pairs: "rounds", Clocks: "1ms"}, "", hostCatalogue); err == nil || !probed {
		t.Errorf("cuda without --list: probed=%v err=%v", probed, err)
	}
}

// Issue 29 item 6: the stack-mismatch hint names the folders a run could
// gate on, never a planted fixture that happens to match the stack.
func TestStackHintSkipsFixtures(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the committed host baselines are amd64")
	}
	exp := filepath.Join("..", "..", "expectations")
	p := &Plan{Opts: &Options{Backend: backends.HostName, Expectations: filepath.Join(exp, "host-riscv64-mismatch")}}
	gs, err := gateSet(p.Opts)
	if err != nil {
		t.Fatal(err)
	}
	p.gate = gs
	err = p.checkStack()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(exp, "host-amd64")) {
		t.Fatalf("hint: %v, want %s named", err, filepath.Join(exp, "host-amd64"))
	}
	if strings.Contains(err.Error(), "host-amd64-verdicts") {
		t.Errorf("hint names the planted fixture: %v", err)
	}
}

// Issue 29 item 6: gated, a case's live line shows the baseline's outcome
// as "expected", not the spec's.
func TestLiveLineShowsBaseline(t *testing.T) {
	var buf bytes.Buffer
	id := "host.memfd.counter.add"
	r := handMade(&Plan{Opts: &Options{}, gate: &expect.Set{Fails: map[string]report.Outcome{id: report.Fail}}}, &buf)
	r.sinks.emit(stream.CaseDone{Result: report.Result{Case: report.ParseCase(id, nil), Outcome: report.Fail, Expected: report.Pass}})
	if !strings.Contains(buf.String(), "expected fail") {
		t.Errorf("gated live line: %q, want the baseline's fail as expected", buf.String())
	}
}
