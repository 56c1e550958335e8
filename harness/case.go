package harness

import (
	"time"

	"p2patomics/harness/report"
)

// Case is one runnable case. Its typed identity is the record's
// (report.Case: backend, kind, spec, variant, ranks, ordered pair),
// embedded so the result carries it as declared, never copied field by
// field; ID is the id report.CaseID derived from it where the case was
// declared.
type Case struct {
	report.Case
	ID       string // report.CaseID(Backend, Kind, Spec, Variant, Ranks)
	Labels   []string
	Expected report.Outcome
	Timeout  time.Duration // whole-case deadline
	Grace    time.Duration // SIGQUIT → SIGKILL grace on timeout
	GPU      bool          // Serial; per-device lock
	NoLeak   bool          // skip the leak check (cases that kill or poison ranks)
	Repro    string
	Run      func(*Ctx) error
	// Clocks: every launch and copy samples its device's clock (the perf
	// cases; specs sets it where it declares the perf label).
	Clocks bool
	// Canary: the case tests the harness's handling of a rank's death, not
	// its kind's setup, so a setup streak neither judges it nor counts it
	// (specs sets it where it builds its canary spec's cases).
	Canary bool
	// Standalone cases run without a world (suite-level canaries).
	Standalone func() (report.Outcome, string)
	// budget, set on the runner's copy of a case the baseline timed
	// (Runner.Recorded), replaces Limit's deadline; budgetWhy says how it
	// was made, for the timeout's detail.
	budget    time.Duration
	budgetWhy string
}

// Limit is the case's deadline: Timeout (30 s when unset) as written for
// the default world of 2 ranks, scaled by every further 4 ranks (a case's
// work grows with the pairs it covers: fdexchange.pattern's fixed 30 s ran
// out at 32 and 64 ranks). Cases that expect a timeout wait longer in a
// large world; a hang is still found.
func (c *Case) Limit() time.Duration {
	if c.budget > 0 {
		return c.budget
	}
	return c.ownLimit()
}

// ownLimit is the case's own deadline as its spec wrote it, whatever
// budget the baseline gave it: the most a case that keeps moving is ever
// waited (patience.go).
func (c *Case) ownLimit() time.Duration {
	t := c.Timeout
	if t == 0 {
		t = 30 * time.Second
	}
	if c.Ranks > 2 {
		t *= time.Duration(1 + (c.Ranks-1)/4)
	}
	return t
}

// Identity is the case's typed identity for its result (report.Case): the
// parts its id was made of (report.CaseID), and its ordered pair (Pair,
// declared with the case). A Case built without its spec and variant (a test's
// or a hand-made case, which sets only ID) is identified by its id, read
// by report's one id parser.
func (c *Case) Identity() report.Case {
	if c.Spec == "" {
		return report.ParseCase(c.ID, c.Labels)
	}
	return c.Case
}
