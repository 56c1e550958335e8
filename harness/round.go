package harness

import (
	"fmt"
	"sync"

	"p2patomics/harness/report"
)

// A Round runs one case body for several member cases at once (on 8 GPUs:
// the disjoint pairs of one round of a tournament, all on one world) and
// still gives every member its own outcome. Members stay ordinary cases
// with their own ids, so results, baselines and the pair matrix see one
// result per member; the first member the suite runs runs the body, the
// others take the share the body left for them.
//
// A share is taken once: a member that runs again (soak, the gate's rerun
// in a fresh world) finds none and runs the body again, which refreshes
// every member's share.
type Round struct {
	// Name says which round this is, in every member's detail.
	Name string
	// Members are the member case ids, in the order Body's parts come.
	Members []string
	// Body runs every member at once and sets each part's outcome. It
	// returns an error only for what ends the whole round (a rank died,
	// a deadline passed, an allocation failed, a skip for all).
	Body func(c *Ctx, parts []*Part) error
	// Alone runs one member by itself: used once a round could not tell
	// its members apart (see Take).
	Alone func(c *Ctx, member string) error

	mu      sync.Mutex
	pending map[string]*Part
	split   bool
}

// Part is one member's share of a round's run: what its own case reports.
type Part struct {
	ID      string
	Err     error // nil pass, Failf fail, Skipf skip: what the member's case returns
	metrics map[string]Metric
	notes   []string
}

// Metric records a member's metric samples (Ctx.Metric's arguments).
func (p *Part) Metric(k report.MetricKind, method string, samples ...float64) {
	if p.metrics == nil {
		p.metrics = map[string]Metric{}
	}
	m := p.metrics[k.Name]
	m.Unit, m.Better, m.Method = k.Unit, k.Better, method
	m.Samples = append(m.Samples, samples...)
	p.metrics[k.Name] = m
}

// Note adds a line to the member's detail.
func (p *Part) Note(format string, a ...any) { p.notes = append(p.notes, fmt.Sprintf(format, a...)) }

// Take returns member id's outcome, running the round's body when no share
// is waiting for it; the share's metrics and notes are recorded on c.
//
// When the body ends the whole round with a world-fatal error (a crash, a
// timeout) or an error that is not a skip, the members cannot be told
// apart: this member reports the error, naming the round, and every later
// member runs alone, so a pair that kills its world is found by its own
// case. A skip from the body (no peer access, say, or a backend's
// not-supported reply: whatever classOf judges a skip) is every member's skip.
func (r *Round) Take(c *Ctx, id string) error {
	r.mu.Lock()
	if s, ok := r.pending[id]; ok {
		delete(r.pending, id)
		r.mu.Unlock()
		return s.replay(c)
	}
	split := r.split
	r.mu.Unlock()
	if split {
		c.Note("run alone: %s ended without telling its members apart", r.Name)
		return r.Alone(c, id)
	}
	parts := make([]*Part, len(r.Members))
	mine := -1
	for i, m := range r.Members {
		parts[i] = &Part{ID: m}
		if m == id {
			mine = i
		}
	}
	if mine < 0 {
		return fmt.Errorf("case %s is not a member of %s", id, r.Name)
	}
	err := r.Body(c, parts)
	switch classOf(err).outcome() {
	case report.Pass:
	case report.Skip:
		for _, p := range parts {
			p.Err = err
		}
	default:
		r.mu.Lock()
		r.split = true
		r.pending = nil
		r.mu.Unlock()
		return fmt.Errorf("%s (members %d, run at once): %w", r.Name, len(r.Members), err)
	}
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[string]*Part{}
	}
	for i, p := range parts {
		if i != mine {
			r.pending[p.ID] = p
		}
	}
	r.mu.Unlock()
	return parts[mine].replay(c)
}

// replay records the share on the member's own case.
func (p *Part) replay(c *Ctx) error {
	for name, m := range p.metrics {
		c.Metric(report.MetricKind{Name: name, Unit: m.Unit, Better: m.Better}, m.Method, m.Samples...)
	}
	for _, n := range p.notes {
		c.Note("%s", n)
	}
	return p.Err
}

// Tournament returns the rounds of a round-robin tournament on n ranks (the
// circle method): n−1 rounds of n/2 disjoint pairs for even n, n rounds
// with one rank sitting out each for odd n; every unordered pair of ranks
// meets in exactly one round. Each pair is {a, b} with a < b.
func Tournament(n int) [][][2]int {
	if n < 2 {
		return nil
	}
	m := n
	if m%2 == 1 {
		m++ // rank m-1 is the bye
	}
	circle := make([]int, m)
	for i := range circle {
		circle[i] = i
	}
	var rounds [][][2]int
	for range m - 1 {
		var round [][2]int
		for i := 0; i < m/2; i++ {
			a, b := circle[i], circle[m-1-i]
			if a >= n || b >= n {
				continue // the bye
			}
			round = append(round, [2]int{min(a, b), max(a, b)})
		}
		rounds = append(rounds, round)
		// Rank circle[0] stays; the others turn one place.
		last := circle[m-1]
		copy(circle[2:], circle[1:m-1])
		circle[1] = last
	}
	return rounds
}
