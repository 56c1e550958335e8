package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
// record is RunDone's, which the sink writes whatever came before (see
// final: a full disk trims the record rather than lose it).
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

	last     time.Time
	cost     time.Duration
	said     bool
	stopped  bool
	final    bool
	finalErr error
}

// Handle writes the plan's first record on RunStarted, rewrites on
// CaseDone, stops for good on Interrupted and writes the final record on
// RunDone.
func (c *Checkpoint) Handle(e Event) {
	switch d := e.(type) {
	case RunStarted, CaseDone:
		c.Write()
	case Interrupted:
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
	case RunDone:
		c.mu.Lock()
		c.stopped, c.final = true, true
		c.finalErr = c.writeFinal(d.Report)
		c.mu.Unlock()
	}
}

// FinalErr is the final write's error; it says so when no RunDone came.
func (c *Checkpoint) FinalErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.final {
		return fmt.Errorf("results.json: the run never ended (no RunDone), the final record was not written to %s", c.Path)
	}
	return c.finalErr
}

// writeFinal writes the final record. When there is no space for it
// beside the last checkpoint, the record's bulk is trimmed (Trim), written
// compact, and it replaces the checkpoint in place: the checkpoint is
// removed first so the new file has its space, and put back if the new
// one still does not fit.
func (c *Checkpoint) writeFinal(rep *report.Report) error {
	err := rep.Write(c.Path)
	if !NoSpace(err) {
		return err
	}
	if c.NoSpace != nil {
		c.NoSpace(err)
	}
	Trim(rep)
	old, rerr := os.ReadFile(c.Path)
	os.Remove(c.Path)
	// Compact, not indented: a third smaller.
	b, err2 := json.Marshal(rep)
	if err2 == nil {
		err2 = report.WriteAtomic(c.Path, append(b, '\n'))
	}
	if err2 != nil {
		if rerr == nil {
			// The last checkpoint goes back where it was (its own space
			// is free again): a record of what finished before is kept.
			report.WriteAtomic(c.Path, old)
		}
		return err2
	}
	return nil
}

// Trim cuts what a full disk cannot hold from the record, saying so in
// the environment (trimmed) so no reader takes the cut for the data: rank
// stderr tails to 512 bytes, metric samples, pair rows and matrices; the
// summary and every outcome kept.
func Trim(rep *report.Report) {
	for i := range rep.Results {
		res := &rep.Results[i]
		for j := range res.Ranks {
			if t := res.Ranks[j].StderrTail; len(t) > 512 {
				res.Ranks[j].StderrTail = "…" + t[len(t)-512:]
			}
		}
		for k, m := range res.Metrics {
			m.Samples = nil
			res.Metrics[k] = m
		}
		if len(res.KernelLog) > 8 {
			res.KernelLog = res.KernelLog[len(res.KernelLog)-8:]
		}
	}
	rep.Pairs, rep.Matrices = nil, nil
	rep.Environment.Trimmed = "--out was full: rank stderr tails cut to 512 bytes, metric samples, pair rows and matrices dropped"
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
	if c.Snapshot == nil {
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
