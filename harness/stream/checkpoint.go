package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sync"
	"time"

	"p2patomics/harness/report"
)

// CheapCheckpoint: a checkpoint that costs less is never skipped.
const CheapCheckpoint = 20 * time.Millisecond

// Checkpoint keeps results.json as it would stand if the suite died now
// (Snapshot builds that record). The first write (RunStarted: the plan)
// writes it whole; every change after that is a line appended to its
// journal (report.JournalPath; report.Read puts the two together), so a
// case costs what its own result costs to encode, not the whole record
// (issue 52: the rewrite cost 5-13 ms a case, 3.2 s of a 371-case run).
// The final record (RunDone) replaces results.json whole and removes the
// journal. The lines are not synced: a killed parent's lines are in the
// kernel's page cache, and only a machine that loses power loses them.
// When the journal cannot be opened, every write rewrites the whole
// record, as before the journal.
//
// A line costs what one result costs, so every case gets its line. The
// whole rewrites keep their cost model: once one costs more than
// CheapCheckpoint the next waits until ten times that cost has passed,
// and a parent killed then loses the cases finished since the last
// rewrite (without a journal, tens of thousands of cases). A failure is said
// once; the final write decides the exit status. On Interrupted a write
// in flight finishes and none starts after: the final record is
// RunDone's, which the sink writes whatever came before (see final: a
// full disk trims the record rather than lose it).
type Checkpoint struct {
	mu sync.Mutex
	// Path is the results.json written.
	Path string
	// Snapshot is the record as it stands; nil when there is none to
	// write (the run already finished: the final write races no one).
	Snapshot func() *report.Report
	// NoSpace, when set, takes a write error first: true when it was the
	// disk filling, which it has handled (said and recorded) itself.
	NoSpace func(error) bool
	// Stderr gets the one line a failed write says.
	Stderr io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// NoJournal rewrites results.json whole every time, as before the
	// journal (a reader that cannot read one; the cost model's test).
	NoJournal bool
	// WriteAtomic replaces a file whole (report.WriteAtomic when nil; a
	// test's full disk).
	WriteAtomic func(path string, data []byte) error

	last     time.Time
	cost     time.Duration
	said     bool
	stopped  bool
	final    bool
	finalErr error
	// amendErr is ReportsNotWritten's rewrite's error.
	amendErr error

	// journal is open once results.json holds the plan (based); sums are
	// what the record read back holds now: each result's encoding's hash
	// by id, and the environment's and world events' encodings. pending
	// are the ids of cases done whose line a skipped write still owes.
	journal *os.File
	size    int64 // the journal's length after its last whole line
	based   bool
	sums    map[string]uint64
	env, we []byte
	pending []string
}

// Handle writes the plan's record on RunStarted, a line for each CaseDone,
// stops for good on Interrupted, writes the final record on RunDone and
// rewrites it, when it exists, on ReportsNotWritten.
func (c *Checkpoint) Handle(e Event) {
	switch d := e.(type) {
	case RunStarted:
		c.Write()
	case CaseDone:
		c.write(d.Result.ID(), true)
	case Interrupted:
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
	case RunDone:
		c.mu.Lock()
		c.stopped, c.final = true, true
		c.finalErr = c.writeFinal(d.Report)
		if c.finalErr == nil {
			c.closeJournal(true)
		}
		c.mu.Unlock()
	case ReportsNotWritten:
		c.mu.Lock()
		c.amendErr = c.amend(d.Report)
		c.mu.Unlock()
	}
}

// Begin writes the record a run has before its plan (state no-plan), at
// once: the suite's Prepare finds an unwritable --out with it before the
// first case, and a suite killed before its plan leaves this record.
func (c *Checkpoint) Begin(rep *report.Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store(rep, false)
}

// store is the one write of a record to results.json in the module
// (TestOneWriterOfEachFile): whole, indented (report.Report.Write), or
// compact, a third smaller, on a full disk. The journal's lines are
// appended beside it (lines), never to it.
func (c *Checkpoint) store(rep *report.Report, compact bool) error {
	if !compact {
		if c.WriteAtomic == nil {
			return rep.Write(c.Path)
		}
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("report: encode: %w", err)
		}
		return c.WriteAtomic(c.Path, append(b, '\n'))
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("report: encode: %w", err)
	}
	return atomicWriter(c.WriteAtomic).write(c.Path, append(b, '\n'))
}

// amend rewrites the final record, when the run has one, as rep now says
// (ReportsNotWritten). Where the disk has no room for a second copy the
// record replaces the old one in its own space, trimmed and compact as
// the final write does on a full disk.
func (c *Checkpoint) amend(rep *report.Report) error {
	if !exists(c.Path) {
		return nil
	}
	w := atomicWriter(c.WriteAtomic)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = w.inPlace(c.Path, append(b, '\n'))
	}
	if NoSpace(err) {
		if b, err = json.Marshal(Trimmed(rep)); err == nil {
			err = w.inPlace(c.Path, append(b, '\n'))
		}
	}
	if err != nil {
		return fmt.Errorf("results.json (%w)", err)
	}
	return nil
}

// AmendErr is ReportsNotWritten's rewrite's error, nil when there was none
// or it was written.
func (c *Checkpoint) AmendErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.amendErr
}

// closeJournal closes the journal and, once the final record is written
// (compacted), removes it.
func (c *Checkpoint) closeJournal(remove bool) {
	if c.journal != nil {
		c.journal.Close()
		c.journal = nil
	}
	if remove && c.Path != "" {
		os.Remove(report.JournalPath(c.Path))
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
	err := c.store(rep, false)
	if !NoSpace(err) {
		return err
	}
	if c.NoSpace != nil {
		c.NoSpace(err)
	}
	old, rerr := os.ReadFile(c.Path)
	os.Remove(c.Path)
	// Compact, not indented: a third smaller.
	if err2 := c.store(Trimmed(rep), true); err2 != nil {
		if rerr == nil {
			// The last checkpoint goes back where it was (its own space
			// is free again): a record of what finished before is kept.
			atomicWriter(c.WriteAtomic).write(c.Path, old)
		}
		return err2
	}
	return nil
}

// Trimmed is rep with what a full disk cannot hold cut, saying so in the
// environment (trimmed) so no reader takes the cut for the data: rank
// stderr tails to 512 bytes, metric samples, pair rows and matrices; the
// summary and every outcome kept. rep itself is left as it is: it is an
// event's, and no sink writes into an event.
func Trimmed(rep *report.Report) *report.Report {
	out := *rep
	out.Results = make([]report.Result, len(rep.Results))
	for i, res := range rep.Results {
		if len(res.Ranks) > 0 {
			res.Ranks = append([]report.Rank(nil), res.Ranks...)
		}
		for j := range res.Ranks {
			if t := res.Ranks[j].StderrTail; len(t) > 512 {
				res.Ranks[j].StderrTail = "…" + t[len(t)-512:]
			}
		}
		if res.Metrics != nil {
			ms := make(map[string]report.Metric, len(res.Metrics))
			for k, m := range res.Metrics {
				m.Samples = nil
				ms[k] = m
			}
			res.Metrics = ms
		}
		if len(res.KernelLog) > 8 {
			res.KernelLog = res.KernelLog[len(res.KernelLog)-8:]
		}
		out.Results[i] = res
	}
	out.Pairs, out.Matrices = nil, nil
	out.Environment.Trimmed = "--out was full: rank stderr tails cut to 512 bytes, metric samples, pair rows and matrices dropped"
	return &out
}

func (c *Checkpoint) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Write records now, as a CaseDone does, under the cost model: the
// suite's moments that change the record without a case finishing (a
// rerun, a perf pass). Every result that changed since the last write
// gets its line.
func (c *Checkpoint) Write() { c.write("", false) }

// write records the snapshot: whole the first time (or when there is no
// journal), else a line per changed part. A case's own write (caseDone)
// looks only at that case's result and those a skipped write
// left pending; Write looks at every result.
func (c *Checkpoint) write(id string, caseDone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	if caseDone && id != "" {
		c.pending = append(c.pending, id)
	}
	journaling := c.based && c.journal != nil
	if !journaling && c.cost > CheapCheckpoint && c.now().Sub(c.last) < 10*c.cost {
		return
	}
	if c.Snapshot == nil {
		return
	}
	rep := c.Snapshot()
	if rep == nil {
		return
	}
	var err error
	if journaling {
		err = c.lines(rep, !caseDone)
	} else {
		t0 := c.now()
		err = c.whole(rep)
		c.last = c.now()
		c.cost = c.last.Sub(t0)
	}
	if err != nil && !(c.NoSpace != nil && c.NoSpace(err)) && !c.said {
		c.said = true
		fmt.Fprintf(c.Stderr, "p2patomics: %v (results.json is rewritten at the end)\n", err)
	}
}

// whole writes the record whole and, the first time it succeeds, starts
// an empty journal after it (a journal left from before would otherwise
// be read on top of the new record). The journal is emptied before the
// record is written: a parent killed between the two leaves the previous
// record, never lines over a record they do not belong to.
func (c *Checkpoint) whole(rep *report.Report) error {
	if !c.based && !c.NoJournal {
		c.closeJournal(false)
		f, err := os.OpenFile(report.JournalPath(c.Path), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err == nil {
			c.journal, c.size = f, 0
		}
	}
	if err := c.store(rep, false); err != nil {
		return err
	}
	c.pending = c.pending[:0]
	if c.based || c.journal == nil {
		return nil
	}
	c.based = true
	c.sums = make(map[string]uint64, len(rep.Results))
	for _, r := range rep.Results {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("results.json: encode %s: %w", r.ID(), err)
		}
		c.sums[r.ID()] = sum(b)
	}
	c.env, _ = json.Marshal(rep.Environment)
	c.we, _ = json.Marshal(rep.WorldEvents)
	return nil
}

func sum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// changedContext is a journal entry holding rep's environment and world
// events where they differ from what the record read back holds, and
// their encodings (the record's own where unchanged), kept once the line
// is written.
func (c *Checkpoint) changedContext(rep *report.Report) (e report.JournalEntry, env, we []byte) {
	env, we = c.env, c.we
	if b, err := json.Marshal(rep.Environment); err == nil && !bytes.Equal(b, c.env) {
		e.Environment, env = &rep.Environment, b
	}
	if b, err := json.Marshal(rep.WorldEvents); err == nil && !bytes.Equal(b, c.we) {
		events := rep.WorldEvents
		e.WorldEvents, we = &events, b
	}
	return e, env, we
}

// lines appends one journal line holding what changed: the pending
// cases' results (every result when all), the environment and the world
// events when they differ from what the record read back holds. One write
// call: a line is never interleaved, and a torn last line (the disk full)
// is left out by the reader.
func (c *Checkpoint) lines(rep *report.Report, all bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	e, env, we := c.changedContext(rep)
	want := map[string]bool{}
	for _, id := range c.pending {
		want[id] = true
	}
	sums := map[string]uint64{}
	for i := range rep.Results {
		r := &rep.Results[i]
		id := r.ID()
		if !all && !want[id] {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("results.json: encode %s: %w", id, err)
		}
		if s := sum(b); s != c.sums[id] {
			e.Result, sums[id] = r, s
			if err := enc.Encode(e); err != nil {
				return fmt.Errorf("results.json: encode %s: %w", id, err)
			}
			e = report.JournalEntry{}
		}
	}
	if e.Environment != nil || e.WorldEvents != nil {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("results.json: encode: %w", err)
		}
	}
	if buf.Len() == 0 {
		c.pending = c.pending[:0]
		return nil
	}
	if _, err := c.journal.Write(buf.Bytes()); err != nil {
		// What was not written is owed: the next write tries it again,
		// after the torn part is cut (a torn line mid-journal would make
		// it unreadable). A journal that cannot be cut is given up: it is
		// removed and results.json is rewritten whole from then on.
		if terr := c.journal.Truncate(c.size); terr != nil {
			c.closeJournal(true)
		}
		return fmt.Errorf("write %s: %w", report.JournalPath(c.Path), err)
	}
	c.size += int64(buf.Len())
	for id, s := range sums {
		c.sums[id] = s
	}
	c.env, c.we = env, we
	c.pending = c.pending[:0]
	return nil
}
