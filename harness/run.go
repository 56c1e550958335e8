package harness

import (
	"math"
	"time"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// Runner runs one backend's cases on persistent worlds. It is a façade
// over small parts, each with its own file and lock: the world pool
// (pool.go, standby.go), the streak rules (streaks.go, stuck.go), the
// kernel-log watch and its fault book (evidence.go, charge.go), the pace
// that makes deadlines from the baseline (budget.go), and the facts it
// saw, typed where they happened (events.go). A case goes through named
// steps on a caseRun (steps.go), which holds those parts, never the
// Runner.
type Runner struct {
	Backend string
	// Settings go to every rank of every world in its hello.
	Settings wire.Settings
	Seed     int64
	// Evidence says where case folders go (nil: none are written).
	Evidence *Evidence
	// Abort is set when the machine stopped being trustworthy (GPU reset,
	// Xid 79, ...): the suite gives every later case the abort outcome.
	Abort string
	// Recorded is, per case id, the seconds the gate's baseline recorded
	// for the case (expect's durations.txt, the longest of its attempts);
	// nil without one. A case in it gets the deadline budgeted makes from
	// it instead of its own Timeout: a wedged call then costs a multiple
	// of the healthy case, not the 30 to 60 s written for the slowest
	// machine (issue 37 item 4).
	Recorded map[string]float64

	log     *eventLog
	book    *faultBook
	watch   *kernelWatch
	pool    *pool
	streaks *streaks
	pace    pace
	hooks   caseHooks
}

// NewRunner makes a runner for one backend.
func NewRunner(backend string, set wire.Settings, seed int64) *Runner {
	r := &Runner{Backend: backend, Settings: set, Seed: seed}
	r.log = &eventLog{backend: backend}
	r.book = &faultBook{backend: backend, log: r.log}
	r.watch = &kernelWatch{book: r.book, log: r.log}
	r.streaks = &streaks{log: r.log, wedge: &wedges{log: r.log}}
	r.pool = &pool{backend: backend, settings: &r.Settings, log: r.log, book: r.book, worlds: map[int]*World{},
		startFloor: 60 * time.Second, halted: func() bool { return r.streaks.wedgedIn() != "" }}
	return r
}

// Run executes one case and always returns a result. It is a row of named
// steps, each on a caseRun: get the world, take the leak baseline, run the
// body (and teardown), judge, check for leaks, collect the evidence (with
// the backstop for a death found late), finish (streaks, the world's fate).
// A step that ends the case early says so by returning false.
func (r *Runner) Run(c *Case) (res report.Result) {
	t0 := time.Now()
	res = report.Result{Case: c.Identity(), Labels: c.Labels, Expected: c.Expected, Repro: c.Repro, Inject: r.Settings.Inject}
	defer func() {
		res.Duration = math.Round(time.Since(t0).Seconds()*1e6) / 1e6
		if res.Ranks == nil {
			res.Ranks = []report.Rank{}
		}
		if a := r.watch.aborted(); a != "" && r.Abort == "" {
			r.Abort = a
		}
	}()
	if c.Standalone != nil {
		res.Outcome, res.Detail = c.Standalone()
		return res
	}
	if r.streaks.judgedFromSetup(c, &res) || r.streaks.judgedFromWedge(c, &res) {
		return res
	}
	c = r.pace.budgeted(r.Recorded, c)
	cr := &caseRun{pool: r.pool, streaks: r.streaks, watch: r.watch, ev: r.Evidence, pace: &r.pace, hooks: &r.hooks,
		seed: r.Seed, recorded: r.Recorded, c: c, res: &res, timeout: c.Limit(), aux: auxLimit(c)}
	cr.deadline = time.Now().Add(cr.timeout)
	defer func() {
		if cr.w != nil {
			cr.w.pat.CompareAndSwap(cr.pat, nil)
		}
	}()
	if !cr.getWorld() || !cr.takeBaseline() {
		return res
	}
	cr.besideStandby = r.pool.prestart(c)
	cr.runBody()
	cr.judgeCase()
	cr.witnessDrops()
	cr.leakCheck()
	cr.collect()
	cr.finish()
	return res
}

// Rerun runs c again for real (a setup streak does not judge it, nor does
// the rerun extend one): the gate's flake check.
func (r *Runner) Rerun(c *Case) report.Result {
	r.streaks.setRerun(true)
	defer r.streaks.setRerun(false)
	return r.Run(c)
}

// JudgedFromSetup reports whether the case's last result was judged from a
// streak without running.
func (r *Runner) JudgedFromSetup(id string) bool { return r.streaks.wasJudged(id) }

// WedgedIn names the call the driver was taken as wedged in and the case
// that first showed it, "" while none.
func (r *Runner) WedgedIn() string { return r.streaks.wedgedIn() }

// WorldsStarted is how many worlds the runner has started.
func (r *Runner) WorldsStarted() int { return len(r.log.starts()) }

// DeviceInfos returns the device facts of the first world's ranks (safe
// while cases run, for a checkpoint's fingerprint).
func (r *Runner) DeviceInfos() []device.Info { return r.pool.deviceInfos() }

// WorldEvents are the runner's world events so far, typed, in the order
// they happened. A world's start is not one: timing.worlds records every
// start.
func (r *Runner) WorldEvents() []report.WorldEvent { return r.log.events() }

// TakeWorldEvents hands out the world events no earlier call handed out,
// typed, in the order they happened: the suite puts each on the stream
// once.
func (r *Runner) TakeWorldEvents() []report.WorldEvent { return r.log.take() }

// TakeRunFaults hands out the run faults no earlier call handed out,
// typed, in the order they were found: the findings no case's result
// carries that fail the run's verdict (charge.go). The suite puts each on
// the stream once, when it next collects the world events.
func (r *Runner) TakeRunFaults() []RunFault { return r.book.take() }

// Tally is what a runner says once closed.
type Tally struct {
	// Lines are its world events and world starts as stdout and
	// summary.txt print them, rendered from the typed facts.
	Lines []string
	// Infos are the device facts of the first world's ranks.
	Infos []device.Info
	// Starts records every world's start, for the report's timing.
	Starts []report.WorldStart
}

// Close ends every world (a rank that died idle in a world no later case
// used is a world event, and a run fault against its last case:
// TakeRunFaults hands it out) and tallies the runner. A runner closed between
// cases (a fresh world for a kind) runs on; it starts no more standbys.
func (r *Runner) Close() Tally {
	r.pool.close()
	return Tally{Lines: r.log.lines(), Infos: r.pool.deviceInfos(), Starts: r.log.starts()}
}

// NoteRunFault records a run fault found outside the runner's own checks
// (a suite's test plants one): it fails the run's verdict like the fault
// book's own.
func (r *Runner) NoteRunFault(f RunFault) { r.book.note(f) }

// KillAll kills every rank now (interrupt path).
func (r *Runner) KillAll() { r.pool.killAll() }

// ReproScript is c's repro.sh as the runner writes it, for a case folder
// the suite makes itself (a case whose body panicked: suite.Run.HeardSpec).
func (r *Runner) ReproScript(c *Case) string { return r.Evidence.reproScript(c) }
