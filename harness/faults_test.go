package harness_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 18 item 1: any rank death between a case's start and its judgement
// is that case's crash, whatever the body returned.
func TestRankDeathDuringCaseIsCrash(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	bodies := deathBodies()
	for _, b := range bodies {
		late := func(w *harness.World) {
			w.Procs[0].Signal(syscall.SIGKILL)
			w.Procs[0].WaitExit(5 * time.Second)
		}
		if b.path != backstop {
			late = nil
		}
		harness.SetLateDeath(r, late)
		j0, b0 := harness.DeathsFound(r)
		res := r.Run(deathCase(b.name, b.noLeak, b.run))
		j1, b1 := harness.DeathsFound(r)
		if res.Outcome != report.Crash || !strings.Contains(res.Detail, "died during the case") {
			t.Errorf("%s: a rank died during the case, got %s: %s", b.name, res.Outcome, res.Detail)
			continue
		}
		if found := [2]int{j1 - j0, b1 - b0}; found[0]+found[1] != 1 || (b.path != either && found[b.path] != 1) {
			t.Errorf("%s: deaths found by the judgement, the backstop: %v; want one, by %s", b.name, found,
				map[int]string{judged: "the judgement", backstop: "the backstop", either: "either"}[b.path])
		}
		if sigs := signals(res); len(sigs) != 1 || (sigs[0] != "SIGKILL" && sigs[0] != "SIGABRT") {
			t.Errorf("%s: ranks' signals %v, want the one signal that killed the one rank", b.name, sigs)
		}
	}
}

// A deathBody is one way a rank dies during a case, and which death check
// (path) must find it.
type deathBody struct {
	name   string
	noLeak bool
	path   int
	run    func(*harness.Ctx) error
}

const judged, backstop, either = 0, 1, 2

func deathBodies() []deathBody {
	// path says which death check must find the death: the judgement's
	// (diedDuring before judge), the backstop's (after the leak check), or
	// either (a death the body does not wait for may reach the judgement
	// before its reaper). With either check removed the other still makes
	// most of these a crash: the counts tell them apart.
	return []deathBody{
		// The repro: rank 0 dies while the body talks to rank 1.
		{"talks_to_the_other_rank", false, judged, func(c *harness.Ctx) error {
			c.W.Procs[0].Signal(syscall.SIGKILL)
			c.W.Procs[0].WaitExit(5 * time.Second)
			b, err := c.Local(1, 4096)
			if err != nil {
				return err
			}
			return c.PutU64(1, b, 0, 1)
		}},
		// Killed and the body returns at once: the reaper may not have
		// seen the exit yet when the runner judges.
		{"returns_at_once", true, either, func(c *harness.Ctx) error {
			c.W.Procs[0].Signal(syscall.SIGKILL)
			return nil
		}},
		{"body_fails", true, judged, func(c *harness.Ctx) error {
			c.W.Procs[1].Signal(syscall.SIGSEGV)
			c.W.Procs[1].WaitExit(5 * time.Second)
			return harness.Failf("expected 1, got 2")
		}},
		// Rank 0 dies after the judgement and the leak check, before its
		// evidence is taken: a result that shows a dead rank is no pass.
		{"dies_after_the_judgement", false, backstop, func(c *harness.Ctx) error { return nil }},
	}
}

// signals lists the signals the result's ranks died of. SIGSEGV sent from
// outside is re-raised by the Go runtime (GOTRACEBACK=crash) as SIGABRT.
func signals(res report.Result) []string {
	var sigs []string
	for _, rk := range res.Ranks {
		if rk.Signal != "" {
			sigs = append(sigs, rk.Signal)
		}
	}
	return sigs
}

// deathCase is a 2-rank host case of TestRankDeathDuringCaseIsCrash's and
// TestDeathsTheCaseOrJudgementCaused's.
func deathCase(id string, noLeak bool, run func(*harness.Ctx) error) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, NoLeak: noLeak,
		Timeout: 5 * time.Second, Grace: 200 * time.Millisecond, Run: run}
}

// Deaths the judgement causes itself, or the case on purpose, are no
// crash.
func TestDeathsTheCaseOrJudgementCaused(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	mk := deathCase
	// Deaths the judgement causes itself (it kills the world after a
	// malformed message or a timeout) do not turn the outcome into a crash.
	if res := r.Run(mk("malformed", true, func(c *harness.Ctx) error { return c.Canary(1, "malformed_reply") })); res.Outcome != report.Error {
		t.Errorf("malformed reply: %s %s, want error", res.Outcome, res.Detail)
	}
	// A case that kills a rank on purpose (what outlives it is the test)
	// is judged by its body, and the next case gets a fresh world.
	var pid0 int
	res := r.Run(mk("sacrifice", true, func(c *harness.Ctx) error {
		pid0 = c.W.Procs[0].Pid
		c.W.Procs[0].Sacrifice()
		c.W.Procs[0].WaitExit(5 * time.Second)
		return nil
	}))
	if res.Outcome != report.Pass {
		t.Fatalf("sacrifice: %s %s", res.Outcome, res.Detail)
	}
	res = r.Run(mk("after", false, func(c *harness.Ctx) error {
		if c.W.Procs[0].Pid == pid0 {
			return harness.Failf("world not respawned")
		}
		return nil
	}))
	if res.Outcome != report.Pass {
		t.Fatalf("after: %s %s", res.Outcome, res.Detail)
	}
}

// Issue 18 item 13: SIGHUP is named; an idle rank's death in a world no
// later case used is still reported; deadlines grow with the rank count.
func TestIdleDeathAtCloseAndSignalNames(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	var idle *harness.Proc
	r.Run(&harness.Case{ID: "a", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 5 * time.Second,
		Run: func(c *harness.Ctx) error { idle = c.W.Procs[1]; return nil }})
	syscall.Kill(idle.Pid, syscall.SIGHUP)
	waitDead(t, idle)
	tally := r.Close()
	if ev := strings.Join(tally.Lines, "\n"); !strings.Contains(ev, "idle rank died") || !strings.Contains(ev, "SIGHUP") {
		t.Fatalf("idle death before Close not reported with its signal named: %s", ev)
	}
	if evs := r.WorldEvents(); len(evs) != 1 || evs[0].Kind != report.EventIdleDeath || evs[0].Signal != "SIGHUP" ||
		evs[0].Rank == nil || *evs[0].Rank != 1 || evs[0].Pid != idle.Pid {
		t.Fatalf("idle death at Close typed as %+v, want idle-death of rank 1 (pid %d) by SIGHUP", evs, idle.Pid)
	}
	c2 := &harness.Case{Case: report.Case{Ranks: 2}, Timeout: 30 * time.Second}
	c64 := &harness.Case{Case: report.Case{Ranks: 64}, Timeout: 30 * time.Second}
	if c2.Limit() != 30*time.Second || c64.Limit() < 8*time.Minute {
		t.Fatalf("limits: 2 ranks %s, 64 ranks %s", c2.Limit(), c64.Limit())
	}
}

// waitDead waits until the parent has reaped p, which under load can take
// longer than any fixed sleep; the bound only stops a broken reaper from
// hanging the test, it is not a timing assertion.
func waitDead(t *testing.T, p *harness.Proc) {
	t.Helper()
	for i := 0; i < 3000 && p.Alive(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Alive() {
		t.Fatalf("rank pid %d still alive 30 s after it was killed", p.Pid)
	}
}
