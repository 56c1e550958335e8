package harness

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// caseRun is one case on its way through Run's steps, with the runner's
// parts the steps use (never the runner itself): its world pool, its
// streak rules, its kernel-log watch, its evidence folders, its pace.
type caseRun struct {
	pool     *pool
	streaks  *streaks
	watch    *kernelWatch
	ev       *Evidence
	pace     *pace
	hooks    *caseHooks
	seed     int64
	recorded map[string]float64 // the baseline's durations (Runner.Recorded)

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
	// besideStandby: a standby world started beside this case on a backend
	// whose leak check reads the device's free memory (standby.go).
	besideStandby bool
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
func (cr *caseRun) getWorld() bool {
	w, err := cr.pool.start(cr.c, cr.timeout)
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
		cr.endWatch(st.World, &caseWatch{seqs: make([]uint64, len(st.World.Procs))})
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
func (cr *caseRun) takeBaseline() bool {
	c := cr.c
	cr.ctx = &Ctx{W: cr.w, Kind: c.Kind, Seed: cr.seed, Clocks: c.Clocks}
	if !c.NoLeak {
		// A standby world's start beside the case before (a GPU's only
		// kind, standby.go) ends before the baseline: its contexts'
		// memory never reads as this case's leak. One this case's own
		// world start began (startedEarly) runs on: this case's leak
		// check leaves free memory out (pool.settles).
		if cr.pool.settles(c) {
			cr.pool.spare.settle()
		}
		if !cr.baselineOrRespawn() {
			return false
		}
	}
	cr.deadline = time.Now().Add(cr.timeout)
	cr.ctx.Deadline = cr.deadline
	cr.pat = patienceFor(cr.w, cr.c, cr.timeout)
	cr.w.pat.Store(cr.pat)
	return true
}

// patienceFor is the patience of a case with budget timeout in w: moving,
// it gets a step of half its budget (at least a progress window) at a
// time, up to its own limit from now.
func patienceFor(w *World, c *Case, timeout time.Duration) *patience {
	watchStalls()
	hard := max(c.ownLimit(), timeout)
	return newPatience(time.Now, func() progress { return lookWorld(w) }, func(r int) string { return blockedIn(w, r) }, stalls.observe,
		time.Now().Add(hard), max(progressWindow, timeout/2))
}

// baselineOrRespawn takes the leak baseline. A rank that died between cases
// after the liveness check is still a world event: the world is respawned
// once and the baseline taken again.
//
// Each attempt's deadline starts when it does: a wait before it (a
// standby's start, a respawn) is neither the rank's nor seen by the
// requests' stall clock, and a suite stopped during it (SIGSTOP) read as
// a rank that did not answer (a paused run's .after cases, f2a5b55).
func (cr *caseRun) baselineOrRespawn() bool {
	cr.ctx.Deadline = time.Now().Add(cr.aux)
	before, err := baseline(cr.ctx)
	if err != nil {
		c := cr.c
		cr.pool.drop(c.Ranks, cr.w, err)
		if cr.w, err = cr.pool.world(c.Ranks, time.Now().Add(max(cr.timeout, 60*time.Second))); err != nil {
			CloseStart(err)
			cr.res.Outcome, cr.res.Detail = report.Error, "world start: "+err.Error()
			return false
		}
		cr.ctx.W = cr.w
		cr.ctx.Deadline = time.Now().Add(cr.aux)
		if before, err = baseline(cr.ctx); err != nil {
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
func (cr *caseRun) runBody() {
	for _, p := range cr.w.Procs {
		p.Stderr.Reset()
		p.Stdout.Reset()
	}
	cr.cw = cr.watch.start(cr.w)
	cr.err = floorCheck(cr.ctx, cr.c.Run(cr.ctx)) // a bandwidth below its physics floor fails the case
	cr.ctx.Deadline = time.Now().Add(cr.aux)
	if !cr.w.Alive() || isWorldFatal(cr.err) {
		return // no teardown in a world in an unknown state
	}
	terr := teardown(cr.ctx)
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
func (cr *caseRun) judgeCase() {
	cr.err = ping(cr.w, cr.err)
	if de := diedDuring(cr.w, cr.err); de != nil {
		cr.hooks.noteDeath(deathFound)
		cr.err = de
	}
	res := cr.res
	res.Outcome, res.Detail, res.Fault = judge(cr.c, cr.w, cr.err)
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
func (cr *caseRun) leakCheck() {
	res := cr.res
	if res.Outcome != report.Pass || len(cr.before) != len(cr.w.Procs) || !cr.w.Alive() {
		return
	}
	// A case beside which a standby started (one that ends its world by
	// design, passing here against its expectation) keeps the buffer and
	// fd comparison; its device's free memory holds the standby's contexts.
	leak, lerr := checkLeaks(cr.ctx, cr.before, !cr.besideStandby)
	if lerr == nil && leak == "" {
		leak, lerr = kernelLeaks(cr.w, cr.kbefore)
	}
	var re *RemoteError
	switch {
	case errors.As(lerr, &re) && re.Fault != nil:
		// A rank answered with its device's sticky error: the fault
		// the case left, its crash (the rank exits after the reply).
		cr.fatal, cr.late = lerr, lerr
		res.Outcome, res.Detail, res.Fault = judge(cr.c, cr.w, lerr)
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
func (cr *caseRun) collect() {
	res := cr.res
	if res.Outcome == report.Pass {
		res.Evidence = cr.ctx.Evidence
	}
	res.Metrics = summarize(cr.ctx.Metrics)
	if late := cr.hooks.lateDeath; late != nil {
		late(cr.w)
	}
	res.Ranks = evidence(cr.w)
	if cr.backstop() {
		res.Ranks = evidence(cr.w)
	}
}

// backstop judges a death or a hang found after the judgement: the leak
// check's requests found a rank dead (the same death, one step later) or
// not answering (a hang, not an error), or a rank died after the leak check
// but before its evidence was taken (a result that shows a dead rank is
// never a pass). A world the judgement killed itself (after a timeout or a
// malformed message) is broken: those deaths are the harness's.
func (cr *caseRun) backstop() bool {
	res, w := cr.res, cr.w
	if w.broken.Load() != nil || res.Outcome == report.Crash || (cr.late == nil && !deadInEvidence(w, res.Ranks)) {
		return false
	}
	var te *TimeoutError
	if de := diedDuring(w, nil); de != nil {
		cr.hooks.noteDeath(deathBackstop)
		res.Outcome, res.Detail, res.Fault = judge(cr.c, w, de)
	} else if errors.As(cr.late, &te) {
		te.What = "meminfo (the leak check after the case)"
		res.Outcome, res.Detail, res.Fault = judge(cr.c, w, te)
	} else {
		return false
	}
	return true
}

// finish (step 7) ends the case's watch (kernel log, health, evidence
// folder), extends or ends the streaks, and kills a world the next case
// must not trust.
func (cr *caseRun) finish() {
	c, w := cr.c, cr.w
	if n := cr.pat.note(); n != "" {
		// A case that needed more than its budget says so, pass or not:
		// how close a healthy run came to a timeout is worth seeing.
		cr.res.Detail = strings.TrimPrefix(cr.res.Detail+"; "+n, "; ")
	}
	cr.endWatch(w, cr.cw)
	cr.streaks.noteSetup(c, *cr.res, cr.err)
	cr.streaks.noteWedge(c, *cr.res, cr.err)
	cr.pace.note(cr.recorded, c, *cr.res)
	retire := cr.streaks.retireAfter(w, *cr.res, cr.err)
	if w.Alive() && !isWorldFatal(cr.err) && cr.fatal == nil && !retire {
		return
	}
	cr.pool.retire(c.Ranks, w, fmt.Errorf("case %s ended with %s", c.ID, cr.res.Outcome))
}

// endWatch ends the case's watch of w: its kernel-log lines charged, the
// machine's health judged, and its evidence folder kept when it did not
// pass.
func (cr *caseRun) endWatch(w *World, cw *caseWatch) {
	cr.watch.end(cr.c, w, cr.res)
	_, _, klogErr := cr.watch.klog()
	cr.ev.keep(cr.c, w, cw, cr.res, klogErr)
}

// The two places that find a rank's death during a case, counted so a test
// can tell which one classified it.
const (
	deathFound    = iota // judgeCase's diedDuring, before the judgement
	deathBackstop        // collect's backstop, after it
)

// caseHooks are what tests see of the steps: the deaths each check found,
// and a death planted between the leak check and the evidence.
type caseHooks struct {
	mu sync.Mutex
	// deaths counts the rank deaths each of Run's two death checks found
	// (deathFound, deathBackstop).
	deaths [2]int
	// lateDeath, set by tests only, runs between the leak check and the
	// evidence: a rank it kills there is the backstop's alone to find.
	lateDeath func(*World)
}

func (h *caseHooks) noteDeath(path int) {
	h.mu.Lock()
	h.deaths[path]++
	h.mu.Unlock()
}

// witnessDrops (after the judgement) takes a control's outcome away when
// the injector dropped any of its launches: a planted race that "lost
// every update" because its kernel never ran is not the race caught, and
// an expected fail met by a driver that runs nothing shows nothing. The
// control ends error (control lost, expect.Judge); a case that is no
// control keeps its outcome (a dropped launch failing it is the injector
// being noticed).
func (cr *caseRun) witnessDrops() {
	if cr.ctx == nil || !report.IsControl(report.Result{Labels: cr.c.Labels, Expected: cr.c.Expected}) {
		return
	}
	dropped := cr.ctx.launches.drops()
	if len(dropped) == 0 {
		return
	}
	res := cr.res
	res.Detail = fmt.Sprintf("control's kernel did not run: the injector dropped %d launch(es), first %s; its %s (%s) shows nothing",
		len(dropped), dropped[0], res.Outcome, res.Detail)
	res.Outcome = report.Error
}

// baseline asks every rank for its buffers, fds and free memory.
func baseline(ctx *Ctx) ([]wire.MemInfo, error) {
	var out []wire.MemInfo
	for i := range ctx.W.Procs {
		mi, err := memInfo(ctx, i)
		if err != nil {
			return nil, err
		}
		out = append(out, mi)
	}
	return out, nil
}

// checkLeaks asks every rank for its buffers, fds and free memory again
// and compares them with before (leaks).
func checkLeaks(ctx *Ctx, before []wire.MemInfo, free bool) (string, error) {
	after := make([]wire.MemInfo, len(before))
	for i := range before {
		a, err := memInfo(ctx, i)
		if err != nil {
			return "", err
		}
		after[i] = a
	}
	return leaks(before, after, free), nil
}

// leaks compares each rank's buffers, fds and (free: unless a standby
// world started beside the case, whose contexts the device's free memory
// counts too) free memory after the case with before it.
func leaks(before, after []wire.MemInfo, free bool) string {
	var out []string
	for i, b := range before {
		a := after[i]
		if a.Bufs != b.Bufs {
			out = append(out, fmt.Sprintf("rank %d holds %d buffers, had %d", i, a.Bufs, b.Bufs))
		}
		if a.Fds > b.Fds {
			out = append(out, fmt.Sprintf("rank %d has %d open fds, had %d", i, a.Fds, b.Fds))
		}
		if free && b.Free > a.Free && b.Free-a.Free > 2<<20 {
			out = append(out, fmt.Sprintf("rank %d free memory dropped %d bytes", i, b.Free-a.Free))
		}
	}
	return strings.Join(out, "; ")
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
