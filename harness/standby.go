package harness

import (
	"errors"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// A standby world (issue 52 item 3): while a case that ends its world by
// design runs (a canary, a planted crash or hang, a case that kills or
// poisons its ranks), the next world of its size is started beside it, so
// the case after does not wait for a world start; once a standby is taken
// the next one starts at once (planned respawns come in runs). 14 of the 16 world
// starts of the one-GPU suite (0.37 s each) were such planned respawns. A
// standby is used by the next world start of its size, whenever that
// comes (a case that left its world alive keeps it waiting), and closed
// with the runner. It is an ordinary world, started with the runner's
// settings; a start that fails is the failure the case that takes it
// would have met starting one itself.
type standby struct {
	n    int
	done chan struct{} // closed once the start ended
	w    *World
	err  error
	took time.Duration
}

// standbyFits says whether a standby world may start beside a running
// case on backend: only where the leak check counts the case's own
// processes (host: /proc). A GPU backend's leak check reads the device's
// free memory, which every process on the GPU moves: a standby's ranks
// creating their contexts (about 500 MB on an H100) while a leak-checked
// case ran read as that case leaking, 4-5 new flakes and unexpected
// passes in every healthy gated run on one H100 (results/h100x1-580.159.04,
// issue48-ae422b1).
func standbyFits(backend string) bool {
	return backends.RunsOnCPU(backend)
}

// plansRespawn: c ends its world by design.
func plansRespawn(c *Case) bool {
	return c.Canary || c.NoLeak || c.Expected == report.Crash || c.Expected == report.Timeout
}

// prestart starts a standby world of c's size when c plans to end its
// world and none is waiting, the backend is available and worlds start.
func (p *pool) prestart(c *Case) {
	if c.Standalone != nil || !plansRespawn(c) {
		return
	}
	p.startStandby(c.Ranks)
}

// startStandby starts a standby world of n ranks unless one waits, the
// backend is unavailable, starts are broken, the machine is wedged or the
// runner closed.
func (p *pool) startStandby(n int) {
	if !standbyFits(p.backend) || (p.halted != nil && p.halted()) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.standby != nil || p.unavailable != nil || p.startBroken != "" || p.closed {
		return
	}
	s := &standby{n: n, done: make(chan struct{})}
	p.standby = s
	p.standbyStarted++
	deadline := time.Now().Add(p.startFloor)
	set := *p.settings
	go func() {
		defer close(s.done)
		t0 := time.Now()
		s.w, s.err = NewWorld(p.backend, s.n, set, deadline)
		s.took = time.Since(t0)
	}()
}

// newOrStandby starts a world of n ranks, or takes the standby of n ranks
// when one is waiting (once its start has ended): the world, its start's
// error, how long its start took, and whether it was the standby.
func (p *pool) newOrStandby(n int, deadline time.Time) (*World, error, time.Duration, bool) {
	p.mu.Lock()
	s := p.standby
	if s != nil && s.n == n {
		p.standby = nil
	} else {
		s = nil
	}
	set := *p.settings
	p.mu.Unlock()
	if s == nil {
		t0 := time.Now()
		w, err := NewWorld(p.backend, n, set, deadline)
		return w, err, time.Since(t0), false
	}
	<-s.done
	p.mu.Lock()
	p.standbyUsed++
	p.mu.Unlock()
	if s.err == nil {
		// Planned respawns come in runs (a canary and the case after it,
		// then the next canary): the next standby starts now, so it is
		// ready however short the next world-ender is (a canary dies in
		// tens of ms; a world start takes 0.3-0.5 s on a GPU).
		p.startStandby(n)
	}
	return s.w, s.err, s.took, true
}

// dropStandby ends a waiting standby (the runner closes or is killed):
// its start is waited for, then its ranks are killed and closed. Called
// without p.mu.
func (p *pool) dropStandby() {
	p.mu.Lock()
	s := p.standby
	p.standby = nil
	p.closed = true
	p.mu.Unlock()
	if s == nil {
		return
	}
	end := func() {
		if s.w != nil {
			s.w.Kill(100*time.Millisecond, errors.New("standby world not needed"))
			s.w.Close()
		}
	}
	// A start that is still going after a few seconds (a wedged driver)
	// does not hold the runner's close: it is ended once it returns.
	select {
	case <-s.done:
		end()
	case <-time.After(5 * time.Second):
		go func() { <-s.done; end() }()
	}
}
