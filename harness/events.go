package harness

import (
	"fmt"
	"sync"
	"time"

	"p2patomics/harness/report"
)

// A runner's world events and world starts are facts kept typed, in the
// order they happened: each is built as a report.WorldEvent (or a
// report.WorldStart) at the site that saw it, with its rank, pid and
// signal from what that site knows, never read back from words. The lines
// stdout and summary.txt print are rendered from them (lines); results.json,
// junit.xml and report.html carry the records (events).

// eventLog is a runner's facts. Its own lock: any step of a case, the
// standby's start and the kernel-log charging add to it.
type eventLog struct {
	mu      sync.Mutex
	backend string
	facts   []fact
	// taken is how many facts take has handed out (to the stream).
	taken int
}

// fact is one entry: a world event, or a world's start (timing, not an
// event: timing.worlds records every start).
type fact struct {
	at      time.Time
	event   *report.WorldEvent
	start   report.WorldStart
	standby bool // the start took a standby world (standby.go)
}

// add records e, stamped now and with the log's backend when it names none.
func (l *eventLog) add(e report.WorldEvent) {
	now := time.Now()
	if e.Time == "" {
		e.Time = now.UTC().Format(time.RFC3339)
	}
	if e.Backend == "" {
		e.Backend = l.backend
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.facts = append(l.facts, fact{at: now, event: &e})
}

// addf records a world event of kind in words.
func (l *eventLog) addf(kind, format string, a ...any) {
	l.add(report.WorldEvent{Kind: kind, Detail: fmt.Sprintf(format, a...)})
}

// started records a world's start.
func (l *eventLog) started(s report.WorldStart, standby bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.facts = append(l.facts, fact{at: time.Now(), start: s, standby: standby})
}

// events are the world events so far, in the order they happened.
func (l *eventLog) events() []report.WorldEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report.WorldEvent
	for _, f := range l.facts {
		if f.event != nil {
			out = append(out, *f.event)
		}
	}
	return out
}

// take hands out the world events not handed out before, in order: each
// goes onto the stream once.
func (l *eventLog) take() []report.WorldEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report.WorldEvent
	for _, f := range l.facts[l.taken:] {
		if f.event != nil {
			out = append(out, *f.event)
		}
	}
	l.taken = len(l.facts)
	return out
}

// starts are the world starts so far.
func (l *eventLog) starts() []report.WorldStart {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report.WorldStart
	for _, f := range l.facts {
		if f.event == nil {
			out = append(out, f.start)
		}
	}
	return out
}

// lines renders every fact as the line stdout and summary.txt print: an
// event as "HH:MM:SS: detail", a start as its ready line.
func (l *eventLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.facts))
	for _, f := range l.facts {
		out = append(out, f.line())
	}
	return out
}

func (f fact) line() string {
	if f.event != nil {
		return f.at.Format(time.TimeOnly) + ": " + f.event.Detail
	}
	s := fmt.Sprintf("world of %d %s ranks ready in %.3f s", f.start.Ranks, f.start.Backend, f.start.Seconds)
	if f.standby {
		s += " (a standby, started while the case before ran)"
	}
	return s
}

// RunFault is a finding no case's result carries that fails the run's
// verdict (charge.go), typed where the charging finds it: report's type,
// so the result stream carries it as it is (stream.RunFault), and its
// String is its line in results.json's summary.run_faults.
type RunFault = report.RunFault
