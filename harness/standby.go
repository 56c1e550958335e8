package harness

import (
	"errors"
	"sync"
	"time"

	"p2patomics/harness/backends"
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

// replenishes says whether a standby world may start beside any running
// case on backend (the taker's, once a standby is taken): only where the
// leak check counts the case's own processes (host: /proc). A GPU
// backend's leak check reads the device's free memory, which every process
// on the GPU moves: a standby's ranks creating their contexts (about 500 MB
// on an H100) while a leak-checked case ran read as that case leaking, 4-5
// new flakes and unexpected passes in every healthy gated run on one H100
// (results/h100x1-580.159.04, issue48-ae422b1). On a GPU backend a standby
// starts only beside a case that ends its world by design (prestart), and
// every leak baseline waits for a start in flight to end first (settle):
// no start overlaps a leak-checked case, and an idle standby's contexts
// move no free memory.
func replenishes(backend string) bool {
	return backends.RunsOnCPU(backend)
}

// spare is a pool's standby slot: at most one standby world waiting, how
// many were started and used, and whether the pool closed (no standby
// starts after). Its own lock; it knows nothing of the pool.
type spare struct {
	mu            sync.Mutex
	s             *standby
	started, used int
	closed        bool
}

// start runs open (a world start) as the standby of n ranks, unless one
// waits or the pool closed; whether it started one.
func (sp *spare) start(n int, open func() (*World, error)) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.s != nil || sp.closed {
		return false
	}
	s := &standby{n: n, done: make(chan struct{})}
	sp.s = s
	sp.started++
	go func() {
		defer close(s.done)
		t0 := time.Now()
		s.w, s.err = open()
		s.took = time.Since(t0)
	}()
	return true
}

// detach takes the standby of n ranks out of the slot without waiting for
// its start (await does), so that the next one can start at once; nil
// when none of that size waits.
func (sp *spare) detach(n int) *standby {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	s := sp.s
	if s == nil || s.n != n {
		return nil
	}
	sp.s = nil
	return s
}

// await waits for a detached standby's start to end and counts it used.
func (sp *spare) await(s *standby) {
	<-s.done
	sp.mu.Lock()
	sp.used++
	sp.mu.Unlock()
}

// settle waits for a standby start in flight to end (its world stays
// waiting): a GPU leak baseline taken after it sees the standby's memory
// already gone, and none of it goes during the case.
func (sp *spare) settle() {
	sp.mu.Lock()
	s := sp.s
	sp.mu.Unlock()
	if s != nil {
		<-s.done
	}
}

// counts are the standbys started and used so far.
func (sp *spare) counts() (started, used int) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.started, sp.used
}

// kill kills a waiting standby's ranks once its start ends (the interrupt
// path); no wait.
func (sp *spare) kill() {
	sp.mu.Lock()
	s := sp.s
	sp.s = nil
	sp.mu.Unlock()
	if s == nil {
		return
	}
	go func() { // its start may still run: killed once it ends
		<-s.done
		if s.w != nil {
			s.w.Kill(100*time.Millisecond, errors.New("interrupted"))
		}
	}()
}

// close ends a waiting standby (the runner closes): its start is waited
// for, then its ranks are killed and closed; no standby starts after.
func (sp *spare) close() {
	sp.mu.Lock()
	s := sp.s
	sp.s = nil
	sp.closed = true
	sp.mu.Unlock()
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
