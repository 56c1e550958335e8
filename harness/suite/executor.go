package suite

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// executor admits and runs the plan's cases, one at a time as Ginkgo
// calls, and puts what happens on the result stream (CaseStarted,
// CaseDone, WorldEvent, RunFault, EnvironmentKnown): the sinks do the rest, the
// ledger first. After the last spec it reruns what the gate calls a
// regression and does the perf work; each result they make is a CaseDone
// too. It reaches no sink but through the stream (emit).
type executor struct {
	plan   *Plan
	ledger *ledger
	worlds *worlds
	self   *selfChecks
	perf   *perfWork
	emit   func(stream.Event)
	out    func() io.Writer // stdout
	env    envCache
	ab     *abRun // an A/B run: both stacks and their blocks (abrun.go)

	mu sync.Mutex
	// reruns are the first attempts the gate calls a regression, in the
	// order they finished: each is rerun once in a fresh world
	// (rerunPending).
	reruns []pendingRerun
}

// execute runs one case (repeatedly in soak mode) and records the result.
func (e *executor) execute(c *harness.Case) report.Result {
	if res, done := e.admit(c); done {
		return res
	}
	e.emit(stream.CaseStarted{ID: c.ID})
	rn := e.worlds.get(c.Backend)
	var res report.Result
	if e.plan.Opts.ab != nil {
		res = e.ab.runs(c, rn, e.ledger.done) // both stacks, block by block (abrun.go)
	} else {
		res = e.soak(c, rn)
	}
	gate := e.plan.gate
	var first *pendingRerun // the attempt the gate reruns, if it does
	if gate != nil && res.Verdict == "" && !rn.JudgedFromSetup(c.ID) {
		// deqp-runner's rule: an unexpected result gets one rerun in a
		// fresh world; meeting the baseline then makes it a flake. The
		// reruns are batched (rerunPending): one fresh world per kind, not
		// one per regressed case. A case judged from its kind's setup
		// streak never ran, and is not rerun either.
		if v := expect.Judge(res, gate, nil); expect.NeedsRerun(v) {
			first = &pendingRerun{c: c, first: res}
		}
		e.perf.flag(gate, c, res)
	}
	// Judged here the way the whole run is judged, so the spec's pass or
	// fail and its live line agree with the verdict.
	res = expect.JudgeOne(res, gate, caseEnv(rn))
	res.Inject = e.plan.Opts.InjectRules() // also on a result the runner did not make (abort)
	if e.done(res, stream.Main) && first != nil {
		e.mu.Lock()
		e.reruns = append(e.reruns, *first)
		e.mu.Unlock()
	}
	return res
}

// done puts a result on the stream (the ledger records it, the checkpoint
// writes it), after the worlds' facts that came with it; false when the
// run has finished: after an interrupt the reports are already being
// written with this case incomplete, a late result changes nothing, and
// no sink takes it.
func (e *executor) done(res report.Result, pass stream.Pass) bool {
	if e.ledger.done() {
		return false
	}
	e.facts()
	e.emit(stream.CaseDone{Result: res, Pass: pass})
	return true
}

// facts puts on the stream the worlds' events and run faults that are not
// on it yet, and the environment when a world brought new device facts.
// A run fault is found under the runner's fault book's lock, often on a
// world's own goroutine (an idle rank's death): pushed from there, a sink
// that asks the runner anything would wait on that lock, and the stream's
// one order would be the goroutines' race. So it is taken here, where
// the world events are, before the next CaseDone (done) and once the
// worlds are closed (Finish).
func (e *executor) facts() {
	for _, w := range e.worlds.fresh() {
		e.emit(stream.WorldEvent{Event: w})
	}
	for _, f := range e.worlds.faults() {
		e.emit(stream.RunFault{Fault: f})
	}
	if env, changed := e.env.now(e.plan.Opts, e.worlds.infos()); changed {
		e.emit(stream.EnvironmentKnown{Environment: env})
	}
}

// admit decides whether c runs: not after the run finished (incomplete),
// not a second time (the first attempt's result), not once the machine
// stopped being trustworthy (abort, recorded and printed here). done is
// true with the result when it does not run; else c is the running case.
func (e *executor) admit(c *harness.Case) (res report.Result, done bool) {
	if e.ledger.done() {
		return report.Result{Case: c.Identity(), Outcome: report.Incomplete, Expected: c.Expected}, true
	}
	if prev, ok := e.ledger.result(c.ID); ok {
		// A second execute of one case is a retry from outside the suite
		// (Ginkgo's FlakeAttempts or MustPassRepeatedly, set by a
		// decorator or a config the flag check did not see): the first
		// attempt's result stands, a crash is never overwritten by a
		// later pass, and the case does not run again.
		return prev, true
	}
	if why := e.worlds.abort(); why != "" {
		res := report.Result{Case: c.Identity(), Labels: c.Labels, Outcome: report.Abort, Expected: c.Expected,
			Detail: "not run: the machine stopped being trustworthy: " + why, Ranks: []report.Rank{}, Repro: c.Repro}
		res = expect.JudgeOne(res, e.plan.gate, report.Environment{})
		e.emit(stream.CaseDone{Result: res}) // recorded, checkpointed and said, as every result is
		return res, true
	}
	if !e.ledger.begin(c.ID) {
		return report.Result{Case: c.Identity(), Outcome: report.Incomplete, Expected: c.Expected}, true
	}
	e.self.noteStart()
	return report.Result{}, false
}

// soak runs c --repeat times (and for its share of --duration), and
// returns the soak's one result: its worst run, with the runs' metrics
// summarised, and an error when not-supported came and went.
func (e *executor) soak(c *harness.Case, rn *harness.Runner) report.Result {
	o := e.plan.Opts
	var res report.Result
	var perCase time.Duration
	if o.Duration > 0 {
		perCase = o.Duration / time.Duration(max(1, len(e.plan.planned)))
	}
	start := time.Now()
	runs, unmet, skips := 0, 0, 0
	var soak []map[string]report.Metric
	for {
		one := rn.Run(c)
		runs++
		soak = append(soak, one.Metrics)
		if !one.OutcomeIs(one.Expected) {
			unmet++
		}
		if one.Outcome == report.Skip {
			skips++
		}
		// A soak's outcome is its worst run: the first unmet one, unless a
		// later one is worse (a not-supported skip, the mildest, never
		// hides a crash or a timeout after it).
		if runs == 1 || (!one.OutcomeIs(one.Expected) && (res.OutcomeIs(res.Expected) || worse(one, res))) {
			res = one
		}
		if runs >= o.Repeat && (perCase == 0 || time.Since(start) >= perCase) {
			break
		}
		if e.ledger.done() || rn.Abort != "" {
			break
		}
	}
	if skips > 0 && skips < runs {
		// Not supported is a fact of the stack: it holds for every run
		// or for none. One that comes and goes is the backend
		// misreporting a failure, an error, never a skip.
		res.Outcome, res.NotSupported = report.Error, ""
		res.Detail = fmt.Sprintf("not supported in %d of %d runs (a backend that does not support the case says so every time): %s", skips, runs, res.Detail)
	}
	if runs > 1 {
		res.Metrics = report.SoakMetrics(soak)
		res.Detail = strings.TrimSpace(fmt.Sprintf("%s (soak: %d runs, %d did not meet %s)", res.Detail, runs, unmet, c.Expected))
	}
	return res
}

// worse reports whether a is a worse outcome than b: a skip (not
// supported) is milder than any other unmet outcome, else severity.
func worse(a, b report.Result) bool {
	if (a.Outcome == report.Skip) != (b.Outcome == report.Skip) {
		return b.Outcome == report.Skip
	}
	return a.Outcome.Severity() > b.Outcome.Severity()
}

// rerunPending reruns the cases whose first result the gate calls a
// regression (the rerun queue sink's), once each, batched: one fresh
// world per backend and kind (its runner's worlds closed once before the
// kind's first rerun). A case that meets the baseline on its rerun is a
// flake. An interrupt stops it and keeps the first verdicts.
func (e *executor) rerunPending() {
	e.mu.Lock()
	pending := e.reruns
	e.reruns = nil
	e.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(e.out(), "rerunning %d case(s) the gate calls regressions, one fresh world per kind\n", len(pending))
	for _, ps := range inGroups(e.plan, pending, pendingRerun.caseOf) {
		e.rerunGroup(ps)
	}
}

type pendingRerun struct {
	c     *harness.Case
	first report.Result
}

func (p pendingRerun) caseOf() *harness.Case { return p.c }

func (e *executor) rerunGroup(ps []pendingRerun) {
	rn := e.worlds.get(ps[0].c.Backend)
	rn.Close() // the kind's one fresh world
	for _, p := range ps {
		if rn.Abort != "" {
			return
		}
		if w := rn.WedgedIn(); w != "" {
			// The driver is wedged in a call (two cases timed out stuck
			// in it): a rerun would wait its budget again for the same
			// answer. The first attempt's verdict stands; a timeout is
			// never forgiven by a rerun anyway (expect.Unforgivable).
			fmt.Fprintf(e.out(), "not rerun %s: the driver is wedged in %s\n", p.c.ID, w)
			continue
		}
		if !e.ledger.begin(p.c.ID) {
			return
		}
		again := rn.Rerun(p.c)
		res := p.first
		// Both attempts are kept: the verdict is judged from both, here
		// and wherever results.json is re-judged.
		res.Rerun = &report.Attempt{Outcome: again.Outcome, Detail: again.Detail, Duration: again.Duration, Evidence: again.Evidence}
		res.Verdict = expect.Judge(res, e.plan.gate, &again)
		res.Detail = strings.TrimSpace(res.Detail + fmt.Sprintf(" (rerun in a fresh world: %s)", again.Outcome))
		res = expect.JudgeOne(res, e.plan.gate, caseEnv(rn))
		res.Inject = e.plan.Opts.InjectRules()
		if !e.done(res, stream.Rerun) { // the live line says "rerun <id>: first → again (verdict)"
			return
		}
	}
}

// again runs one kind's cases ps once more, in a world fresh for this
// round (the kind's runner closed first), and puts each case's result as
// keep makes it from the recorded one on the stream (a perf pass's
// CaseDone), unless the run finished meanwhile. The perf gate's
// re-measurements and --perf-runs' extra passes both run this way
// (againFunc). false when the run was interrupted or the machine stopped
// being trustworthy.
func (e *executor) again(ps []pendingPerf, keep func(p pendingPerf, again, recorded report.Result) report.Result) bool {
	rn := e.worlds.get(ps[0].c.Backend)
	rn.Close() // this round's fresh world for the kind
	for _, p := range ps {
		if rn.Abort != "" || rn.WedgedIn() != "" || !e.ledger.begin(p.c.ID) {
			return false // interrupted, untrustworthy, or a wedged driver's (nothing to measure)
		}
		again := rn.Rerun(p.c)
		recorded, _ := e.ledger.result(p.c.ID)
		if !e.done(keep(p, again, recorded), stream.PerfPass) {
			return false
		}
	}
	return true
}

// perfWork is the perf gate's re-measurements, then --perf-runs' extra
// passes (a recording run has no gate, so only one of the two ever runs).
func (e *executor) perfWork() {
	e.perf.remeasure(e.out(), e.plan, e.ledger, e.again)
	e.perf.extraPasses(e.out(), e.plan, e.ledger, e.again)
}
