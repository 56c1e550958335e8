package suite

import (
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// worlds is the run's runners, one per backend, each holding its worlds
// (ranks) from the first case that needs one until the run ends or a case
// needs a fresh one. make builds a backend's runner on first use.
type worlds struct {
	mu   sync.Mutex
	make func(backend string) *harness.Runner
	// makeB builds a backend's stack-B runner of an A/B run (--ab): its
	// ranks' hello names B's library or injector rules (abrun.go).
	makeB   func(backend string) *harness.Runner
	runners map[string]*harness.Runner // by key: the backend, or bKey's
	order   []string
}

func newWorlds(make func(backend string) *harness.Runner) *worlds {
	return &worlds{make: make, runners: map[string]*harness.Runner{}}
}

// get is backend's runner, made on first use.
func (w *worlds) get(backend string) *harness.Runner { return w.getKey(backend, backend, w.make) }

// getB is backend's stack-B runner of an A/B run, made on first use.
func (w *worlds) getB(backend string) *harness.Runner {
	return w.getKey(bKey(backend), backend, w.makeB)
}

// bKey is the runners' key of backend's stack-B runner.
func bKey(backend string) string { return "B " + backend }

func (w *worlds) getKey(key, backend string, make func(string) *harness.Runner) *harness.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	rn, ok := w.runners[key]
	if !ok {
		rn = make(backend)
		w.runners[key] = rn
		w.order = append(w.order, key)
	}
	return rn
}

// sideB reports whether rn is a stack-B runner.
func (w *worlds) sideB(rn *harness.Runner) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runners[bKey(rn.Backend)] == rn
}

// list is the runners in the order they were made.
func (w *worlds) list() []*harness.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*harness.Runner, 0, len(w.order))
	for _, be := range w.order {
		out = append(out, w.runners[be])
	}
	return out
}

// abort is why the machine stopped being trustworthy, "" while it is.
func (w *worlds) abort() string {
	for _, rn := range w.list() {
		if rn.Abort != "" {
			return rn.Abort
		}
	}
	return ""
}

// infos are the device facts the runners' ranks reported so far.
func (w *worlds) infos() [][]device.Info {
	var infos [][]device.Info
	for _, rn := range w.list() {
		if !w.sideB(rn) { // stack B's facts are the A/B section's (abrun.go)
			infos = append(infos, rn.DeviceInfos())
		}
	}
	return infos
}

// killAll kills every rank of every runner (the interrupt path).
func (w *worlds) killAll() {
	for _, rn := range w.list() {
		rn.KillAll()
	}
}

// tally is what the runners say once closed: their event lines, the
// device facts, each world's start. Their run faults are not in it: each
// went onto the stream when the executor next collected the facts
// (faults).
type tally struct {
	events []string
	infos  [][]device.Info
	starts []report.WorldStart
}

// closeAll closes every runner's worlds and tallies them.
func (w *worlds) closeAll() tally {
	var t tally
	for _, rn := range w.list() {
		rt := rn.Close()
		t.events = append(t.events, rt.Lines...)
		if !w.sideB(rn) {
			t.infos = append(t.infos, rt.Infos)
		}
		t.starts = append(t.starts, rt.Starts...)
	}
	return t
}

// fresh is the runners' world events not yet handed out, in the order
// each runner saw them; each is handed out once.
func (w *worlds) fresh() []report.WorldEvent {
	var out []report.WorldEvent
	for _, rn := range w.list() {
		out = append(out, rn.TakeWorldEvents()...)
	}
	return out
}

// faults is the runners' run faults not yet handed out, in the order each
// runner found them; each is handed out once.
func (w *worlds) faults() []report.RunFault {
	var out []report.RunFault
	for _, rn := range w.list() {
		out = append(out, rn.TakeRunFaults()...)
	}
	return out
}
