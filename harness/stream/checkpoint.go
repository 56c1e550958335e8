package stream

import (
	"fmt"
	"io"
	"sync"
	"time"

	"p2patomics/harness/report"
)

// CheapCheckpoint: a checkpoint that costs less is never skipped.
const CheapCheckpoint = 20 * time.Millisecond

// Checkpoint rewrites results.json on every CaseDone as it would stand if
// the suite died now (Snapshot builds that record). Once a rewrite costs
// more than CheapCheckpoint (tens of thousands of cases) rewriting is kept
// under a tenth of the run's time: a checkpoint waits until ten times the
// last one's cost has passed, and a parent killed then loses the cases
// finished since the last rewrite. A failure is said once; the final
// write decides the exit status. On Interrupted a rewrite in flight
// finishes (its temporary file renamed) and none starts after: the final
// record is the interrupt path's to write.
type Checkpoint struct {
	mu sync.Mutex
	// Path is the results.json rewritten.
	Path string
	// Snapshot is the record as it stands; nil when there is none to
	// write (the run already finished: the final write races no one).
	Snapshot func() *report.Report
	// NoSpace, when set, takes a write error first: true when it was the
	// disk filling, which it has handled (said and recorded) itself.
	NoSpace func(error) bool
	// Stderr gets the one line a failed rewrite says.
	Stderr io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	last    time.Time
	cost    time.Duration
	said    bool
	stopped bool
}

// Handle rewrites on CaseDone and stops for good on Interrupted.
func (c *Checkpoint) Handle(e Event) {
	switch e.(type) {
	case CaseDone:
		c.Write()
	case Interrupted:
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
	}
}

func (c *Checkpoint) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Write rewrites now, as a CaseDone does, under the cost model: the
// suite's other moments (the plan, a rerun, a perf pass) that change the
// record without a case finishing.
func (c *Checkpoint) Write() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	if c.cost > CheapCheckpoint && c.now().Sub(c.last) < 10*c.cost {
		return
	}
	rep := c.Snapshot()
	if rep == nil {
		return
	}
	t0 := c.now()
	err := rep.Write(c.Path)
	if err != nil && !(c.NoSpace != nil && c.NoSpace(err)) && !c.said {
		c.said = true
		fmt.Fprintf(c.Stderr, "p2patomics: %v (results.json is rewritten at the end)\n", err)
	}
	c.last = c.now()
	c.cost = c.last.Sub(t0)
}
