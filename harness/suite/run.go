package suite

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/device"
	"p2patomics/internal/inject"
)

// Group is the cases of one backend and kind.
type Group struct {
	Name  string
	Cases []*harness.Case
}

// Run is one invocation of the suite: the plan, the runners, the results.
type Run struct {
	Opts        *Options
	LabelFilter string
	Groups      []Group
	planned     []*harness.Case
	runners     map[string]*harness.Runner
	// counters is the run's injector counters (inject.NewCounters): every
	// rank of every runner counts in it, and finish reads each rule's fires
	// from it. Nil without rules.
	counters   *os.File
	mu         sync.Mutex
	results    map[string]report.Result
	current    string
	finished   bool
	signal     string // the signal that interrupted the run ("" when none)
	ginkgoErr  error  // Ginkgo's own reports not written (GinkgoReportsNotWritten)
	startFds   int
	gate       *expect.Set
	finishOnce sync.Once
	exitCode   int
	t0         time.Time // when the run was planned: the suite's wall clock starts here
	// ckpt is the checkpoint sink (lifecycle.go); ckptEnv the
	// fingerprint the checkpoints use, with the device count it knew.
	ckpt     *stream.Checkpoint
	ckptEnv  *report.Environment
	ckptEnvN int
	line     *stream.Live   // the live-line sink (outputs.go's live)
	sinks    *stream.Fanout // every sink, fed in order (lifecycle.go emit)
	// Probes are the backends tried and what each said (environment.backends).
	Probes []BackendProbe
	// Style colours stdout (outputs.StdoutStyle); Stdout is where the live lines,
	// the conclusion and the verdict line go (nil: os.Stdout).
	Style  report.Style
	Stdout io.Writer
	// reruns is the gate's rerun queue sink: the cases waiting for their
	// flake-check rerun, in the order they ran, with their first
	// (unjudged) result.
	reruns stream.RerunQueue
	// perfPending are the passed perf cases with a metric past its
	// perf.txt limit, waiting for their re-measurements (perfrerun.go).
	perfPending []pendingPerf
	// perf is --perf-runs' extra passes (perfruns.go).
	perf perfPasses
	// outFull is set once --out lacks the room results.json keeps
	// (space.go): case folders are no longer written.
	outFull atomic.Bool
	// reserved is the size of the reserve file holding the final
	// record's room (space.go); 0 once released.
	reserved atomic.Uint64
}

type pendingRerun struct {
	c     *harness.Case
	first report.Result
}

// RerunPending reruns the cases whose first result the gate calls a
// regression, once each, batched: one fresh world per backend and kind
// (its runner's worlds closed once before the kind's first rerun). A case
// that meets the baseline on its rerun is a flake. It runs after the last
// spec; an interrupt stops it and keeps the first verdicts. The perf
// gate's re-measurements (RemeasurePerf) follow, then --perf-runs' extra
// passes (PerfPasses; a recording run has no gate, so only one of the two
// ever runs).
func (r *Run) RerunPending() {
	pending := r.pendingReruns()
	defer r.PerfPasses()
	defer r.RemeasurePerf() // deferred last: runs before PerfPasses
	if len(pending) == 0 {
		return
	}
	w := r.stdout()
	fmt.Fprintf(w, "rerunning %d case(s) the gate calls regressions, one fresh world per kind\n", len(pending))
	byGroup := map[string][]pendingRerun{}
	for _, p := range pending {
		k := p.c.Backend + "." + p.c.Kind
		byGroup[k] = append(byGroup[k], p)
	}
	for _, g := range r.Groups {
		ps := byGroup[g.Name]
		delete(byGroup, g.Name)
		r.rerunGroup(ps)
	}
	for _, ps := range byGroup { // a case outside the groups (never, but never lost)
		r.rerunGroup(ps)
	}
}

// pendingReruns takes the rerun queue, each first attempt with its case.
func (r *Run) pendingReruns() []pendingRerun {
	byID := map[string]*harness.Case{}
	for _, g := range r.Groups {
		for _, c := range g.Cases {
			byID[c.ID] = c
		}
	}
	for _, c := range r.planned {
		byID[c.ID] = c
	}
	var ps []pendingRerun
	for _, first := range r.reruns.Take() {
		if c := byID[first.ID()]; c != nil {
			ps = append(ps, pendingRerun{c: c, first: first})
		}
	}
	return ps
}

func (r *Run) rerunGroup(ps []pendingRerun) {
	if len(ps) == 0 {
		return
	}
	rn := r.runner(ps[0].c.Backend)
	rn.Close() // the kind's one fresh world
	for _, p := range ps {
		r.mu.Lock()
		stop := r.finished || rn.Abort != ""
		r.current = p.c.ID
		r.mu.Unlock()
		if stop {
			return
		}
		again := rn.Rerun(p.c)
		res := p.first
		// Both attempts are kept: the verdict is judged from both, here
		// and wherever results.json is re-judged.
		res.Rerun = &report.Attempt{Outcome: again.Outcome, Detail: again.Detail, Duration: again.Duration, Evidence: again.Evidence}
		res.Verdict = expect.Judge(res, r.gate, &again)
		res.Detail = strings.TrimSpace(res.Detail + fmt.Sprintf(" (rerun in a fresh world: %s)", again.Outcome))
		res = expect.JudgeOne(res, r.gate, caseEnv(rn))
		res.Inject = r.Opts.InjectRules()
		r.mu.Lock()
		late := r.finished
		if !late {
			r.results[p.c.ID] = res
		}
		r.current = ""
		r.mu.Unlock()
		if late {
			return
		}
		fmt.Fprintf(r.stdout(), "rerun %s: %s → %s (%s)\n", p.c.ID, p.first.Outcome, again.Outcome, res.Verdict)
	}
	r.checkpoint()
}

func (r *Run) runner(backend string) *harness.Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn, ok := r.runners[backend]
	if !ok {
		set := r.Opts.Settings()
		set.InjectCounters = r.counters
		rn = harness.NewRunner(backend, set, r.Opts.Seed)
		if r.gate != nil {
			// The baseline's recorded durations make the cases' deadlines
			// (durations.txt): a wedged call costs a multiple of the
			// healthy case.
			rn.Recorded = r.gate.Durations
		}
		rn.Evidence = &harness.Evidence{
			Out: r.Opts.Out, TraceAll: r.Opts.Trace,
			Env:    func() report.Environment { return environment(r.Opts, [][]device.Info{rn.Infos}) },
			Binary: suiteBinary(),
			Gate:   r.reproGate(),
			Room:   r.room,
			MakeForm: func(repro string) string {
				args := strings.TrimPrefix(repro, ReproBinary()+" ")
				if g := r.reproGate(); g != "" && !strings.Contains(g, "'") {
					args += " " + g
				}
				return "make run ARGS='" + args + "'"
			},
		}
		r.runners[backend] = rn
	}
	return rn
}

// reproGate is the gate's flags a case's repro.sh passes: --expectations
// with its paths made absolute (repro.sh runs from any directory) and the
// --allow-* flags that changed the verdict; "" for a run that is not gated
// (ungated, or recording a baseline).
func (r *Run) reproGate() string {
	if r.gate == nil || r.Opts.UpdateExpectations {
		return ""
	}
	var abs []string
	for _, p := range strings.Split(r.Opts.Expectations, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		abs = append(abs, p)
	}
	flags := "--expectations=" + shellWord(strings.Join(abs, ","))
	if r.Opts.AllowStackMismatch {
		flags += " --allow-stack-mismatch"
	}
	if r.Opts.AllowNewFlakes {
		flags += " --allow-new-flakes"
	}
	return flags
}

// SpecTimeout is Ginkgo's outer bound for a case: the harness's own
// deadlines end it first, for every repeat of a soak.
func (r *Run) SpecTimeout(c *harness.Case) time.Duration {
	per := c.Limit() + 60*time.Second
	return per*time.Duration(r.Opts.Repeat) + r.Opts.Duration/time.Duration(max(1, len(r.planned))) + per
}

// Execute runs one case (repeatedly in soak mode) and records the result.
func (r *Run) Execute(c *harness.Case) report.Result {
	if res, done := r.admit(c); done {
		return res
	}
	rn := r.runner(c.Backend)
	res := r.soak(c, rn)
	var first *report.Result // the attempt the gate reruns, if it does
	if r.gate != nil && res.Verdict == "" && !rn.JudgedFromSetup(c.ID) {
		// deqp-runner's rule: an unexpected result gets one rerun in a
		// fresh world; meeting the baseline then makes it a flake. The
		// reruns are batched (RerunPending): one fresh world per kind, not
		// one per regressed case. A case judged from its kind's setup
		// streak never ran, and is not rerun either.
		if v := expect.Judge(res, r.gate, nil); expect.NeedsRerun(v) {
			unjudged := res
			first = &unjudged
		}
		r.flagPerf(c, res)
	}
	// Judged here the way the whole run is judged, so the spec's pass or
	// fail and its live line agree with the verdict.
	res = expect.JudgeOne(res, r.gate, caseEnv(rn))
	res.Inject = r.Opts.InjectRules() // also on a result the runner did not make (abort)
	r.mu.Lock()
	late := r.finished
	if !late {
		// After an interrupt the reports are already being written with
		// this case incomplete; a late result must not change them.
		r.results[c.ID] = res
	}
	r.current = ""
	r.mu.Unlock()
	if !late {
		// Late, the interrupt's final write is under way: no sink takes it.
		r.emit(stream.CaseDone{Result: res, First: first})
	}
	return res
}

// admit decides whether c runs: not after the run finished (incomplete),
// not a second time (the first attempt's result), not once the machine
// stopped being trustworthy (abort, recorded and printed here). done is
// true with the result when it does not run; else c is the current case.
func (r *Run) admit(c *harness.Case) (res report.Result, done bool) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return report.Result{Case: c.Identity(), Outcome: report.Incomplete, Expected: c.Expected}, true
	}
	if prev, ok := r.results[c.ID]; ok {
		// A second Execute of one case is a retry from outside the suite
		// (Ginkgo's FlakeAttempts or MustPassRepeatedly, set by a
		// decorator or a config the flag check did not see): the first
		// attempt's result stands, a crash is never overwritten by a
		// later pass, and the case does not run again.
		r.mu.Unlock()
		return prev, true
	}
	for _, rn := range r.runners {
		if rn.Abort != "" {
			r.mu.Unlock()
			res := report.Result{Case: c.Identity(), Labels: c.Labels, Outcome: report.Abort, Expected: c.Expected,
				Detail: "not run: the machine stopped being trustworthy: " + rn.Abort, Ranks: []report.Rank{}, Repro: c.Repro}
			res = expect.JudgeOne(res, r.gate, report.Environment{})
			r.mu.Lock()
			r.results[c.ID] = res
			r.mu.Unlock()
			r.live(res)
			return res, true
		}
	}
	r.current = c.ID
	if r.startFds < 0 {
		// Counted at the first case, once Ginkgo has opened what it keeps.
		r.startFds = countFds()
	}
	r.mu.Unlock()
	return report.Result{}, false
}

// soak runs c --repeat times (and for its share of --duration), and
// returns the soak's one result: its worst run, with the runs' metrics
// summarised, and an error when not-supported came and went.
func (r *Run) soak(c *harness.Case, rn *harness.Runner) report.Result {
	var res report.Result
	var perCase time.Duration
	if r.Opts.Duration > 0 {
		perCase = r.Opts.Duration / time.Duration(max(1, len(r.planned)))
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
		if runs >= r.Opts.Repeat && (perCase == 0 || time.Since(start) >= perCase) {
			break
		}
		r.mu.Lock()
		stop := r.finished || rn.Abort != ""
		r.mu.Unlock()
		if stop {
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

// WatchSignals makes SIGINT/SIGTERM/SIGHUP kill every rank and still
// write the reports, with unfinished cases marked incomplete. The handler
// itself is installed by Prepare, before the backend probe; this hands it
// the plan, and writes the first checkpoint (every case incomplete).
func (r *Run) WatchSignals() {
	catchSignals(r.Opts)
	active.Store(r)
	r.checkpoint()
	if prepared != nil {
		r.reserve()
	}
}

// runnerList copies the runners; call with r.mu held.
func (r *Run) runnerList() []*harness.Runner {
	out := make([]*harness.Runner, 0, len(r.runners))
	for _, rn := range r.runners {
		out = append(out, rn)
	}
	return out
}

func (r *Run) expected(id string) report.Outcome {
	for _, c := range r.planned {
		if c.ID == id {
			return c.Expected
		}
	}
	return report.Pass
}

// Results returns the results in plan order, unfinished cases incomplete.
func (r *Run) Results() []report.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]report.Result, 0, len(r.planned))
	for _, c := range r.planned {
		res, ok := r.results[c.ID]
		if !ok {
			res = report.Result{Case: c.Identity(), Labels: c.Labels, Outcome: report.Incomplete, Expected: c.Expected,
				Detail: "did not run to the end", Ranks: []report.Rank{}, Repro: c.Repro}
		}
		out = append(out, res)
	}
	return out
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
// closed, the run judged, the baseline recorded when asked, results.json
// written first, then the derived reports and the last lines on stdout.
func (r *Run) finish() int {
	r.mu.Lock()
	r.finished = true
	runners := r.runnerList()
	r.mu.Unlock()
	var events, runFaults []string
	var infos [][]device.Info
	timing := &report.Timing{}
	for _, rn := range runners {
		rn.Close()
		events = append(events, rn.Events...)
		runFaults = append(runFaults, rn.Failures...)
		infos = append(infos, rn.Infos)
		timing.Worlds = append(timing.Worlds, rn.Starts...)
	}
	timing.SuiteWallS = math.Round(time.Since(r.t0).Seconds()*1000) / 1000
	r.mu.Lock()
	sig := r.signal
	r.mu.Unlock()
	if sig == "" {
		sig = caughtSignal()
	}
	rep := r.judgeRun(r.finalEnv(infos, timing), timing, sig, runFaults)
	rep.WorldEvents = worldEvents(runners)
	code := rep.Summary.ExitStatus
	if r.Opts.UpdateExpectations {
		code = max(code, r.recordBaseline(rep, sig))
	}
	if c := r.writeOutputs(rep, events); c != 0 {
		code = c // reports not written override the verdict's status
	}
	r.noteGinkgoReports(rep, code)
	r.printEnd(rep, events, timing)
	return code
}

// worldEvents are the runners' typed world events (a rank that crashed or
// hung while its world started, died idle, ...) in the order they happened,
// for results.json, junit.xml and report.html.
func worldEvents(runners []*harness.Runner) []report.WorldEvent {
	var out []report.WorldEvent
	for _, rn := range runners {
		out = append(out, rn.WorldEvents()...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out
}

// finalEnv is results.json's environment: the fingerprint with every
// rank's device facts, the backend probes, when the run started and how
// many worlds it started.
func (r *Run) finalEnv(infos [][]device.Info, timing *report.Timing) report.Environment {
	env := environment(r.Opts, infos)
	env.Backends = recorded(r.Probes)
	env.Started = r.t0.UTC().Format(time.RFC3339) // junit.xml's timestamp, also when re-rendered
	// How many worlds the run started (timing.worlds lists each): a path
	// that breaks must not cost a world per case (docs/FAULTS.md).
	env.WorldsStarted = new(len(timing.Worlds))
	env.InjectFired = r.injectFired()
	return env
}

// injectFired is how many times each injector rule acted in the whole run,
// read from the run's counters (every rank's, a dead one's too); nil
// without rules. Unreadable counters claim nothing rather than zero.
func (r *Run) injectFired() map[string]uint64 {
	rules := r.Opts.InjectRules()
	if len(rules) == 0 || r.counters == nil {
		return nil
	}
	fired, err := inject.ReadFired(r.counters, len(rules))
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: the injector's counters: %v\n", err)
		return nil
	}
	out := make(map[string]uint64, len(rules))
	for i, rule := range rules {
		out[rule] = fired[i]
	}
	return out
}

// judgeRun judges the whole run (expect.JudgeRun: the gate's missing
// cases, the summary) into the report results.json records.
func (r *Run) judgeRun(env report.Environment, timing *report.Timing, sig string, runFaults []string) *report.Report {
	gate := ""
	if r.gate != nil {
		gate = r.Opts.Expectations
	}
	results, g, sum := expect.JudgeRun(r.Results(), r.gate, env, r.selects, gate, r.Opts.Out, expect.Interrupted(sig), expect.RunFaults(runFaults))
	return &report.Report{Schema: report.Schema, Environment: env, Results: results, Gate: g, Summary: &sum,
		Pairs: pairs.PairRows(results), Timing: timing}
}

// countFds counts the suite's open fds, leaving out the kernel log, which
// the harness opens once on first use and keeps.
func countFds() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "/dev/kmsg" {
			n++
		}
	}
	return n
}

// suiteBinary is the running suite binary's absolute path, for repro.sh.
func suiteBinary() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}
