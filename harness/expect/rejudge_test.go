package expect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// Issue 25 item 4: a baseline that shares less than MinShared of the run's
// cases is refused (a gate against it compares nothing), whatever the
// stack; one with no id at all is not checked.
func TestCheckShared(t *testing.T) {
	s := NewSet()
	for _, id := range []string{"a.b.c", "a.b.d", "a.b.e"} {
		s.Cases[id] = true
	}
	if err := CheckShared(s, []string{"a.b.c", "a.b.d", "x.y.z"}); err != nil {
		t.Errorf("2 of 3 shared: %v", err)
	}
	err := CheckShared(s, []string{"x.y.z", "x.y.w", "a.b.c"})
	if err == nil || !strings.Contains(err.Error(), "shares 1 of this run's 3 cases") || strings.Contains(err.Error(), "\n") {
		t.Errorf("1 of 3 shared: %v", err)
	}
	if err := CheckShared(NewSet(), []string{"x.y.z"}); err != nil {
		t.Errorf("a baseline with no ids: %v", err)
	}
	f := NewSet()
	f.Fails["a.b.c"] = report.Crash // no cases.txt: fails.txt's ids count
	if err := CheckShared(f, []string{"x.y.z"}); err == nil {
		t.Error("fails.txt only, nothing shared: not refused")
	}
}

// Issue 25 item 5: re-judging a recorded run against a baseline uses the
// suite's stack rule (refused unless allowed) and the shared-case rule
// (refused always), leaving the report as it was; the recorded rerun and
// interruption are judged as the run judged them.
func TestJudgeReportRules(t *testing.T) {
	host := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	res := report.Result{Case: report.ParseCase("host.memfd.a.b", nil), Outcome: report.Fail, Expected: report.Pass, Rerun: &report.Attempt{Outcome: report.Pass}}
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host), Results: []report.Result{res}}
	nv := NewSet()
	nv.Stack = map[string]string{"vendor": "nvidia", "arch": "sm_90"}
	nv.Cases["host.memfd.a.b"] = true
	if err := JudgeReport(rep, Rejudge{Set: nv, Gate: "nv"}); err == nil || !strings.Contains(err.Error(), "stack mismatch") || rep.Summary != nil {
		t.Errorf("another stack: %v, summary %v", err, rep.Summary)
	}
	if err := JudgeReport(rep, Rejudge{Set: nv, Gate: "nv", AllowStackMismatch: true}); err != nil || rep.Results[0].Verdict != report.NewFlake || rep.Summary.ExitStatus != 1 {
		t.Errorf("allowed: %v %s", err, rep.Results[0].Verdict)
	}
	other := NewSet()
	other.Cases["cuda.vmm.x.y"] = true
	if err := JudgeReport(rep, Rejudge{Set: other, Gate: "o", AllowStackMismatch: true}); err == nil || !strings.Contains(err.Error(), "shares 0") {
		t.Errorf("nothing shared, --allow-stack-mismatch: %v", err)
	}
	half := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host), Results: []report.Result{
		{Case: report.ParseCase("host.memfd.a.b", nil), Outcome: report.Incomplete, Expected: report.Pass}}}
	s := report.SummarizeRun(half.Results, "", "", "SIGTERM")
	half.Summary = &s
	if err := JudgeReport(half, Rejudge{}); err != nil || half.Summary.Verdict != report.VerdictInterrupted || half.Results[0].Verdict != report.NotRun {
		t.Errorf("interrupted record: %v %+v", err, half.Summary)
	}
}

// Issue 25 item 3: the one update rule. A folder with another stack's
// header, or a run that fell back from auto to host, is refused unless the
// folder is new or force; a regression is refused unless force.
func TestPlanUpdateRefusals(t *testing.T) {
	dir := t.TempDir()
	nv := filepath.Join(dir, "nv")
	os.MkdirAll(nv, 0o755)
	os.WriteFile(filepath.Join(nv, "fails.txt"), []byte("# stack: vendor=nvidia arch=sm_90 driver=580\ncuda.vmm.x.y,crash\n"), 0o644)
	host := filepath.Join(dir, backends.HostName)
	os.MkdirAll(host, 0o755)
	os.WriteFile(filepath.Join(host, "cases.txt"), []byte("# stack: vendor=host arch=amd64\nhost.memfd.a.b\n"), 0o644)
	env := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	fb := map[string]any{"vendor": backends.HostName, "goarch": "amd64", "flags": map[string]any{"backend": "auto"},
		"backends": []any{map[string]any{"backend": backends.HostName, "used": true, "why": "used: no GPU backend loaded"}}}
	if err := CheckUpdate(nv, report.EnvironmentOf(env), false); !errors.Is(err, ErrOtherStack) {
		t.Errorf("another stack: %v", err)
	}
	if err := CheckUpdate(nv, report.EnvironmentOf(env), true); err != nil {
		t.Errorf("--force: %v", err)
	}
	if err := CheckUpdate(host, report.EnvironmentOf(fb), false); !errors.Is(err, ErrFallback) {
		t.Errorf("fallback: %v", err)
	}
	if err := CheckUpdate(filepath.Join(dir, "new"), report.EnvironmentOf(fb), false); err != nil {
		t.Errorf("new folder: %v", err)
	}
	if err := CheckUpdate(host, report.EnvironmentOf(env), false); err != nil {
		t.Errorf("same stack: %v", err)
	}
	crash := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(env), Results: []report.Result{{Case: report.ParseCase("host.memfd.a.b", nil), Outcome: report.Crash, Expected: report.Pass}}}
	if u, err := PlanUpdate(host, crash, false); !errors.Is(err, ErrRegression) || u == nil || len(u.Regressions) != 1 {
		t.Errorf("crash regression: %v %+v", err, u)
	}
	if _, err := PlanUpdate(host, crash, true); err != nil {
		t.Errorf("crash regression, --force: %v", err)
	}
}

// Issue 38 item 8: every surface shows report.Was (the baseline's outcome
// when gated) as a case's expected outcome, so a run re-judged against
// another baseline must not keep the recorded run's baseline outcome: the
// case below was judged against a fail entry; the new baseline has none,
// so it is judged against, and shows, the spec's pass.
func TestJudgeReportDropsTheOldBaseline(t *testing.T) {
	host := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	id := "host.memfd.a.b"
	res := report.Result{Case: report.ParseCase(id, nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.UnexpectedPass, Baseline: report.Fail}
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host), Results: []report.Result{res}}
	s := NewSet()
	s.Cases[id] = true
	if err := JudgeReport(rep, Rejudge{Set: s, Gate: "new"}); err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Baseline != "" || report.Was(r) != report.Pass || r.Verdict != report.Expected {
		t.Errorf("re-judged against a baseline without the entry: baseline %q, judged against %s, verdict %s; want none, pass, expected", r.Baseline, report.Was(r), r.Verdict)
	}
}

// Issue 49 S3: re-judged without a baseline, a recorded verdict is never
// believed by itself: a crash or a fail marked expected in a pass case, a
// crash marked expected-fail without a baseline entry, a crash first
// attempt marked flake, are judged again (gating); what only the baseline
// could say (a fails.txt entry, a flakes.txt match, a skips.txt match) is
// taken from the record where the outcomes agree with it.
func TestRecheckNeverTrustsARecordedVerdict(t *testing.T) {
	env := report.EnvironmentOf(map[string]any{"vendor": backends.HostName, "goarch": "amd64"})
	c := report.ParseCase("host.memfd.a.b", nil)
	for _, tc := range []struct {
		name  string
		r     report.Result
		gated bool
		want  report.Verdict
	}{
		{"crash marked expected", report.Result{Case: c, Outcome: report.Crash, Expected: report.Pass, Verdict: report.Expected}, false, report.Regression},
		{"fail marked expected, gated", report.Result{Case: c, Outcome: report.Fail, Expected: report.Pass, Verdict: report.Expected}, true, report.Regression},
		{"crash marked expected-fail, no baseline outcome", report.Result{Case: c, Outcome: report.Crash, Expected: report.Pass, Verdict: report.ExpectedFail}, true, report.Regression},
		{"crash rerun pass marked flake", report.Result{Case: c, Outcome: report.Crash, Expected: report.Pass, Verdict: report.Flake, Rerun: &report.Attempt{Outcome: report.Pass}}, true, report.NewFlake},
		{"pass marked expected", report.Result{Case: c, Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected}, true, report.Expected},
		{"listed crash", report.Result{Case: c, Outcome: report.Crash, Expected: report.Pass, Baseline: report.Crash, Verdict: report.ExpectedFail}, true, report.ExpectedFail},
		{"known flake", report.Result{Case: c, Outcome: report.Fail, Expected: report.Pass, Verdict: report.KnownFlake}, true, report.KnownFlake},
		{"allowed flake", report.Result{Case: c, Outcome: report.Fail, Expected: report.Pass, Verdict: report.Flake, Rerun: &report.Attempt{Outcome: report.Pass}}, true, report.Flake},
		{"recorded regression", report.Result{Case: c, Outcome: report.Pass, Expected: report.Pass, Verdict: report.Regression}, true, report.Regression},
		{"judged from a crash, marked expected", report.Result{Case: c, Outcome: report.NotRunOutcome, Expected: report.Pass, Verdict: report.Expected, JudgedFrom: &report.JudgedFrom{Case: "host.memfd.a.c", Outcome: report.Crash}}, true, report.Regression},
		{"judged from a listed crash", report.Result{Case: c, Outcome: report.NotRunOutcome, Expected: report.Pass, Baseline: report.Crash, Verdict: report.ExpectedFail, JudgedFrom: &report.JudgedFrom{Case: "host.memfd.a.c", Outcome: report.Crash}}, true, report.ExpectedFail},
	} {
		if got := Recheck(tc.r, tc.gated, false, env); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// A skip skips.txt lists, and a case judged from one, on a device
	// that does not advertise the capability (no capability lost).
	skip := report.Result{Case: report.ParseCase("cuda.vmm.a.b", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.Expected}
	if got := Recheck(skip, true, false, report.Environment{}); got != report.Expected {
		t.Errorf("skip listed in skips.txt: %s", got)
	}
	skip.Outcome, skip.JudgedFrom = report.NotRunOutcome, &report.JudgedFrom{Case: "cuda.vmm.a.c", Outcome: report.Skip}
	if got := Recheck(skip, true, false, report.Environment{}); got != report.Expected {
		t.Errorf("judged from a listed skip: %s", got)
	}
	// A record from before Result.Baseline (no summary) lists a gated
	// expected-fail by its outcome alone.
	old := report.Result{Case: c, Outcome: report.Fail, Expected: report.Pass, Verdict: report.ExpectedFail}
	if got := Recheck(old, true, true, env); got != report.ExpectedFail {
		t.Errorf("legacy expected-fail: %s", got)
	}
}

// Issue 49 B6: the baseline writer (the suite's --update-expectations and
// p2pbaseline) never writes through another user's link: a nobody-owned
// symlink in a sticky folder, to another folder, is refused in one line
// before a file is made; that folder stays empty.
func TestWriteBaselineRefusesAForeignLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test plants a link of uid 65534")
	}
	sticky := filepath.Join(t.TempDir(), "sticky")
	os.Mkdir(sticky, 0o777)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	target := t.TempDir()
	link := filepath.Join(sticky, "bl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	host := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	rep := &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host), Results: []report.Result{
		{Case: report.ParseCase("host.memfd.a.b", nil), Labels: []string{}, Outcome: report.Pass, Expected: report.Pass, Ranks: []report.Rank{}}}}
	if err := CheckUpdate(link, rep.Environment, true); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("CheckUpdate --force through a foreign link (the suite's check before the first case): %v", err)
	}
	err := WriteBaseline(link, rep, nil)
	if err == nil || !strings.Contains(err.Error(), "the symlink on its way "+link+" belongs to uid 65534") || strings.Contains(err.Error(), "\n") {
		t.Errorf("WriteBaseline through a foreign link: %v", err)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	if err := WriteBaseline(filepath.Join(t.TempDir(), "new"), rep, nil); err != nil {
		t.Errorf("a folder of ours: %v", err)
	}
}
