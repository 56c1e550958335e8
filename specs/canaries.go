package specs

import (
	"sync/atomic"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/kernels"
)

var flakyRuns atomic.Int32

// canarySpec is the canaries' spec name; add marks its cases Case.Canary.
const canarySpec = "canary"

// The cases the suite's own checks plant (suite.Plant): built here like
// every case, planted by the suite when its check asks for them.
func init() {
	// A case that is still running when its suite is terminated.
	suite.Planter(suite.PlantSleep, func(o *suite.Options, backend, kind string) *harness.Case {
		b := &builder{o: o, backend: backend, kind: kind}
		return b.add(Spec{Name: canarySpec, Variant: "sleep", Ranks: o.Ranks, Expected: report.Pass,
			Labels: []report.Label{LabelManual}, Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error {
				return c.Canary(1, "sleep")
			}})
	})
	// A planted flake that fails on its first run in a suite process and
	// passes on the rerun.
	suite.Planter(suite.PlantFlaky, func(o *suite.Options, backend, kind string) *harness.Case {
		b := &builder{o: o, backend: backend, kind: kind}
		return b.add(Spec{Name: canarySpec, Variant: "flaky", Ranks: o.Ranks, Expected: report.Pass,
			Labels: []report.Label{LabelManual}, Timeout: 30 * time.Second,
			Run: func(c *harness.Ctx) error {
				if flakyRuns.Add(1) == 1 {
					return harness.Failf("planted flake: the first run fails")
				}
				return nil
			}})
	})
	// A case whose body panics in the suite process (a bug in a body):
	// Ginkgo recovers it and the suite hears it as the case's fail.
	suite.Planter(suite.PlantPanic, func(o *suite.Options, backend, kind string) *harness.Case {
		b := &builder{o: o, backend: backend, kind: kind}
		return b.add(Spec{Name: canarySpec, Variant: "body_panics", Ranks: o.Ranks, Expected: report.Pass,
			Labels: []report.Label{LabelManual}, Timeout: 30 * time.Second,
			Run: func(c *harness.Ctx) error {
				panic("planted panic in a case body (P2PAT_INTERNAL_PANIC=1)")
			}})
	})
}

// canaries: every way a rank can end badly, classified on every run, each
// followed by a case that must pass on a fresh world.
func (b *builder) canaries() {
	// The canaries exercise the harness (crash, hang and protocol
	// classification in a backend's ranks), not a memory path: the same
	// purego segv or panic says nothing new on a second kind, and each one
	// costs a world restart. They run on the backend's first kind, or on
	// the one kind a run selected.
	if m := harness.Matrix[b.backend]; b.o.Alloc == "" && len(m) > 0 && b.kind != m[0] {
		return
	}
	type canary struct {
		how      string
		expected report.Outcome
		timeout  time.Duration
		check    func(r report.Result) string
	}
	list := []canary{
		{"purego_segv", report.Crash, 20 * time.Second, nil},
		{"cthread_segv", report.Crash, 20 * time.Second, nil},
		{"abort", report.Crash, 20 * time.Second, nil},
		{"panic", report.Crash, 20 * time.Second, nil},
		{"hang", report.Timeout, PlantedHangBudget, nil},
		{"exit_mid_protocol", report.Crash, 20 * time.Second, nil},
		{"malformed_reply", report.Error, 20 * time.Second, nil},
	}
	for _, cn := range list {
		cc := b.add(Spec{Name: canarySpec, Variant: cn.how, Ranks: b.o.Ranks, Expected: cn.expected,
			Timeout: cn.timeout,
			Run: func(c *harness.Ctx) error {
				return c.Canary(1, cn.how)
			}})
		cc.Grace, cc.NoLeak = 500*time.Millisecond, true
		b.add(Spec{Name: canarySpec, Variant: cn.how + ".after", Ranks: b.o.Ranks, Expected: report.Pass,
			Timeout: 60 * time.Second,
			Run: func(c *harness.Ctx) error {
				return freshWorldCheck(c, cn.how)
			}})
	}
}

// freshWorldCheck is the case after a canary: the world must be a new one
// (every rank respawned) and must work end to end: rank 1 fills rank 0's
// memory with a kernel through its import, rank 0 reads it back. It uses no
// atomics, so it holds on every kind, including those whose atomics fail.
func freshWorldCheck(c *harness.Ctx, after string) error {
	fill := kernels.MustLookup("fill_u64_plain_dev")
	m, err := c.Shared(0, 1<<20, true)
	if err != nil {
		return err
	}
	const n = 4096
	v := uint64(0x5eed0000) + uint64(c.Seed)
	if err := c.RunWitnessed(harness.Launch{Rank: 1, Kernel: fill.Name, Grid: 1, Block: 2, Args: map[string]wireArg{
		"dst": harness.P(m.Bufs[1], 0), "value": harness.V(v), "n": harness.V(n), "block": harness.V(2), "nthreads": harness.V(2)}}, n, "words"); err != nil {
		return err
	}
	sum, err := c.Sum(0, m.Bufs[0], 0, n, 64)
	if err != nil {
		return err
	}
	if sum != v*n {
		return harness.Failf("after the %s canary: rank 0 sums %#x over the words rank 1 filled, expected %#x", after, sum, v*n)
	}
	c.Note("fresh world: ranks %d and %d (pids %d, %d) share memory again", 0, 1, c.W.Procs[0].Pid, c.W.Procs[1].Pid)
	return nil
}
