package harness_test

import (
	"os"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 52 item 3: a case that ends its world by design (here a canary,
// Canary and NoLeak like the suite's) has the next world started beside
// it, and the case after takes that standby instead of starting one: a
// fresh world (every rank a new process), its start said in the world's
// events. A case that leaves its world alive starts none. Closing the
// runner ends a standby nobody took: no rank process is left. Count-based:
// StandbyStarted and StandbyUsed, never a clock. Planted: a Runner without
// prestart (the old code) starts no standby and fails the counts.
func TestStandbyWorldForAPlannedRespawn(t *testing.T) {
	earlier := map[string]bool{} // other tests' processes, not this runner's
	for _, k := range children() {
		earlier[k] = true
	}
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	mk := deathCase
	var before []int
	if res := r.Run(mk("plain", false, func(c *harness.Ctx) error { return nil })); res.Outcome != report.Pass || started(r) != 0 {
		t.Fatalf("a plain case: %s %s, %d standbys started", res.Outcome, res.Detail, started(r))
	}
	canary := mk("panics", true, func(c *harness.Ctx) error {
		for _, p := range c.W.Procs {
			before = append(before, p.Pid)
		}
		return c.Canary(1, "panic")
	})
	canary.Canary, canary.Expected = true, report.Crash
	if res := r.Run(canary); res.Outcome != report.Crash || started(r) != 1 {
		t.Fatalf("the canary: %s %s, %d standbys started", res.Outcome, res.Detail, started(r))
	}
	res := r.Run(mk("after", false, func(c *harness.Ctx) error {
		for i, p := range c.W.Procs {
			if p.Pid == before[i] {
				t.Errorf("rank %d is the canary's process %d, not a fresh one", i, p.Pid)
			}
		}
		return nil
	}))
	if res.Outcome != report.Pass || used(r) != 1 {
		t.Fatalf("after the canary: %s %s, %d standbys used", res.Outcome, res.Detail, used(r))
	}
	if lines := harness.EventLines(r); !strings.Contains(strings.Join(lines, "\n"), "(a standby, started while the case before ran)") {
		t.Errorf("the standby's start is not in the events: %q", lines)
	}
	// Taking it started the next one (respawns come in runs); a canary
	// now finds it waiting and starts none; one nobody takes (the world
	// outlived its case) is ended with the runner.
	canary2 := mk("lives", true, func(c *harness.Ctx) error { return nil })
	canary2.Canary = true
	if res := r.Run(canary2); res.Outcome != report.Pass || started(r) != 2 {
		t.Fatalf("a canary that left its world: %s %s, %d started", res.Outcome, res.Detail, started(r))
	}
	r.Close()
	for _, k := range children() {
		if !earlier[k] {
			t.Errorf("rank process %s left after Close", k)
		}
	}
}

// children are this process's child processes.
func children() []string {
	var kids []string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		kids = append(kids, strings.Fields(string(b))...)
	}
	return kids
}

// A GPU backend's leak check reads the device's free memory, which a
// standby's ranks move when they create their contexts beside a running
// case (on one H100 every healthy gated run read 4-5 such starts as
// leaks, issue48-ae422b1). There a standby starts only beside a case that
// ends its world by design, and that case is told so (its own leak check,
// run only on a pass it did not expect, leaves free memory out); a plain
// case starts none. Planted: prestart refusing GPU backends (57dfa3e's
// rule) fails the count; prestart not reporting the GPU start fails the
// flag.
func TestGPUStandbyOnlyBesideAWorldEnder(t *testing.T) {
	for _, b := range []string{"cuda", "hip", "hsa"} {
		r := harness.NewRunner(b, wire.DefaultSettings, 1)
		if harness.Prestart(r, &harness.Case{ID: "x.plain", Case: report.Case{Ranks: 2}}) || started(r) != 0 {
			t.Errorf("%s: a standby started beside a plain (leak-checked) case", b)
		}
		beside := harness.Prestart(r, &harness.Case{ID: "x.canary", Canary: true, Case: report.Case{Ranks: 2}})
		if started(r) != 1 || !beside {
			t.Errorf("%s: beside a canary: %d started, case told %v; want 1, told", b, started(r), beside)
		}
		r.Close()
	}
}

func started(r *harness.Runner) int { n, _ := harness.Standbys(r); return n }
func used(r *harness.Runner) int    { _, n := harness.Standbys(r); return n }
