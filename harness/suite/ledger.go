package suite

import (
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/report"
)

// ledger is the run's results as cases finish: each case's result by id,
// the case running now, and whether the run has finished, after which
// nothing is recorded (the reports are being written: a late result must
// not change them). Its lock is its own: the executor, the checkpoint's
// snapshot and the interrupt path each take it briefly.
type ledger struct {
	mu       sync.Mutex
	results  map[string]report.Result
	current  string
	finished bool
	by       string // what interrupted the run ("" none)
	// notes is what Ginkgo said of a planned case's spec that left no
	// result (HeardSpec): its detail instead of "did not run to the end".
	notes map[string]string
}

func newLedger() *ledger {
	return &ledger{results: map[string]report.Result{}, notes: map[string]string{}}
}

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

// put records id's result unless the run has finished (late: true), and
// ends the running case.
func (l *ledger) put(id string, res report.Result) (late bool) {
	return l.with(func(m map[string]report.Result) { m[id] = res })
}

// with runs f on the results unless the run has finished (late: true),
// and ends the running case.
func (l *ledger) with(f func(map[string]report.Result)) (late bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.finished {
		f(l.results)
	}
	l.current = ""
	return l.finished
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
