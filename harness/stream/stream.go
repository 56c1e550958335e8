// Package stream is a run as a stream of events fed, in order, to sinks
// (the shape of Ginkgo's Reporter and deqp-runner's collector): the suite's
// executor emits them as cases run, and an offline tool (cmd/p2preport)
// replays a recorded results.json through the same sinks. It imports
// neither harness nor harness/suite, so the commands under cmd/ may use it
// (TestCommandsNeverImportTheRunLoop).
package stream

import (
	"fmt"
	"sync"
	"time"

	"p2patomics/harness/report"
)

// Event is one thing that happened in a run: RunStarted, CaseStarted,
// CaseDone, WorldEvent, RunFault, EnvironmentKnown, Interrupted, RunDone
// or ReportsNotWritten. An event is a fact: a sink reads it and writes
// nothing into it, the report a RunDone points to included
// (TestNoSinkWritesIntoAnEvent).
type Event interface{ event() }

// RunStarted: the plan exists and no case has run; every case is
// incomplete until it is done.
type RunStarted struct{ Total int }

// CaseStarted: a case was admitted and is about to run.
type CaseStarted struct{ ID string }

// CaseDone: a case finished with its (judged) result, which replaces any
// result the case had: every result the record keeps comes this way, the
// main pass's, an abort's (a case not run), the gate's rerun and each
// perf pass alike (Pass says which).
type CaseDone struct {
	Result report.Result
	Pass   Pass
}

// Pass is which of a case's results a CaseDone carries.
type Pass uint8

const (
	// Main is the case's result from the main pass (one not run too: an
	// abort, Ginkgo's failure before the body recorded one).
	Main Pass = iota
	// Rerun is the gate's rerun in a fresh world (deqp-runner's rule): the
	// result holds both attempts (Result.Rerun) and the verdict from both.
	Rerun
	// PerfPass is a measurement again in a fresh world (the perf gate's
	// re-measurement, a --perf-runs extra pass): Result.PerfReruns grew.
	PerfPass
)

func (p Pass) String() string {
	switch p {
	case Main:
		return "main"
	case Rerun:
		return "rerun"
	case PerfPass:
		return "perf"
	}
	return fmt.Sprintf("Pass(%d)", p)
}

// EnvironmentKnown is the run's fingerprint with the device facts known so
// far: before RunStarted, and again whenever a world brought new facts.
type EnvironmentKnown struct{ Environment report.Environment }

// WorldEvent is one thing a world did outside any case (a rank that died
// idle, crashed while its world started), in the order the runners saw it.
type WorldEvent struct{ Event report.WorldEvent }

// RunFault is a finding no case's result carries that fails the run's
// verdict (a GPU fault logged by a foreign process, or after its case was
// recorded; a rank that died idle after a case), typed as the runner's
// fault book found it, on the stream at the executor's next collection of
// the worlds' facts after it was found: before the next CaseDone, or at
// the run's end once the worlds are closed. The collector keeps them for
// results.json's summary.run_faults (their String, in the order the
// stream carried them). A replay has none: a recorded run's faults are
// its summary's lines, judged as they stand.
type RunFault struct{ Fault report.RunFault }

// Interrupted is the run's one interrupt: every sink flushes what it holds
// on it, once, whatever it was doing.
type Interrupted struct{ Signal string }

// RunDone carries the finished (judged) record and the run's start.
type RunDone struct {
	Report *report.Report
	Events []string
	Start  time.Time
}

func (RunStarted) event()       {}
func (CaseStarted) event()      {}
func (CaseDone) event()         {}
func (WorldEvent) event()       {}
func (RunFault) event()         {}
func (EnvironmentKnown) event() {}
func (Interrupted) event()      {}
func (RunDone) event()          {}

// Sink consumes a run's events. Handle is called in the order the events
// were emitted, never concurrently for one Fanout.
type Sink interface{ Handle(Event) }

// Fanout feeds every event to every sink synchronously under one ordering
// lock: Ginkgo's parallel or Serial specs may emit from several goroutines,
// and every sink still sees one total order, the same for all sinks.
type Fanout struct {
	mu    sync.Mutex
	sinks []Sink
}

// NewFanout returns a Fanout feeding sinks in the order given.
func NewFanout(sinks ...Sink) *Fanout { return &Fanout{sinks: sinks} }

// Add puts s last in the order, from the next event on (a test listens to
// a run's stream this way).
func (f *Fanout) Add(s Sink) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sinks = append(f.sinks, s)
}

// Emit hands e to every sink, in order, before any later event.
func (f *Fanout) Emit(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sinks {
		s.Handle(e)
	}
}

// Replay feeds a recorded run through sinks as the suite fed them:
// RunStarted, every result as CaseStarted and CaseDone in the recorded
// order, the world events, the interrupt when the record says there was
// one, then RunDone.
func Replay(rep *report.Report, start time.Time, sinks ...Sink) {
	f := NewFanout(sinks...)
	f.Emit(RunStarted{Total: len(rep.Results)})
	for _, r := range rep.Results {
		f.Emit(CaseStarted{ID: r.ID()})
		f.Emit(CaseDone{Result: r})
	}
	for _, w := range rep.WorldEvents {
		f.Emit(WorldEvent{Event: w})
	}
	if rep.Summary != nil && rep.Summary.Interrupted != "" {
		f.Emit(Interrupted{Signal: rep.Summary.Interrupted})
	}
	f.Emit(RunDone{Report: rep, Start: start})
}
