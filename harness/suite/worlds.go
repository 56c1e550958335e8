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
	mu      sync.Mutex
	make    func(backend string) *harness.Runner
	runners map[string]*harness.Runner
	order   []string
	// emitted is, per backend, how many of its runner's world events the
	// executor has put on the stream.
	emitted map[string]int
}

func newWorlds(make func(backend string) *harness.Runner) *worlds {
	return &worlds{make: make, runners: map[string]*harness.Runner{}, emitted: map[string]int{}}
}

// get is backend's runner, made on first use.
func (w *worlds) get(backend string) *harness.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	rn, ok := w.runners[backend]
	if !ok {
		rn = w.make(backend)
		w.runners[backend] = rn
		w.order = append(w.order, backend)
	}
	return rn
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
		infos = append(infos, rn.DeviceInfos())
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
// faults no case carries, the device facts, each world's start.
type tally struct {
	events, faults []string
	infos          [][]device.Info
	starts         []report.WorldStart
}

// closeAll closes every runner's worlds and tallies them.
func (w *worlds) closeAll() tally {
	var t tally
	for _, rn := range w.list() {
		rn.Close()
		t.events = append(t.events, rn.Events...)
		t.faults = append(t.faults, rn.Failures...)
		t.infos = append(t.infos, rn.Infos)
		t.starts = append(t.starts, rn.Starts...)
	}
	return t
}

// fresh is the runners' world events not yet handed out, in the order
// each runner saw them; each is handed out once.
func (w *worlds) fresh() []report.WorldEvent {
	var out []report.WorldEvent
	for _, rn := range w.list() {
		evs := rn.WorldEvents()
		w.mu.Lock()
		be := rn.Backend
		n := min(w.emitted[be], len(evs))
		out = append(out, evs[n:]...)
		w.emitted[be] = len(evs)
		w.mu.Unlock()
	}
	return out
}
