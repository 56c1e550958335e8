package suite

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/device"
	"p2patomics/internal/inject"
)

// Run is one invocation of the suite as Ginkgo drives it: the plan (what
// it will do), the executor (what it does, as a stream of events), the
// sinks (what is kept of it), and the end (the run judged, the reports
// written, the exit status). Ginkgo calls Execute once per It; TestMain
// calls the rest in order: WatchSignals, RerunPending, Finish.
type Run struct {
	Plan *Plan
	// Style colours stdout (outputs.StdoutStyle); Stdout is where the live
	// lines, the conclusion and the verdict line go (nil: os.Stdout).
	Style  report.Style
	Stdout io.Writer

	exec  *executor
	sinks *sinks
	// counters is the run's injector counters (inject.NewCounters): every
	// rank of every runner counts in it, and Finish reads each rule's
	// fires from it. Nil without rules.
	counters   *os.File
	t0         time.Time // when the run was planned: the suite's wall clock starts here
	mu         sync.Mutex
	ginkgoErr  error // Ginkgo's own reports not written (GinkgoReportsNotWritten)
	finishOnce sync.Once
	exitCode   int
}

// NewRun resolves the backend, builds and filters the plan from cat, and
// makes every check that can refuse the run before its first case.
func NewRun(o *Options, userFilter string, cat Catalogue) (*Run, error) {
	r := &Run{t0: time.Now()}
	if len(o.inject) > 0 && !o.List {
		// One set of counters for the run, kept open to its end (the suite's
		// fd count is taken later, at the first case).
		c, err := inject.NewCounters(o.inject)
		if err != nil {
			return nil, err
		}
		r.counters = c
	}
	// The executor is wired around the plan before it is filled: the
	// suite's own cases (the leak check) read the executor's worlds.
	r.build(&Plan{Opts: o})
	if err := r.Plan.fill(userFilter, cat, r.exec.self); err != nil {
		return nil, err
	}
	return r, nil
}

// build wires the executor and the sinks around plan p (NewRun fills it
// in after; a test may hand-make one).
func (r *Run) build(p *Plan) {
	r.Plan = p
	o := p.Opts
	r.sinks = &sinks{}
	x := &executor{plan: p, ledger: newLedger(p), perf: &perfWork{}, emit: r.sinks.emit, out: func() io.Writer { return stdoutOf(r) }}
	x.worlds = newWorlds(func(backend string) *harness.Runner {
		set := o.Settings()
		set.InjectCounters = r.counters
		rn := harness.NewRunner(backend, set, o.Seed)
		if p.gate != nil {
			// The baseline's recorded durations make the cases' deadlines
			// (durations.txt): a wedged call costs a multiple of the
			// healthy case.
			rn.Recorded = p.gate.Durations
		}
		rn.Evidence = &harness.Evidence{
			Out: o.Out, TraceAll: o.Trace,
			Env:    func() report.Environment { return environment(o, [][]device.Info{rn.DeviceInfos()}) },
			Binary: suiteBinary(),
			Gate:   p.reproGate(),
			Write:  r.sinks.writeEvidence,
			MakeForm: func(repro string) string {
				// The repro carries the gate (Repro, gateFlags); a gate
				// path that needs quotes cannot sit inside ARGS='…'.
				args := strings.TrimPrefix(repro, ReproBinary()+" ")
				if g := p.reproGate(); g != "" && strings.Contains(g, "'") {
					args = strings.Replace(args, " "+g, "", 1)
				}
				return "make run ARGS='" + args + "'"
			},
		}
		return rn
	})
	x.worlds.makeB = runnerB(o, x.worlds.make) // an A/B run's stack B (abrun.go)
	x.ab = &abRun{o: o, worlds: x.worlds}
	x.self = &selfChecks{opts: o, worlds: x.worlds}
	r.exec = x
	r.sinks.config = func() sinkConfig {
		c := sinkConfig{out: o.Out, checkpoints: o.Out != "" && prepared != nil, total: len(p.planned), need: p.recordRoom(),
			style: r.Style, stdout: stdoutOf(r), collector: x.ledger}
		if p.gate != nil {
			// Gated, "expected" is the baseline's outcome. JudgeOne has
			// set Baseline on every result the run prints; the sink sets
			// it too so a result that reaches it unjudged shows it.
			c.baseline = p.gate.Baseline
		}
		return c
	}
}

// stdoutOf is where r's lines go.
func stdoutOf(r *Run) io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return os.Stdout
}

// WatchSignals makes SIGINT/SIGTERM/SIGHUP kill every rank and still
// write the reports, with unfinished cases marked incomplete. The handler
// itself is installed by Prepare, before the backend probe; this hands it
// the run, and starts the stream (RunStarted: the first checkpoint, every
// case incomplete, and the disk reserve taken).
func (r *Run) WatchSignals() {
	catchSignals(r.Plan.Opts)
	stop := func(sig os.Signal) { r.stop(sigName(sig), "interrupted by "+sigName(sig), sigName(sig)) }
	active.Store(&stop)
	r.exec.facts() // the environment the first record holds
	r.sinks.emit(stream.RunStarted{Total: len(r.Plan.planned)})
}

// Execute runs one case (repeatedly in soak mode) and records the result.
func (r *Run) Execute(c *harness.Case) report.Result { return r.exec.execute(c) }

// RerunPending runs after the last spec: the cases whose first result the
// gate calls a regression, rerun once each in a fresh world per kind (a
// case that meets the baseline then is a flake), then the perf gate's
// re-measurements and --perf-runs' extra passes. An interrupt stops it
// and keeps the first verdicts.
func (r *Run) RerunPending() {
	r.exec.rerunPending()
	r.exec.perfWork()
}

// StopAfter ends the run as a signal would (ranks killed, unfinished cases
// incomplete, reports written, verdict INTERRUPTED naming the flag, exit
// ExitInterrupted) once d has passed. TestMain arms it from testing's
// -test.timeout, a little before testing's own alarm, which would panic
// and leave results.json without the cases that finished.
func (r *Run) StopAfter(d time.Duration, flag string) {
	time.AfterFunc(d, func() {
		if !r.exec.ledger.done() {
			r.stop(flag+" reached", "stopped by "+flag, flag)
		}
	})
}

// stop kills every rank, marks the running case incomplete (detail: why
// + " while running"), records by what the run was interrupted (a signal's
// name, or the -test.timeout flag), writes the reports and exits with
// Finish's status. Interrupted goes on the stream first: a checkpoint in
// flight finishes (its temporary file renamed) and none starts after, so
// os.Exit leaves no temporary file and no late one overwrites the record.
func (r *Run) stop(what, why, by string) {
	fmt.Fprintf(os.Stderr, "p2patomics: %s: stopping ranks, writing results\n", what)
	r.exec.ledger.interrupt(by, why, r.Plan.expected)
	r.sinks.emit(stream.Interrupted{Signal: by})
	r.exec.worlds.killAll()
	os.Exit(r.Finish())
}

// HeardSpec feeds Ginkgo's own report of one spec (the suite's
// ReportAfterEach node) into the run, so a spec Ginkgo ended without the
// case's result is never a silent "did not run to the end":
//   - a body that panicked or failed before its case recorded a result
//     is the case's fail, with Ginkgo's failure text and its location;
//   - a spec Ginkgo skipped or left pending (--ginkgo.timeout elapsed,
//     --ginkgo.fail-fast, an abort, a file filter) is not run: the run
//     is judged as cut short by skipped, Ginkgo's reason (INTERRUPTED,
//     its unrun cases not-run, never regressions);
//   - a spec Ginkgo timed out or interrupted while its body still runs
//     keeps Ginkgo's words as its detail until the body records a result.
//
// A case whose body recorded its result (every normal spec, its Skip and
// Fail included) is left as it is.
func (r *Run) HeardSpec(rep types.SpecReport, skipped string) {
	if rep.LeafNodeType != types.NodeTypeIt {
		return
	}
	c := r.Plan.caseOf(rep.LeafNodeText)
	if c == nil {
		return
	}
	l := r.exec.ledger
	if _, ok := l.result(c.ID); ok {
		return
	}
	switch {
	case rep.State.Is(types.SpecStatePanicked | types.SpecStateFailed | types.SpecStateAborted):
		res := report.Result{Case: c.Identity(), Labels: c.Labels, Outcome: report.Fail, Expected: c.Expected,
			Detail: GinkgoFailure(rep), Ranks: []report.Rank{}, Repro: c.Repro}
		res = expect.JudgeOne(res, r.Plan.gate, report.Environment{})
		res.Inject = r.Plan.Opts.InjectRules()
		if l.done() {
			return // the reports are being written: nothing is recorded now
		}
		if r.Plan.Opts.Out != "" {
			// The folder every failed case has (the verdict line points at
			// it): Ginkgo's whole report of the failure, the repro.
			note := r.sinks.writeEvidence(c.ID, ginkgoEvidence(rep, res, r.exec.worlds.get(c.Backend).ReproScript(c)))
			if note != "" {
				res.Detail = strings.TrimSpace(res.Detail + "; " + note)
			}
		}
		if !l.done() {
			r.sinks.emit(stream.CaseDone{Result: res}) // the ledger records it
		}
	case rep.State.Is(types.SpecStateSkipped | types.SpecStatePending):
		l.note(c.ID, "not run: Ginkgo skipped its spec: "+skipped)
		l.cutShort(skipped)
	case rep.State.Is(types.SpecStateTimedout | types.SpecStateInterrupted):
		l.note(c.ID, "Ginkgo: "+GinkgoFailure(rep))
	default:
		// A spec Ginkgo passed whose case left no result: never seen
		// (Execute records every case it admits), said if it happens.
		l.note(c.ID, fmt.Sprintf("Ginkgo: spec %s before its case recorded a result", rep.State))
	}
}

// LogWriter wraps a log the suite keeps in --out (ginkgo.log): it writes
// while --out has the record's room, then says once that it was cut.
func (r *Run) LogWriter(w io.Writer) io.Writer { return &roomWriter{room: r.sinks.room, w: w} }

// GinkgoReportsNotWritten tells the run, before Finish, that Ginkgo's own
// reports (--ginkgo.json-report, ...; written when Ginkgo's run ends) could
// not be written: the run then exits 3 (ExitWithGinkgoReports), and
// Finish records that in the summary, results.json and junit.xml.
func (r *Run) GinkgoReportsNotWritten(err error) {
	r.mu.Lock()
	r.ginkgoErr = err
	r.mu.Unlock()
}

// Finish writes results.json, junit.xml and the table; it returns the exit
// status (0 when every case met its expected outcome or the gate passed).
//
// It runs once: the signal handler and TestMain may both get here (Ginkgo
// ends the run on SIGTERM too), and whichever comes second waits for the
// first to finish writing, so the process never exits half-way through.
func (r *Run) Finish() int {
	r.finishOnce.Do(func() { r.exitCode = r.finish() })
	return r.exitCode
}

// finish is Finish's one pass, in the order the record needs: the worlds
// closed, the run judged, the baseline recorded when asked, RunDone on the
// stream (results.json first, then the derived reports), the last lines
// on stdout. A run whose Ginkgo reports were not written exits 3 (an
// interrupted one stays 4: ExitWithGinkgoReports), so its last line and
// reports must not say PASS, exit 0.
func (r *Run) finish() int {
	x, p, o := r.exec, r.Plan, r.Plan.Opts
	x.ledger.finish()
	t := x.worlds.closeAll()
	x.facts()
	timing := &report.Timing{Worlds: t.starts, SuiteWallS: math.Round(time.Since(r.t0).Seconds()*1000) / 1000}
	sig := x.ledger.interruptedBy()
	if sig == "" {
		sig = caughtSignal()
	}
	env := environment(o, t.infos)
	env.Backends = recorded(p.Probes)
	env.Started = r.t0.UTC().Format(time.RFC3339) // junit.xml's timestamp, also when re-rendered
	// How many worlds the run started (timing.worlds lists each): a path
	// that breaks must not cost a world per case (docs/FAULTS.md).
	env.WorldsStarted = new(len(timing.Worlds))
	env.InjectFired = injectFired(o.InjectRules(), r.counters)
	rep := p.judge(x.ledger.list(p.planned), env, timing, sig, x.ledger.runFaults())
	rep.WorldEvents = x.ledger.worldEvents()
	if a := x.ab.judge(); a != nil {
		rep.AB = a
		report.ApplyAB(rep.Summary, a) // B worse than A fails the run; the line names B
	}
	code := rep.Summary.ExitStatus
	if o.UpdateExpectations {
		code = max(code, recordBaseline(stdoutOf(r), p, x.perf, rep, sig))
	}
	if c := r.sinks.runDone(rep, t.events, r.t0, o.Out, stdoutOf(r)); c != 0 {
		code = c // reports not written override the verdict's status
	}
	r.mu.Lock()
	gerr := r.ginkgoErr
	r.mu.Unlock()
	r.sinks.noteGinkgoReports(gerr, r.t0, rep, code, t.events)
	printEnd(stdoutOf(r), r.Style, o.Out, rep, t.events, timing)
	return code
}
