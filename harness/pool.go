package harness

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// pool is a runner's persistent worlds, one per rank count, from the first
// case that needs one until a case ends it or the runner closes. A world
// whose rank died idle, or that stopped answering between cases, is a
// world event (charged to the last case it ran, through the fault book)
// and is started again; a world that cannot start, for want of a
// capability or startStreakMax times in a row, ends every later case at
// once. standby.go starts the next world beside a case that ends its own.
// Its own lock; spawning (and waiting for a device lock) happens without
// it, so a SIGTERM's killAll is never stuck behind a start.
type pool struct {
	backend string
	// settings go to every rank of every world in its hello: the runner's
	// (an A/B run's stack-B runner changes them after NewRunner).
	settings *wire.Settings
	log      *eventLog
	book     *faultBook
	// halted says the driver is taken as wedged (stuck.go): no standby
	// starts.
	halted func() bool

	mu     sync.Mutex
	worlds map[int]*World
	// infos are the device facts of the first world's ranks (fingerprint).
	infos []device.Info
	// startStreak counts cases in a row whose world did not start;
	// startBroken, once set, ends every later case at once.
	startStreak int
	startBroken string
	// unavailable is set once the backend failed to open for want of a
	// capability: every later case skips with the same reason at once.
	unavailable *SkipError
	// startFloor is the least a world start may take (the start's
	// deadline is the case's limit, or this when longer): a backend's
	// open (cuInit, a context, a module load) on a loaded machine is not a
	// hang. Tests shorten it.
	startFloor time.Duration
	// spare is the standby world started beside a case that ends its own
	// (standby.go).
	spare spare
	// early is the case whose world start started the next standby
	// (newOrStandby), until its prestart.
	early *Case
}

// world is the world of n ranks: the live one, or a fresh one (a standby
// when one waits) started by deadline. A world found dead is a world
// event and is replaced.
func (p *pool) world(n int, deadline time.Time) (*World, error) {
	return p.worldFor(nil, n, deadline)
}

// worldFor is world for case c (nil: none), which takes a standby as any
// start does and, where c ends its own world too, starts the next standby
// before it waits for the one it takes (newOrStandby).
func (p *pool) worldFor(c *Case, n int, deadline time.Time) (*World, error) {
	p.mu.Lock()
	p.early = nil // an earlier case's, whose start failed before its prestart
	if w, ok := p.worlds[n]; ok {
		if w.Alive() {
			p.mu.Unlock()
			return w, nil
		}
		delete(p.worlds, n)
		// A rank died while idle (or the last case broke the world): a
		// world event, not the next case's fault.
		for _, pr := range w.Procs {
			if !pr.Alive() && w.broken.Load() == nil {
				p.idleDeath(w, pr, "; world respawned")
			}
		}
		p.mu.Unlock()
		w.Kill(200*time.Millisecond, errors.New("respawn"))
		w.Close()
		p.mu.Lock()
	}
	if p.unavailable != nil {
		defer p.mu.Unlock()
		return nil, p.unavailable
	}
	p.mu.Unlock()
	// A standby world started beside the case before (standby.go) is taken
	// when one waits.
	w, tookD, fromStandby, err := p.newOrStandby(n, deadline, c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		var se *SkipError
		if errors.As(err, &se) {
			p.unavailable = se
		}
		return nil, err
	}
	p.log.started(report.WorldStart{Backend: p.backend, Ranks: n, Seconds: round(tookD.Seconds())}, fromStandby)
	p.worlds[n] = w
	if len(w.Infos) > len(p.infos) {
		p.infos = w.Infos
	}
	return w, nil
}

// idleDeath records rank pr of w, found dead between cases, as a world
// event typed with its rank, pid and signal (and a run fault against the
// case w ran last).
func (p *pool) idleDeath(w *World, pr *Proc, tail string) {
	d := Classify(pr)
	after := p.book.afterLast(w, fmt.Sprintf("its world's rank %d died idle (%s)", pr.Rank, d.Summary))
	rank := pr.Rank
	p.log.add(report.WorldEvent{Kind: report.EventIdleDeath, Rank: &rank, Pid: pr.Pid, Signal: d.Signal,
		Detail: fmt.Sprintf("idle rank died (%s)%s%s", d.Summary, after, tail)})
}

// startStreakMax: after this many cases in a row whose world would not
// start, later cases of the runner end at once with the same reason, so a
// machine that cannot start ranks (a process limit) still ends the run,
// with results, in seconds rather than a world-start deadline per case.
const startStreakMax = 3

// start gets a world for c, starting one when needed, by the case's
// limit or startFloor, whichever is longer. A rank that crashes, hangs or
// speaks garbage while its world starts is the case's: its world event is
// recorded (rank, pid, signal, evidence) and the StartError returned, so
// the case ends crash, timeout or error with the start's evidence. There
// is no retry: it forgave a crash in a backend's open (cuInit on a GPU),
// and a gated run passed (issue 35). The next case starts a fresh world.
func (p *pool) start(c *Case, timeout time.Duration) (*World, error) {
	p.mu.Lock()
	if p.startBroken != "" {
		why := p.startBroken
		p.mu.Unlock()
		return nil, fmt.Errorf("not run: %s", why)
	}
	limit := max(timeout, p.startFloor)
	p.mu.Unlock()
	w, err := p.worldFor(c, c.Ranks, time.Now().Add(limit))
	var st *StartError
	var se *SkipError
	if errors.As(err, &st) {
		p.log.add(startEvent(c.ID, c.Ranks, st, limit)) // it may wait for the hung rank's exit: not under p.mu
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil || errors.As(err, &se):
		p.startStreak = 0
	default:
		if p.startStreak++; p.startStreak >= startStreakMax {
			p.startBroken = fmt.Sprintf("%d cases in a row could not start a world of %s ranks; the last: %v", p.startStreak, p.backend, err)
		}
	}
	return w, err
}

// drop forgets a world that failed between cases and kills it.
func (p *pool) drop(n int, w *World, why error) {
	p.mu.Lock()
	if p.worlds[n] == w {
		delete(p.worlds, n)
	}
	p.mu.Unlock()
	after := p.book.afterLast(w, fmt.Sprintf("its world of %d failed the probe before the next case: %v", n, why))
	p.log.addf(report.EventRespawn, "world of %d stopped answering between cases (%v)%s; respawned", n, why, after)
	w.Kill(200*time.Millisecond, why)
	w.Close()
}

// retire kills w after its case (the next case of its size starts a fresh
// one).
func (p *pool) retire(n int, w *World, why error) {
	w.Kill(200*time.Millisecond, why)
	p.mu.Lock()
	if p.worlds[n] == w {
		delete(p.worlds, n)
	}
	p.mu.Unlock()
	w.Close()
}

// plansRespawn: c ends its world by design.
func plansRespawn(c *Case) bool {
	return c.Canary || c.NoLeak || c.Expected == report.Crash || c.Expected == report.Timeout
}

// prestart starts a standby world of c's size when c plans to end its
// world and none is waiting, the backend is available and worlds start.
// It says whether one started where the leak check reads the device's
// free memory (the case's own check then leaves free memory out).
func (p *pool) prestart(c *Case) bool {
	if p.startedEarly(c) {
		p.mu.Lock()
		p.early = nil
		p.mu.Unlock()
		return true
	}
	if c.Standalone != nil || !plansRespawn(c) {
		return false
	}
	return p.startStandby(c.Ranks, true) && !replenishes(p.backend)
}

// settles says whether c's leak baseline first waits for a standby start
// in flight (spare.settle): a leak-checked case's does where the leak
// check reads the device's free memory (not replenishes: a host leak check
// counts the case's own processes, and waiting there only cost every
// .after case a start), unless the start is the one its own world start
// began beside it (startedEarly).
func (p *pool) settles(c *Case) bool {
	return !c.NoLeak && !replenishes(p.backend) && !p.startedEarly(c)
}

// startedEarly says whether c's world start already started the standby
// beside c (newOrStandby): its leak baseline needs no settle, its leak
// check leaves free memory out as for any case a standby started beside.
func (p *pool) startedEarly(c *Case) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c != nil && p.early == c
}

// startStandby starts a standby world of n ranks unless one waits, the
// backend is unavailable, starts are broken, the machine is wedged or the
// runner closed; beside a case that does not end its world (a replenish)
// only where that case's leak check cannot see it (replenishes).
func (p *pool) startStandby(n int, besideAWorldEnder bool) bool {
	if (!besideAWorldEnder && !replenishes(p.backend)) || (p.halted != nil && p.halted()) {
		return false
	}
	p.mu.Lock()
	ok := p.unavailable == nil && p.startBroken == ""
	deadline := time.Now().Add(p.startFloor)
	set := *p.settings
	known := p.known()
	p.mu.Unlock()
	return ok && p.spare.start(n, func() (*World, error) { return newWorld(p.backend, n, set, deadline, known) })
}

// known is rank 0's hello of the first world this pool started (nil
// before one started): a later world's ranks all open their devices at
// once (World.handshake). Called with p.mu held.
func (p *pool) known() *device.Info {
	if len(p.infos) == 0 {
		return nil
	}
	info := p.infos[0]
	return &info
}

// newOrStandby starts a world of n ranks, or takes the standby of n ranks
// when one is waiting (once its start has ended): the world, how long its
// start took, whether it was the standby, and its start's error.
//
// A case c that plans a respawn (plansRespawn: a canary's `.after` too,
// whose next canary's `.after` takes the next standby) and takes a
// standby starts that next standby before it waits for the one it takes, on a GPU backend
// (where none is replenished): a start is most of the wait, and the canary
// chain of the one-GPU suite was bound by starts begun one canary (0.19 s
// on one H100) ahead (issue 52). c's leak check then leaves free memory
// out and its baseline does not settle (startedEarly), as for any case a
// standby started beside.
func (p *pool) newOrStandby(n int, deadline time.Time, c *Case) (*World, time.Duration, bool, error) {
	s := p.spare.detach(n)
	if s != nil && c != nil && c.Standalone == nil && plansRespawn(c) && !replenishes(p.backend) && p.startStandby(n, true) {
		p.mu.Lock()
		p.early = c
		p.mu.Unlock()
	}
	if s != nil {
		p.spare.await(s)
	}
	if s == nil {
		p.mu.Lock()
		set := *p.settings
		known := p.known()
		p.mu.Unlock()
		t0 := time.Now()
		w, err := newWorld(p.backend, n, set, deadline, known)
		return w, time.Since(t0), false, err
	}
	if s.err == nil {
		// Planned respawns come in runs (a canary and the case after it,
		// then the next canary): the next standby starts now, so it is
		// ready however short the next world-ender is (a canary dies in
		// tens of ms; a world start takes 0.3-0.5 s on a GPU).
		p.startStandby(n, false)
	}
	return s.w, s.took, true, s.err
}

// close ends every world. A rank that died while idle in a world no case
// used again is reported here, as a world event, like one found by the
// next case.
func (p *pool) close() {
	p.spare.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, w := range p.worlds {
		if w.broken.Load() == nil {
			for _, pr := range w.Procs {
				if pr.hungUp() {
					pr.WaitExit(time.Second)
					p.idleDeath(w, pr, " in a world no later case used")
				}
			}
		}
		w.Close()
		delete(p.worlds, n)
	}
}

// killAll kills every rank now (interrupt path).
func (p *pool) killAll() {
	p.mu.Lock()
	ws := make([]*World, 0, len(p.worlds))
	for _, w := range p.worlds {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	p.spare.kill()
	for _, w := range ws {
		w.Kill(100*time.Millisecond, errors.New("interrupted"))
	}
}

// deviceInfos are the device facts of the first world's ranks (safe while
// cases run, for a checkpoint's fingerprint).
func (p *pool) deviceInfos() []device.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.infos
}

// round is v to the millisecond (a world start's and a metric's seconds).
func round(v float64) float64 { return math.Round(v*1000) / 1000 }
