package suite

import (
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// ledger is the stream's collector (deqp-runner's results collection):
// the first sink, it keeps each case's result by id as CaseDone says it
// (the main pass's, an abort's, a rerun's, a perf pass's), the world
// events and the run's environment as the stream says them, and the
// record they make, which the checkpoint writes (record) and Finish
// judges, with the run faults the stream carried. It also knows the case running now and whether the run has
// finished, after which nothing is recorded (the reports are being
// written: a late result must not change them). Its lock is its own: the
// stream, the executor and the interrupt path each take it briefly.
type ledger struct {
	mu       sync.Mutex
	plan     *Plan // the planned cases, in order (filled before RunStarted)
	results  map[string]report.Result
	env      report.Environment
	world    stream.WorldLog
	faults   []report.RunFault // as the stream carried them, after the run finished too
	current  string
	finished bool
	by       string // what interrupted the run ("" none)
	// notes is what Ginkgo said of a planned case's spec that left no
	// result (HeardSpec): its detail instead of "did not run to the end".
	notes map[string]string
}

func newLedger(p *Plan) *ledger {
	return &ledger{plan: p, results: map[string]report.Result{}, notes: map[string]string{}}
}

// Handle collects: a CaseDone's result (unless the run has finished; it
// ends the running case either way), a world event, a run fault (the
// worlds' close, after the run finished, finds some), the environment.
func (l *ledger) Handle(e stream.Event) {
	l.world.Handle(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch d := e.(type) {
	case stream.CaseDone:
		if !l.finished {
			l.results[d.Result.ID()] = d.Result
		}
		l.current = ""
	case stream.RunFault:
		l.faults = append(l.faults, d.Fault)
	case stream.EnvironmentKnown:
		l.env = d.Environment
	}
}

// runFaults are the run faults the stream carried, in its order, as
// results.json's summary.run_faults lines.
func (l *ledger) runFaults() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, f := range l.faults {
		out = append(out, f.String())
	}
	return out
}

// record is results.json as the stream has told it so far, every planned
// case not done incomplete: what the checkpoint writes. nil once the run
// finished (the final record is RunDone's; a checkpoint would race it).
func (l *ledger) record() *report.Report {
	if l.done() {
		return nil
	}
	l.mu.Lock()
	env := l.env
	l.mu.Unlock()
	return &report.Report{Schema: report.Schema, State: report.StateRunning, Environment: env,
		Results: l.list(l.plan.planned), WorldEvents: l.world.Events()}
}

// worldEvents are the world events the stream carried, ordered by time.
func (l *ledger) worldEvents() []report.WorldEvent { return l.world.Events() }

// note keeps why id has no result (Ginkgo's word for its spec); the first
// note stands.
func (l *ledger) note(id, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.notes[id]; !ok {
		l.notes[id] = why
	}
}

// cutShort records that by (Ginkgo's timeout, fail-fast, an abort) left
// planned cases unrun without stopping the run: the run is judged as
// interrupted by it, its unrun cases not run, never regressions. A run
// already interrupted keeps what interrupted it.
func (l *ledger) cutShort(by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == "" {
		l.by = by
	}
}

// result is id's result so far.
func (l *ledger) result(id string) (report.Result, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res, ok := l.results[id]
	return res, ok
}

// done reports whether the run has finished.
func (l *ledger) done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finished
}

// begin makes id the running case; false when the run has finished.
func (l *ledger) begin(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return false
	}
	l.current = id
	return true
}

// finish ends the run: nothing is recorded after it.
func (l *ledger) finish() {
	l.mu.Lock()
	l.finished = true
	l.mu.Unlock()
}

// interrupt ends the run as by (a signal's name, a flag) ended it: the
// running case, if any, is incomplete with why + " while running".
func (l *ledger) interrupt(by, why string, expected func(id string) report.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur := l.current; cur != "" {
		l.results[cur] = report.Result{Case: report.ParseCase(cur, nil), Outcome: report.Incomplete, Expected: expected(cur),
			Detail: why + " while running", Ranks: []report.Rank{}}
	}
	l.finished, l.by = true, by
}

// interruptedBy is what interrupted the run, "" when nothing did.
func (l *ledger) interruptedBy() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by
}

// list is the results in plan order, unfinished cases incomplete.
func (l *ledger) list(planned []*harness.Case) []report.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]report.Result, 0, len(planned))
	for _, c := range planned {
		res, ok := l.results[c.ID]
		if !ok {
			why := "did not run to the end"
			if n := l.notes[c.ID]; n != "" {
				why = n
			}
			res = incomplete(c, why)
		}
		out = append(out, res)
	}
	return out
}
