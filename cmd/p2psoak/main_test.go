package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/report"
)

// ownerDiesRun writes a results.json in which lifetime.owner_dies passed
// while its rank 0 (pid 100) died of SIGKILL, the case's own plan, and
// returns the run as the soak ended it.
func ownerDiesRun(t *testing.T, sc scenario, rankPid int) ended {
	t.Helper()
	rep, err := report.Read("../../harness/report/testdata/host-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var keep []report.Result
	for _, r := range rep.Results {
		if r.Spec == "lifetime" && r.Variant == "owner_dies" {
			keep = append(keep, r)
		}
	}
	if len(keep) != 1 || keep[0].Outcome != report.Pass || len(keep[0].Ranks) < 2 {
		t.Fatalf("testdata has no passing lifetime.owner_dies with two ranks: %d found", len(keep))
	}
	keep[0].Ranks[0].Pid, keep[0].Ranks[0].Signal = 100, "SIGKILL"
	keep[0].Ranks[1].Pid = 101
	rep.Results = keep
	dir := t.TempDir()
	out := filepath.Join(dir, "o")
	if err := rep.Write(filepath.Join(out, "results.json")); err != nil {
		t.Fatal(err)
	}
	return ended{tag: "09-owner-dies-peer-stopped", sc: sc, pid: 1, code: 0, rankPid: rankPid, dir: dir, out: out}
}

// Seed 1796284658885865006: the scenario could not reach rank 1 and the
// case's own kill of rank 0 was judged a fault (p2psoak FAIL). A planned
// kill is never a fault; a death the soak caused, or one in a case that
// plans none, still is.
func TestPlannedKillIsNotAFault(t *testing.T) {
	owner := scenario{name: "owner-dies-peer-stopped", sacrifices: []int{0}}
	for _, tc := range []struct {
		name     string
		sc       scenario
		rankPid  int
		wantFail bool
	}{
		{"the case's own kill, the soak stopped rank 1", owner, 101, false},
		{"the case's own kill, nothing injected", owner, 0, false},
		{"the soak killed that very rank", owner, 100, true},
		{"a case that plans no kill", scenario{name: "rank-sigkill"}, 101, true},
	} {
		s := &soak{}
		s.checkResults(ownerDiesRun(t, tc.sc, tc.rankPid))
		if got := len(s.fails) > 0; got != tc.wantFail {
			t.Errorf("%s: failures %q, want failing=%v", tc.name, s.fails, tc.wantFail)
		}
	}
}

// A scenario whose fault could not be injected says so and is not judged:
// /bin/true as the suite writes no results.json, which an injected run
// fails on.
func TestNotAppliedIsNotJudged(t *testing.T) {
	for _, tc := range []struct {
		inj      injection
		wantFail bool
	}{
		{notApplied("rank 1 never seen"), false},
		{applied("SIGKILL to rank 1", false, 0), true},
	} {
		s := &soak{specs: "/bin/true", out: t.TempDir()}
		s.once(scenario{name: "x", inject: func(*soak, int) injection { return tc.inj }})
		if got := len(s.fails) > 0; got != tc.wantFail {
			t.Errorf("%s: failures %q, want failing=%v", tc.inj.what, s.fails, tc.wantFail)
		}
		if tc.inj.skipped && s.skipped != 1 {
			t.Errorf("%s: %d runs counted not applied, want 1", tc.inj.what, s.skipped)
		}
	}
}

// --runs counts runs (a seed's choices then replay anywhere), never fewer
// than the first pass over every scenario; without it the budget decides.
func TestRunsCount(t *testing.T) {
	n := 0
	for i := 0; more(i, 9, 12, time.Hour, time.Second); i++ {
		n++
	}
	if n != 12 {
		t.Errorf("--runs=12 ran %d", n)
	}
	n = 0
	for i := 0; more(i, 9, 3, time.Hour, time.Second); i++ {
		n++
	}
	if n != 9 {
		t.Errorf("--runs=3 ran %d, want the first pass's 9", n)
	}
	if more(9, 9, 0, 2*time.Second, time.Second) || !more(8, 9, 0, 2*time.Second, time.Second) {
		t.Error("without --runs the budget does not decide after the first pass")
	}
}

// --help is the usage on stdout and exit 0 (internal/cli), a bad flag exit 2.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: p2psoak") {
		t.Errorf("--help: exit %d, stdout %q", code, out.String())
	}
	if code := run([]string{"--nope"}, &out, &errb); code != 2 {
		t.Errorf("--nope: exit %d, want 2", code)
	}
}

// Seed 6254717298444517536 (make soak-sweep): disk-fills-mid-run's filler
// took the disk before the suite started; the suite's refusal is full-out's
// promise, not a failure of the mid-run one. Anything else is still judged.
func TestFillBeforeTheStartIsNotApplied(t *testing.T) {
	mid := scenario{name: "disk-fills-mid-run", fill: true, fillLater: true}
	refusal := "p2patomics: --out=/x/o has 0 KiB free; the record of 63 cases needs at least 142 KiB\n"
	if !fillBeatTheSuite(mid, 2, refusal) {
		t.Error("a refusal for a full disk before the start is judged as a mid-run fill")
	}
	if fillBeatTheSuite(mid, 2, "p2patomics: --case: no such case\n") || fillBeatTheSuite(mid, 1, refusal) ||
		fillBeatTheSuite(scenario{name: "full-out", fill: true}, 2, refusal) {
		t.Error("a run that is not the fill's early refusal is not judged")
	}
}
