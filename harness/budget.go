package harness

import (
	"fmt"
	"math"
	"sync"
	"time"

	"p2patomics/harness/report"
)

// The deadline made from a baseline's recorded duration: budgetFactor
// times the longest the case took when the baseline was recorded, never
// below budgetFloor (a case of milliseconds on a loaded machine is not a
// hang), both times the run's own slowness (a machine twice as loaded as
// the baseline's gets twice the budget), nor above the case's own Limit.
// The budget is when the case's patience first asks whether it is moving,
// not when it is judged hung (patience.go).
const (
	budgetFactor = 10
	budgetFloor  = 2 * time.Second
)

// pace is the run's own slowness: the times of its latest passing cases
// the baseline timed, beside what the baseline recorded for them. Its own
// lock.
type pace struct {
	mu       sync.Mutex
	got, rec []float64
}

// paceCases is how many of the latest passing cases the pace averages;
// paceMax caps the slowness it gives (a run 8 times slower than its
// baseline is a machine problem a longer budget would only hide).
const (
	paceCases = 24
	paceMax   = 8.0
)

// note adds a passing case's time, beside its recorded time (recorded:
// the baseline's, Runner.Recorded), to the run's pace (a rerun's too: it
// is a measurement of this machine).
func (p *pace) note(recorded map[string]float64, c *Case, res report.Result) {
	d, ok := recorded[c.ID]
	if !ok || res.Outcome != report.Pass || !(d > 0) || math.IsInf(d, 0) || !(res.Duration > 0) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, res.Duration)
	p.rec = append(p.rec, d)
	if n := len(p.got); n > paceCases {
		p.got, p.rec = p.got[n-paceCases:], p.rec[n-paceCases:]
	}
}

// slowness is the run's own pace against its baseline: the sum of its
// latest passing cases' times over the sum the baseline recorded for
// them, never below 1 (a faster machine keeps the recorded budget) nor
// above paceMax.
func (p *pace) slowness() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var got, rec float64
	for i := range p.got {
		got += p.got[i]
		rec += p.rec[i]
	}
	if rec <= 0 {
		return 1
	}
	return min(paceMax, max(1, got/rec))
}

// budgeted returns c as a runner runs it: a copy whose Limit is its
// budget when the baseline recorded its duration, else c itself (its own
// Timeout stays).
func (p *pace) budgeted(recorded map[string]float64, c *Case) *Case {
	d, ok := recorded[c.ID]
	if !ok || c.budget > 0 || d < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return c
	}
	own := c.Limit()
	slow := p.slowness()
	b := min(own, time.Duration(math.Round(max(budgetFloor.Seconds(), d*budgetFactor)*slow*1000))*time.Millisecond)
	cc := *c
	cc.budget = b
	cc.budgetWhy = fmt.Sprintf("%d× the %.3f s the baseline recorded, at least %s", budgetFactor, d, budgetFloor)
	if slow > 1 {
		cc.budgetWhy += fmt.Sprintf(", times %.2f, this run's pace against the baseline", slow)
	}
	cc.budgetWhy += fmt.Sprintf(", at most the case's own %s; longer while its ranks move", own)
	return &cc
}

// auxLimit is the deadline of the requests around a case's body: 30 s,
// or the case's budget when shorter (a call wedged in teardown or the leak
// check must not cost more than one in the body).
func auxLimit(c *Case) time.Duration {
	if c.budget > 0 {
		return min(30*time.Second, c.budget)
	}
	return 30 * time.Second
}
