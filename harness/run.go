package harness

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/health"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// Backends is the one list of backends: the descriptors of
// harness/backends (one file per backend), GPU backends in the order
// --backend=auto probes them and host, the fallback, last. Matrix,
// GPUBackends and BackendNames derive from it; each rank's backend reports
// the same kinds at hello (checked there, and by TestMatrixMatchesBackends
// without a world).
var Backends = backends.All

// Matrix maps each backend to its allocation kinds (from Backends). The
// suite plans cases from it without loading any backend.
var Matrix = func() map[string][]string {
	m := map[string][]string{}
	for _, b := range Backends {
		m[b.Name] = b.KindNames()
	}
	return m
}()

// GPUBackends are the backends --backend=auto probes, in order.
func GPUBackends() []string {
	var names []string
	for _, b := range Backends {
		if b.GPU {
			names = append(names, b.Name)
		}
	}
	return names
}

// BackendNames lists every backend, the ones without a GPU (host) first
// (as --backend's usage and errors name them), then the GPU backends in
// probe order.
func BackendNames() []string {
	var names []string
	for _, b := range Backends {
		if !b.GPU {
			names = append(names, b.Name)
		}
	}
	return append(names, GPUBackends()...)
}

// Case is one runnable case.
type Case struct {
	ID      string // report.CaseID(Backend, Kind, Spec, Variant, Ranks)
	Backend string
	Kind    string
	Spec    string
	Variant string
	Ranks   int
	// Pair is the ordered pair (source, destination rank) a per-pair case
	// measures, nil for others; its label (report.PairLabel) is derived
	// from it where the case is declared, never read back.
	Pair     *[2]int
	Labels   []string
	Expected report.Outcome
	Timeout  time.Duration // whole-case deadline
	Grace    time.Duration // SIGQUIT → SIGKILL grace on timeout
	GPU      bool          // Serial; per-device lock
	NoLeak   bool          // skip the leak check (cases that kill or poison ranks)
	Repro    string
	Run      func(*Ctx) error
	// Clocks: every launch and copy samples its device's clock (the perf
	// cases; specs sets it where it declares the perf label).
	Clocks bool
	// Canary: the case tests the harness's handling of a rank's death, not
	// its kind's setup, so a setup streak neither judges it nor counts it
	// (specs sets it where it builds its canary spec's cases).
	Canary bool
	// Standalone cases run without a world (suite-level canaries).
	Standalone func() (report.Outcome, string)
	// budget, set on the runner's copy of a case the baseline timed
	// (Runner.Recorded), replaces Limit's deadline; budgetWhy says how it
	// was made, for the timeout's detail.
	budget    time.Duration
	budgetWhy string
}

// Limit is the case's deadline: Timeout (30 s when unset) as written for
// the default world of 2 ranks, scaled by every further 4 ranks (a case's
// work grows with the pairs it covers: fdexchange.pattern's fixed 30 s ran
// out at 32 and 64 ranks). Cases that expect a timeout wait longer in a
// large world; a hang is still found.
func (c *Case) Limit() time.Duration {
	if c.budget > 0 {
		return c.budget
	}
	return c.ownLimit()
}

// ownLimit is the case's own deadline as its spec wrote it, whatever
// budget the baseline gave it: the most a case that keeps moving is ever
// waited (patience.go).
func (c *Case) ownLimit() time.Duration {
	t := c.Timeout
	if t == 0 {
		t = 30 * time.Second
	}
	if c.Ranks > 2 {
		t *= time.Duration(1 + (c.Ranks-1)/4)
	}
	return t
}

// Runner runs cases on persistent worlds.
type Runner struct {
	Backend string
	// Settings go to every rank of every world in its hello.
	Settings wire.Settings
	Seed     int64
	mu       sync.Mutex
	worlds   map[int]*World
	Events   []string // world events: idle deaths, respawns
	// Failures are findings no case's result carries that fail the run's
	// verdict (charge.go): a GPU fault logged by a process that is none of
	// the run's ranks, or one charged to a case whose result was already
	// recorded (its rank's fault logged later, a sticky error or a death
	// found between cases), each naming that case.
	Failures []string
	book     faultBook // whose rank each pid is, each world's last case
	// Infos are the device facts of the first world's ranks (fingerprint).
	Infos []device.Info
	// Evidence says where case folders go (nil: none are written).
	Evidence *Evidence
	// Abort is set when the machine stopped being trustworthy (GPU reset,
	// Xid 79, ...): the suite gives every later case the abort outcome.
	Abort string
	// Starts records every world's start, for the report's timing.
	Starts   []report.WorldStart
	health   health.Snapshot
	kmsgSaid bool
	// errStreak counts each live world's consecutive error outcomes.
	errStreak map[*World]int
	// startStreak counts cases in a row whose world did not start;
	// startBroken, once set, ends every later case at once.
	startStreak int
	startBroken string
	// unavailable is set once the backend failed to open for want of a
	// capability: every later case skips with the same reason at once.
	unavailable *SkipError
	// setup is, per allocation kind, the run of cases in a row that failed
	// the same way (failSig: a setup request's status, or the same crash); from setupStreakMax
	// on, later cases of the kind are judged from it without running.
	setup map[string]*setupStreak
	// judged names the cases judged from a setup streak (never run).
	judged map[string]bool
	// rerun is set while Rerun runs a case: it runs, streak or not.
	rerun bool
	// deaths counts the rank deaths each of Run's two death checks found
	// (deathFound, deathBackstop), for tests.
	deaths [2]int
	// lateDeath, set by tests only, runs between the leak check and the
	// evidence: a rank it kills there is the backstop's alone to find.
	lateDeath func(*World)
	// typed holds the records of the world events in Events (events.go),
	// for results.json, keyed by index in Events; stamped is how many of
	// Events have been typed.
	typed   map[int]report.WorldEvent
	stamped int
	// Recorded is, per case id, the seconds the gate's baseline recorded
	// for the case (expect's durations.txt, the longest of its attempts);
	// nil without one. A case in it gets the deadline budgetOf makes from
	// it instead of its own Timeout: a wedged call then costs a multiple
	// of the healthy case, not the 30 to 60 s written for the slowest
	// machine (issue 37 item 4).
	Recorded map[string]float64
	// wedges are the vendor calls cases timed out stuck in, by call;
	// wedged, once set, is the one the driver is taken as wedged in
	// (stuck.go): every later case is judged not-run from it.
	wedges map[string]*wedge
	wedged *wedge
	// pace is the run's own measure of its slowness against the baseline
	// (Runner.slowness).
	pace pace
	// startFloor is the least a world start may take (the start's
	// deadline is the case's limit, or this when longer): a backend's
	// open (cuInit, a context, a module load) on a loaded machine is not a
	// hang. Tests shorten it.
	startFloor time.Duration
	// standby is the world started beside a case that ends its own
	// (standby.go); StandbyStarted and StandbyUsed count them; NoStandby
	// starts none; closed: the runner was closed, no standby starts.
	standby                     *standby
	StandbyStarted, StandbyUsed int
	NoStandby                   bool
	closed                      bool
}

// setupStreakMax: after this many cases of one kind in a row whose setup
// failed with the same call and status, the kind's later cases (canaries
// aside) are judged from the first of them without running (a driver whose export says
// NOT_SUPPORTED otherwise costs every case of the kind its own attempt).
const setupStreakMax = 3

type setupStreak struct {
	sig     string // request + the rank's message: the same call, the same status
	n       int
	first   string // the first case that hit it
	outcome report.Outcome
	detail  string
}

// setupSig is the signature of an error that came back from a setup
// request (alloc, import) with every rank still answering; "" for any
// other error.
func setupSig(err error) string {
	var re *RemoteError
	if !errors.As(err, &re) || re.Fault != nil || (re.What != "alloc" && re.What != "import") {
		return ""
	}
	return re.What + ": " + rankField.ReplaceAllString(re.Msg, "rank N")
}

// pidField and rankField are what differs between two ranks' identical
// deaths: which rank touched the memory first is the scheduler's choice.
var (
	pidField  = regexp.MustCompile(`\(pid [0-9]+\)`)
	rankField = regexp.MustCompile(`\brank [0-9]+\b`)
)

// failSig is the signature of the way a case failed, for the streak: a
// setup request's error or skip (the same call, the same status), or a
// crash in the same request the same way (a GPU fault the rank reported, or
// a rank's death as classified, its pid left out): a grant that does
// nothing faults every case's first launch. "" for any other ending.
func failSig(res report.Result, err error) string {
	switch res.Outcome {
	case report.Error, report.Skip:
		return setupSig(err)
	case report.Crash:
		var re *RemoteError
		var de *DeadError
		if errors.As(err, &re) && re.Fault != nil {
			return "fault in " + re.What + ": " + rankField.ReplaceAllString(re.Msg, "rank N")
		}
		if errors.As(err, &de) {
			return "crash: " + rankField.ReplaceAllString(pidField.ReplaceAllString(res.Detail, "(pid)"), "rank N")
		}
	}
	return ""
}

// judgedFromSetup returns the result of c judged from its kind's setup
// streak, or false when c must run.
func (r *Runner) judgedFromSetup(c *Case, res *report.Result) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.setup[c.Kind]
	// A case that expects the streak's outcome runs: judged, it would meet
	// its expectation without having run. A control (a planted bug, a
	// canary, an expected failure) runs too: judged, it would have lost
	// its control (expect.Judge), so only its own run can tell.
	if r.rerun || st == nil || st.n < setupStreakMax || c.Canary || c.Expected == st.outcome ||
		report.IsControl(report.Result{Labels: c.Labels, Expected: c.Expected}) {
		return false
	}
	if r.judged == nil {
		r.judged = map[string]bool{}
	}
	r.judged[c.ID] = true
	// Its own outcome, never the streak's: a skip or an error would read
	// as a run that said so (docs/GATING.md, "Cases judged without
	// running").
	res.Outcome = report.NotRunOutcome
	res.JudgedFrom = &report.JudgedFrom{Case: st.first, Outcome: st.outcome}
	res.Detail = fmt.Sprintf("not run: judged from %s, the first of %d %s cases in a row that failed the same way (%s): %s",
		st.first, st.n, c.Kind, st.sig, st.detail)
	return true
}

// noteSetup extends or ends c's kind's setup streak with the case's end.
func (r *Runner) noteSetup(c *Case, res report.Result, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rerun || c.Canary {
		// A canary tests the harness's handling of a rank's death, not
		// the kind's setup: it neither extends nor ends a streak, and is
		// never judged from one.
		return
	}
	sig := failSig(res, err)
	if sig == "" || res.Outcome == c.Expected {
		// Only a case that missed its expected outcome extends a streak:
		// a control's expected crash never judges the cases after it.
		delete(r.setup, c.Kind)
		return
	}
	if r.setup == nil {
		r.setup = map[string]*setupStreak{}
	}
	st := r.setup[c.Kind]
	if st == nil || st.sig != sig || st.outcome != res.Outcome {
		st = &setupStreak{sig: sig, first: c.ID, outcome: res.Outcome, detail: res.Detail}
		r.setup[c.Kind] = st
	}
	if st.n++; st.n == setupStreakMax {
		r.Events = append(r.Events, fmt.Sprintf("%s: %d %s cases in a row from %s failed the same way (%s); the kind's later cases are judged from it without running",
			time.Now().Format(time.TimeOnly), st.n, c.Kind, st.first, sig))
	}
}

// JudgedFromSetup reports whether the case's last result was judged from a
// setup streak without running.
func (r *Runner) JudgedFromSetup(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.judged[id]
}

// Rerun runs c again for real (a setup streak does not judge it, nor does
// the rerun extend one): the gate's flake check.
func (r *Runner) Rerun(c *Case) report.Result {
	r.mu.Lock()
	r.rerun = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.rerun = false
		r.mu.Unlock()
	}()
	return r.Run(c)
}

// WorldsStarted is how many worlds the runner has started.
func (r *Runner) WorldsStarted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.Starts)
}

// NewRunner makes a runner for one backend.
func NewRunner(backend string, set wire.Settings, seed int64) *Runner {
	return &Runner{Backend: backend, Settings: set, Seed: seed, worlds: map[int]*World{}, startFloor: 60 * time.Second}
}

func (r *Runner) world(n int, deadline time.Time) (*World, error) {
	r.mu.Lock()
	if w, ok := r.worlds[n]; ok {
		if w.Alive() {
			r.mu.Unlock()
			return w, nil
		}
		delete(r.worlds, n)
		// A rank died while idle (or the last case broke the world): a
		// world event, not the next case's fault.
		for _, p := range w.Procs {
			if !p.Alive() && w.broken.Load() == nil {
				d := Classify(p)
				after := r.afterLast(w, fmt.Sprintf("its world's rank %d died idle (%s)", p.Rank, d.Summary))
				r.Events = append(r.Events, fmt.Sprintf("%s: idle rank died (%s)%s; world respawned", time.Now().Format(time.TimeOnly), d.Summary, after))
			}
		}
		r.mu.Unlock()
		w.Kill(200*time.Millisecond, errors.New("respawn"))
		w.Close()
		r.mu.Lock()
	}
	if r.unavailable != nil {
		defer r.mu.Unlock()
		return nil, r.unavailable
	}
	r.mu.Unlock()
	// Spawning (and waiting for a device lock) happens without r.mu, so a
	// SIGTERM's KillAll is never stuck behind it. A standby world started
	// beside the case before (standby.go) is taken when one waits.
	w, err, tookD, fromStandby := r.newOrStandby(n, deadline)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		var se *SkipError
		if errors.As(err, &se) {
			r.unavailable = se
		}
		return nil, err
	}
	took := tookD.Seconds()
	ready := fmt.Sprintf("world of %d %s ranks ready in %.3f s", n, r.Backend, took)
	if fromStandby {
		ready += " (a standby, started while the case before ran)"
	}
	r.Events = append(r.Events, ready)
	r.Starts = append(r.Starts, report.WorldStart{Backend: r.Backend, Ranks: n, Seconds: round(took)})
	r.worlds[n] = w
	if len(w.Infos) > len(r.Infos) {
		r.Infos = w.Infos
	}
	return w, nil
}

// DeviceInfos returns the device facts of the first world's ranks (safe
// while cases run, for a checkpoint's fingerprint).
func (r *Runner) DeviceInfos() []device.Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Infos
}

// Close ends every world. A rank that died while idle in a world no case
// used again is reported here, as a world event, like one found by the
// next case.
func (r *Runner) Close() {
	r.dropStandby()
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, w := range r.worlds {
		if w.broken.Load() == nil {
			for _, p := range w.Procs {
				if p.hungUp() {
					p.WaitExit(time.Second)
					d := Classify(p)
					after := r.afterLast(w, fmt.Sprintf("its world's rank %d died idle (%s)", p.Rank, d.Summary))
					r.Events = append(r.Events, fmt.Sprintf("%s: idle rank died (%s)%s in a world no later case used",
						time.Now().Format(time.TimeOnly), d.Summary, after))
				}
			}
		}
		w.Close()
		delete(r.worlds, n)
	}
}

// KillAll kills every rank now (interrupt path).
func (r *Runner) KillAll() {
	r.mu.Lock()
	ws := make([]*World, 0, len(r.worlds))
	for _, w := range r.worlds {
		ws = append(ws, w)
	}
	if s := r.standby; s != nil {
		r.standby = nil
		go func() { // its start may still run: killed once it ends
			<-s.done
			if s.w != nil {
				s.w.Kill(100*time.Millisecond, errors.New("interrupted"))
			}
		}()
	}
	r.mu.Unlock()
	for _, w := range ws {
		w.Kill(100*time.Millisecond, errors.New("interrupted"))
	}
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
	}()
	if c.Standalone != nil {
		res.Outcome, res.Detail = c.Standalone()
		return res
	}
	if r.judgedFromSetup(c, &res) {
		return res
	}
	if r.judgedFromWedge(c, &res) {
		return res
	}
	c = r.budgeted(c)
	cr := &caseRun{c: c, res: &res, timeout: c.Limit(), aux: auxLimit(c)}
	cr.deadline = time.Now().Add(cr.timeout)
	defer func() {
		if cr.w != nil {
			cr.w.pat.CompareAndSwap(cr.pat, nil)
		}
	}()
	if !r.getWorld(cr) || !r.takeBaseline(cr) {
		return res
	}
	r.prestart(c)
	r.runBody(cr)
	r.judgeCase(cr)
	r.witnessDrops(cr)
	r.leakCheck(cr)
	r.collect(cr)
	r.finish(cr)
	return res
}

// caseRun is one case on its way through Run's steps.
type caseRun struct {
	c        *Case
	res      *report.Result
	timeout  time.Duration
	deadline time.Time // the case's own, from when its world is up and its baseline taken
	w        *World
	ctx      *Ctx
	before   []wire.MemInfo // the leak baseline (none: no leak check)
	// aux is the deadline of the requests around the body (the leak
	// baseline, teardown, the leak check): auxLimit.
	aux     time.Duration
	kbefore []uint64 // its kernel view: each rank's memfd-mapped bytes (kleak.go)
	cw      *caseWatch
	// pat is the case's patience (patience.go), installed on its world
	// from its deadline's start to the case's end.
	pat *patience
	// err is what the case ended with, as judged.
	err error
	// fatal is a world-fatal error the judgement did not end on (teardown's
	// after the body's own, the leak check's): the world is killed after.
	fatal error
	// late is the leak check's error, for the backstop: a death or a hang
	// found after the judgement.
	late error
}

// getWorld (step 1) gets the case's world. A world that does not start
// ends the case, judged from why (classOf): a backend that cannot open is
// a skip, a rank's death a crash and its hang a timeout, each with the
// ranks' evidence and the rank named by its own number and pid (a rank
// death like any other, said to be the world start's), anything else the
// case's error.
func (r *Runner) getWorld(cr *caseRun) bool {
	w, err := r.startWorld(cr.c, cr.timeout)
	if err == nil {
		cr.w = w
		return true
	}
	res, ce := cr.res, classOf(err)
	res.Outcome = ce.outcome()
	var st *StartError
	switch {
	case res.Outcome == report.Skip:
		res.Detail = ce.Error()
	case errors.As(err, &st):
		blame := st.Blame
		if blame == "" {
			blame = st.Error()
		}
		res.Detail, res.Fault = "world start: "+blame, st.Death.Fault
		res.Ranks = evidence(st.World)
		r.endWatch(cr.c, st.World, &caseWatch{seqs: make([]uint64, len(st.World.Procs))}, res)
		st.World.Close()
	default:
		res.Detail = "world start: " + err.Error()
	}
	return false
}

// takeBaseline (step 2) makes the case's Ctx and takes the leak baseline.
// Neither the world start nor the baseline is the case's: the baseline
// gets its own deadline (a 200 ms case on a loaded machine spent it all
// here), and the case's own starts after both, NoLeak case or not (a
// NoLeak case's first request met a deadline its world start had spent,
// and blamed rank 0: issue 35).
func (r *Runner) takeBaseline(cr *caseRun) bool {
	c := cr.c
	cr.ctx = &Ctx{W: cr.w, Kind: c.Kind, Seed: r.Seed, Deadline: time.Now().Add(cr.aux), Clocks: c.Clocks}
	if !c.NoLeak && !r.baselineOrRespawn(cr) {
		return false
	}
	cr.deadline = time.Now().Add(cr.timeout)
	cr.ctx.Deadline = cr.deadline
	cr.pat = r.patienceFor(cr.w, cr.c, cr.timeout)
	cr.w.pat.Store(cr.pat)
	return true
}

// patienceFor is the patience of a case with budget timeout in w: moving,
// it gets a step of half its budget (at least a progress window) at a
// time, up to its own limit from now.
func (r *Runner) patienceFor(w *World, c *Case, timeout time.Duration) *patience {
	watchStalls()
	hard := max(c.ownLimit(), timeout)
	return newPatience(time.Now, func() progress { return lookWorld(w) }, func(r int) string { return blockedIn(w, r) }, stalls.observe,
		time.Now().Add(hard), max(progressWindow, timeout/2))
}

// baselineOrRespawn takes the leak baseline. A rank that died between cases
// after the liveness check is still a world event: the world is respawned
// once and the baseline taken again.
func (r *Runner) baselineOrRespawn(cr *caseRun) bool {
	before, err := r.baseline(cr.ctx)
	if err != nil {
		c := cr.c
		r.dropWorld(c.Ranks, cr.w, err)
		if cr.w, err = r.world(c.Ranks, time.Now().Add(max(cr.timeout, 60*time.Second))); err != nil {
			CloseStart(err)
			cr.res.Outcome, cr.res.Detail = report.Error, "world start: "+err.Error()
			return false
		}
		cr.ctx.W = cr.w
		if before, err = r.baseline(cr.ctx); err != nil {
			cr.res.Outcome, cr.res.Detail = report.Error, "fresh world does not answer: "+err.Error()
			return false
		}
	}
	cr.before = before
	if cr.kbefore, err = kernelBaseline(cr.w); err != nil {
		cr.res.Outcome, cr.res.Detail = report.Error, err.Error()
		return false
	}
	return true
}

// runBody (step 3) runs the body on fresh stdout/stderr tails, then frees
// what it allocated. Teardown and the leak check get their own deadline:
// the case may have spent its own, and a request sent with a spent
// deadline cannot wait.
func (r *Runner) runBody(cr *caseRun) {
	for _, p := range cr.w.Procs {
		p.Stderr.Reset()
		p.Stdout.Reset()
	}
	cr.cw = r.startWatch(cr.w)
	cr.err = cr.ctx.FloorCheck(cr.c.Run(cr.ctx)) // a bandwidth below its physics floor fails the case
	cr.ctx.Deadline = time.Now().Add(cr.aux)
	if !cr.w.Alive() || isWorldFatal(cr.err) {
		return // no teardown in a world in an unknown state
	}
	terr := cr.ctx.teardown()
	switch {
	case terr == nil:
	case isWorldFatal(terr):
		// A hang or death in teardown is the case's outcome whatever the
		// body returned: a case expected to fail must not absorb it. What
		// the body said is kept.
		cr.fatal = terr
		if cr.err != nil {
			cr.ctx.Note("the body had returned: %v", cr.err)
		}
		cr.err = terr
	case cr.err == nil:
		cr.err = terr
	}
}

// judgeCase (step 4) judges the case. A rank that died between the case's
// start and now makes the case a crash whatever the body returned: a body
// that only talked to the other ranks returns nil while its world is dead,
// and teardown (the only other request) is skipped for a dead world. This
// is diedDuring's one site; collect's backstop finds a death after it.
func (r *Runner) judgeCase(cr *caseRun) {
	cr.err = ping(cr.w, cr.err)
	if de := diedDuring(cr.w, cr.err); de != nil {
		r.noteDeath(deathFound)
		cr.err = de
	}
	res := cr.res
	res.Outcome, res.Detail, res.Fault = r.judge(cr.c, cr.w, cr.err)
	if len(cr.ctx.notes) > 0 {
		if res.Detail != "" {
			res.Detail += "; "
		}
		res.Detail += strings.Join(cr.ctx.notes, "; ")
	}
}

// leakCheck (step 5) compares a passing case's ranks with the baseline.
// Its MemInfo asks the device (cuMemGetInfo on CUDA), which returns a
// sticky error the case left (after ping's probe, which every case gets):
// a fault that is the case's own crash. A leak check that cannot ask is
// the case's error, and leaves the world to be killed; the backstop judges
// it again if a rank died or hung in it.
func (r *Runner) leakCheck(cr *caseRun) {
	res := cr.res
	if res.Outcome != report.Pass || len(cr.before) != len(cr.w.Procs) || !cr.w.Alive() {
		return
	}
	leak, lerr := checkLeaks(cr.ctx, cr.before)
	if lerr == nil && leak == "" {
		leak, lerr = kernelLeaks(cr.w, cr.kbefore)
	}
	var re *RemoteError
	switch {
	case errors.As(lerr, &re) && re.Fault != nil:
		// A rank answered with its device's sticky error: the fault
		// the case left, its crash (the rank exits after the reply).
		cr.fatal, cr.late = lerr, lerr
		res.Outcome, res.Detail, res.Fault = r.judge(cr.c, cr.w, lerr)
		res.Detail = "the probe after the case (meminfo) found: " + res.Detail
	case lerr != nil:
		cr.fatal, cr.late = lerr, lerr
		res.Outcome, res.Detail = report.Error, "leak check: "+lerr.Error()
	case leak != "":
		res.Outcome, res.Detail = report.Fail, "leak: "+leak
	}
}

// collect (step 6) takes the case's evidence, metrics and ranks, and runs
// the backstop; a result the backstop judged again takes its ranks again
// (the death or the kill it found is theirs).
func (r *Runner) collect(cr *caseRun) {
	res := cr.res
	if res.Outcome == report.Pass {
		res.Evidence = cr.ctx.Evidence
	}
	res.Metrics = summarize(cr.ctx.Metrics)
	if r.lateDeath != nil {
		r.lateDeath(cr.w)
	}
	res.Ranks = evidence(cr.w)
	if r.backstop(cr) {
		res.Ranks = evidence(cr.w)
	}
}

// backstop judges a death or a hang found after the judgement: the leak
// check's requests found a rank dead (the same death, one step later) or
// not answering (a hang, not an error), or a rank died after the leak check
// but before its evidence was taken (a result that shows a dead rank is
// never a pass). A world the judgement killed itself (after a timeout or a
// malformed message) is broken: those deaths are the harness's.
func (r *Runner) backstop(cr *caseRun) bool {
	res, w := cr.res, cr.w
	if w.broken.Load() != nil || res.Outcome == report.Crash || (cr.late == nil && !deadInEvidence(w, res.Ranks)) {
		return false
	}
	var te *TimeoutError
	if de := diedDuring(w, nil); de != nil {
		r.noteDeath(deathBackstop)
		res.Outcome, res.Detail, res.Fault = r.judge(cr.c, w, de)
	} else if errors.As(cr.late, &te) {
		te.What = "meminfo (the leak check after the case)"
		res.Outcome, res.Detail, res.Fault = r.judge(cr.c, w, te)
	} else {
		return false
	}
	return true
}

// finish (step 7) ends the case's watch (kernel log, health, evidence
// folder), extends or ends the streaks, and kills a world the next case
// must not trust.
func (r *Runner) finish(cr *caseRun) {
	c, w := cr.c, cr.w
	if n := cr.pat.note(); n != "" {
		// A case that needed more than its budget says so, pass or not:
		// how close a healthy run came to a timeout is worth seeing.
		cr.res.Detail = strings.TrimPrefix(cr.res.Detail+"; "+n, "; ")
	}
	r.endWatch(c, w, cr.cw, cr.res)
	r.noteSetup(c, *cr.res, cr.err)
	r.noteWedge(c, *cr.res, cr.err)
	r.notePace(c, *cr.res)
	retire := r.retireAfter(w, *cr.res, cr.err)
	if w.Alive() && !isWorldFatal(cr.err) && cr.fatal == nil && !retire {
		return
	}
	w.Kill(200*time.Millisecond, fmt.Errorf("case %s ended with %s", c.ID, cr.res.Outcome))
	r.mu.Lock()
	if r.worlds[c.Ranks] == w {
		delete(r.worlds, c.Ranks)
	}
	r.mu.Unlock()
	w.Close()
}

// The two places that find a rank's death during a case, counted so a test
// can tell which one classified it.
const (
	deathFound    = iota // judgeCase's diedDuring, before the judgement
	deathBackstop        // collect's backstop, after it
)

func (r *Runner) noteDeath(path int) {
	r.mu.Lock()
	r.deaths[path]++
	r.mu.Unlock()
}

// errStreakMax: a world whose cases end in error this many times in a row
// is retired (the next case starts a fresh one): a rank left in a bad state
// (an address-space limit, a poisoned context) otherwise turns every later
// case in its world into an error, a case that expects a timeout included.
const errStreakMax = 3

// unusableMarks are remote errors after which the rank is not trusted with
// another case: the rank's process ran out of memory or descriptors.
var unusableMarks = []string{"cannot allocate memory", "out of memory", "too many open files", "resource temporarily unavailable"}

// retireAfter counts the world's consecutive error outcomes and says
// whether the world must go: at errStreakMax, or at once after an error
// that leaves the rank unusable. It records a world event when it does.
func (r *Runner) retireAfter(w *World, res report.Result, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.Outcome != report.Error {
		delete(r.errStreak, w)
		return false
	}
	var re *RemoteError
	clean := errors.As(err, &re) && re.Fault == nil
	if clean {
		// A rank answered with an API error: it failed cleanly and keeps
		// its world, unless the error says the rank is unusable.
		for _, m := range unusableMarks {
			if strings.Contains(strings.ToLower(re.Msg), m) {
				delete(r.errStreak, w)
				r.Events = append(r.Events, fmt.Sprintf("%s: world of %d retired after %s: rank %d is unusable (%s); the next case starts a fresh one",
					time.Now().Format(time.TimeOnly), w.N, res.ID(), re.Rank, m))
				return true
			}
		}
		delete(r.errStreak, w)
		return false
	}
	if r.errStreak == nil {
		r.errStreak = map[*World]int{}
	}
	r.errStreak[w]++
	why := ""
	if r.errStreak[w] >= errStreakMax {
		why = fmt.Sprintf("%d cases in a row ended in error", r.errStreak[w])
	}
	if why == "" {
		return false
	}
	delete(r.errStreak, w)
	r.Events = append(r.Events, fmt.Sprintf("%s: world of %d retired after %s: %s; the next case starts a fresh one",
		time.Now().Format(time.TimeOnly), w.N, res.ID(), why))
	return true
}

// startStreakMax: after this many cases in a row whose world would not
// start, later cases of the runner end at once with the same reason, so a
// machine that cannot start ranks (a process limit) still ends the run,
// with results, in seconds rather than a world-start deadline per case.
const startStreakMax = 3

// startWorld gets a world for c, starting one when needed, by the case's
// limit or startFloor, whichever is longer. A rank that crashes, hangs or
// speaks garbage while its world starts is the case's: its world event is
// recorded (rank, pid, signal, evidence) and the StartError returned, so
// the case ends crash, timeout or error with the start's evidence. There
// is no retry: it forgave a crash in a backend's open (cuInit on a GPU),
// and a gated run passed (issue 35). The next case starts a fresh world.
func (r *Runner) startWorld(c *Case, timeout time.Duration) (*World, error) {
	r.mu.Lock()
	if r.startBroken != "" {
		why := r.startBroken
		r.mu.Unlock()
		return nil, fmt.Errorf("not run: %s", why)
	}
	limit := max(timeout, r.startFloor)
	r.mu.Unlock()
	w, err := r.world(c.Ranks, time.Now().Add(limit))
	var st *StartError
	var se *SkipError
	var ev report.WorldEvent
	if errors.As(err, &st) {
		ev = startEvent(c, st, limit) // it may wait for the hung rank's exit: not under r.mu
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st != nil {
		r.event(ev)
	}
	switch {
	case err == nil || errors.As(err, &se):
		r.startStreak = 0
	default:
		if r.startStreak++; r.startStreak >= startStreakMax {
			r.startBroken = fmt.Sprintf("%d cases in a row could not start a world of %s ranks; the last: %v", r.startStreak, r.Backend, err)
		}
	}
	return w, err
}

// baseline asks every rank for its buffers, fds and free memory.
func (r *Runner) baseline(ctx *Ctx) ([]wire.MemInfo, error) {
	var out []wire.MemInfo
	for i := range ctx.W.Procs {
		mi, err := ctx.MemInfo(i)
		if err != nil {
			return nil, err
		}
		out = append(out, mi)
	}
	return out, nil
}

// dropWorld forgets a world that failed between cases and kills it.
func (r *Runner) dropWorld(n int, w *World, why error) {
	r.mu.Lock()
	if r.worlds[n] == w {
		delete(r.worlds, n)
	}
	after := r.afterLast(w, fmt.Sprintf("its world of %d failed the probe before the next case: %v", n, why))
	r.Events = append(r.Events, fmt.Sprintf("%s: world of %d stopped answering between cases (%v)%s; respawned", time.Now().Format(time.TimeOnly), n, why, after))
	r.mu.Unlock()
	w.Kill(200*time.Millisecond, why)
	w.Close()
}

func checkLeaks(ctx *Ctx, before []wire.MemInfo) (string, error) {
	var leaks []string
	for i, b := range before {
		a, err := ctx.MemInfo(i)
		if err != nil {
			return "", err
		}
		if a.Bufs != b.Bufs {
			leaks = append(leaks, fmt.Sprintf("rank %d holds %d buffers, had %d", i, a.Bufs, b.Bufs))
		}
		if a.Fds > b.Fds {
			leaks = append(leaks, fmt.Sprintf("rank %d has %d open fds, had %d", i, a.Fds, b.Fds))
		}
		if b.Free > a.Free && b.Free-a.Free > 2<<20 {
			leaks = append(leaks, fmt.Sprintf("rank %d free memory dropped %d bytes", i, b.Free-a.Free))
		}
	}
	return strings.Join(leaks, "; "), nil
}

func evidence(w *World) []report.Rank {
	out := make([]report.Rank, len(w.Procs))
	for i, p := range w.Procs {
		rk := report.Rank{Rank: p.Rank, Pid: p.Pid, Device: p.Device}
		if !p.Alive() {
			d := Classify(p)
			rk.ExitCode, rk.Signal, rk.GoDump = d.ExitCode, d.Signal, d.GoDump
		}
		rk.StderrTail = lastBytes(p.Stderr.String(), 4096)
		out[i] = rk
	}
	return out
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func summarize(ms map[string]Metric) map[string]report.Metric {
	if len(ms) == 0 {
		return nil
	}
	out := map[string]report.Metric{}
	for name, m := range ms {
		if len(m.Samples) == 0 {
			continue
		}
		s := slices.Clone(m.Samples)
		sort.Float64s(s)
		med := perf.Median(s)                    // the median the physics floor judges (ceiling.go)
		taken := make([]float64, len(m.Samples)) // in the order taken, for p2pcompare's U test
		for i, v := range m.Samples {
			taken[i] = round(v)
		}
		out[name] = report.Metric{Unit: m.Unit, Median: round(med), Min: round(s[0]), Max: round(s[len(s)-1]), N: len(s), Method: m.Method, Better: m.Better, Clock: m.Clock, Ceiling: m.Ceiling.At(round(med)), Samples: taken}
	}
	return out
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// The deadline made from a baseline's recorded duration: budgetFactor
// times the longest the case took when the baseline was recorded, never
// below budgetFloor (a case of milliseconds on a loaded machine is not a
// hang), both times the run's own slowness (a machine twice as loaded as
// the baseline's gets twice the budget), nor above the case's own Limit.
// The budget is when the case's patience first asks whether it is moving,
// not when it is judged hung (patience.go).
const (
	budgetFactor = 10
	budgetFloor  = 2 * time.Second
)

// pace is the run's own slowness: the times of its latest passing cases
// the baseline timed, beside what the baseline recorded for them.
type pace struct {
	got, rec []float64
}

// paceCases is how many of the latest passing cases the pace averages;
// paceMax caps the slowness it gives (a run 8 times slower than its
// baseline is a machine problem a longer budget would only hide).
const (
	paceCases = 24
	paceMax   = 8.0
)

// notePace adds a passing case's time, beside its recorded time, to the
// run's pace (a rerun's too: it is a measurement of this machine).
func (r *Runner) notePace(c *Case, res report.Result) {
	d, ok := r.Recorded[c.ID]
	if !ok || res.Outcome != report.Pass || !(d > 0) || math.IsInf(d, 0) || !(res.Duration > 0) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pace.got = append(r.pace.got, res.Duration)
	r.pace.rec = append(r.pace.rec, d)
	if n := len(r.pace.got); n > paceCases {
		r.pace.got, r.pace.rec = r.pace.got[n-paceCases:], r.pace.rec[n-paceCases:]
	}
}

// slowness is the run's own pace against its baseline: the sum of its
// latest passing cases' times over the sum the baseline recorded for
// them, never below 1 (a faster machine keeps the recorded budget) nor
// above paceMax.
func (r *Runner) slowness() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got, rec float64
	for i := range r.pace.got {
		got += r.pace.got[i]
		rec += r.pace.rec[i]
	}
	if rec <= 0 {
		return 1
	}
	return min(paceMax, max(1, got/rec))
}

// budgeted returns c as this runner runs it: a copy whose Limit is its
// budget when the baseline recorded its duration, else c itself (its own
// Timeout stays).
func (r *Runner) budgeted(c *Case) *Case {
	d, ok := r.Recorded[c.ID]
	if !ok || c.budget > 0 || d < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return c
	}
	own := c.Limit()
	slow := r.slowness()
	b := min(own, time.Duration(math.Round(max(budgetFloor.Seconds(), d*budgetFactor)*slow*1000))*time.Millisecond)
	cc := *c
	cc.budget = b
	cc.budgetWhy = fmt.Sprintf("%d× the %.3f s the baseline recorded, at least %s", budgetFactor, d, budgetFloor)
	if slow > 1 {
		cc.budgetWhy += fmt.Sprintf(", times %.2f, this run's pace against the baseline", slow)
	}
	cc.budgetWhy += fmt.Sprintf(", at most the case's own %s; longer while its ranks move", own)
	return &cc
}

// auxLimit is the deadline of the requests around a case's body: 30 s,
// or the case's budget when shorter (a call wedged in teardown or the leak
// check must not cost more than one in the body).
func auxLimit(c *Case) time.Duration {
	if c.budget > 0 {
		return min(30*time.Second, c.budget)
	}
	return 30 * time.Second
}
