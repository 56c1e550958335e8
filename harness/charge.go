package harness

import (
	"fmt"
	"strings"
	"sync"

	"p2patomics/harness/backends"
	"p2patomics/harness/health"
	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
)

// faultBook is what the runner keeps to charge a kernel-log line to the
// case it belongs to: whose rank each pid was, and the last case each world
// ran. A line names its process (kmsg.Pid); a rank's pid belongs to one
// world for the world's life, and a world runs one case at a time. What
// it charges to no case's result is a RunFault, typed where it is found;
// a line it charges to nobody is a world event. Its own lock.
type faultBook struct {
	backend string
	log     *eventLog
	mu      sync.Mutex
	faults  []RunFault
	taken   int                  // faults[:taken] were handed out (take)
	owners  map[int]rankOwner    // every rank pid this runner started
	last    map[*World]lastEnded // the case each world ran last
	lastAny lastEnded            // the case the runner ran last
}

type rankOwner struct {
	w    *World
	rank int
}

type lastEnded struct {
	id      string
	outcome report.Outcome
}

// register notes w's ranks' pids (idempotent).
func (b *faultBook) register(w *World) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owners == nil {
		b.owners = map[int]rankOwner{}
	}
	for _, p := range w.Procs {
		if p.Pid > 0 {
			b.owners[p.Pid] = rankOwner{w: w, rank: p.Rank}
		}
	}
}

// noteLast records c as the last case w ran, with the outcome it ended
// with: a fault found later in w is that case's.
func (b *faultBook) noteLast(w *World, c *Case, res *report.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[*World]lastEnded{}
	}
	b.last[w] = lastEnded{id: c.ID, outcome: res.Outcome}
	b.lastAny = b.last[w]
}

// harnessMarker: lines the harness and its tests write themselves
// (kmsg_test's markers) are shown, never charged.
func harnessMarker(e kmsg.Event) bool { return strings.HasPrefix(e.Lines[0].Text, "p2patomics") }

// chargeLines charges the case's kernel-log events. A line naming a pid of
// one of w's ranks is the case's: it is attached, and a fault that fails
// (health.CaseFault) makes the case a crash carrying it. A line naming no
// pid is attached with "[by time window] " (it is the case's only by when
// it was logged), and a failing one fails a GPU case too: nothing else ran
// on the GPU then that the run knows of. A line naming another pid is not
// the case's (chargeElsewhere).
func (b *faultBook) chargeLines(c *Case, w *World, res *report.Result, evs []kmsg.Event) {
	own := map[int]int{}
	for _, p := range w.Procs {
		own[p.Pid] = p.Rank
	}
	for _, e := range evs {
		f := health.CaseFault(e)
		if harnessMarker(e) {
			f = nil
		}
		rank, mine := own[e.Pid]
		switch {
		case e.Pid == 0:
			attach(res, e, "[by time window] ")
			if f != nil && c.GPU {
				chargeCase(res, f, "a GPU fault was logged while the case ran (the line names no process, so it is charged by time window)")
			}
		case mine:
			attach(res, e, "")
			if f != nil {
				chargeCase(res, f, fmt.Sprintf("rank %d (pid %d) logged a GPU fault", rank, e.Pid))
			}
		default:
			b.chargeElsewhere(c.ID, c.GPU, e, f)
		}
	}
}

func attach(res *report.Result, e kmsg.Event, prefix string) {
	for _, l := range e.Lines {
		res.KernelLog = append(res.KernelLog, prefix+l.String())
	}
}

// chargeCase makes res a crash carrying f. A case that already ended in a
// crash, a timeout or an abort keeps its outcome (and its own fault, the
// rank's report, when it has one); the first fault charged wins.
func chargeCase(res *report.Result, f *report.Fault, why string) {
	switch res.Outcome {
	case report.Crash, report.Timeout, report.Abort, report.Incomplete:
		if res.Fault == nil {
			res.Fault = f
		}
		return
	}
	was, d := res.Outcome, res.Detail
	res.Outcome, res.Fault, res.Evidence = report.Crash, f, ""
	res.Detail = fmt.Sprintf("%s: %v (the case had ended %s)", why, f, was)
	if d != "" {
		res.Detail += "; " + d
	}
}

// chargeBetween charges the events logged between two cases: none is the
// next case's, so each is some world's last case's, or foreign.
func (b *faultBook) chargeBetween(evs []kmsg.Event) {
	// A host run's ranks use no GPU, so another process's GPU fault cannot
	// touch its results.
	gpu := backends.IsGPU(b.backend)
	for _, e := range evs {
		f := health.CaseFault(e)
		if harnessMarker(e) {
			f = nil
		}
		b.chargeElsewhere("", gpu, e, f)
	}
}

// chargeElsewhere charges an event that is not the running case's (during
// is that case's id, "" between cases). Its target is the last case of the
// world whose rank the line names (alive or ended), or, for a line naming
// no process logged between cases, by time window, the last case the
// runner ran; a pid of no rank of the run has none (foreign). A failing
// fault (f) is recorded in Failures, which fail the run's verdict: the
// target's result is already recorded (its live line printed, its spec
// judged), so it is named there rather than amended. A target that already
// ended in a crash or a timeout has its fault's echo (Xid 43 or 45 after
// the rank's own fault or kill): an event, nothing more. gpu says whether
// a foreign fault can touch the run's results (a host case's ranks use no
// GPU): if not, it is an event.
func (b *faultBook) chargeElsewhere(during string, gpu bool, e kmsg.Event, f *report.Fault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	when := "between cases"
	if during != "" {
		when = "while " + during + " ran"
	}
	o, known := b.owners[e.Pid]
	who := fmt.Sprintf("pid %d, none of the run's ranks,", e.Pid)
	target, ok := b.last[o.w]
	switch {
	case known:
		who = fmt.Sprintf("rank %d (pid %d) of a world of %d", o.rank, e.Pid, o.w.N)
	case e.Pid == 0:
		who = "a line naming no process, charged by time window,"
		target, ok = b.lastAny, b.lastAny.id != ""
	}
	switch {
	case f == nil || (ok && (target.outcome == report.Crash || target.outcome == report.Timeout)) || (!ok && !known && !gpu):
		b.log.addf(report.EventOther, "kernel log %s (not charged to a case): %s", when, e.Lines[0].String())
	case ok:
		b.faults = append(b.faults, RunFault{Case: target.id, Outcome: target.outcome, Who: who, When: when, Fault: f})
	default:
		b.faults = append(b.faults, RunFault{Who: who, When: when, Fault: f, Foreign: !known})
	}
}

// afterLast names the case w ran last, for a failure found between cases
// (a probe's sticky error, a rank that died idle): it is recorded as a
// RunFault against that case and the returned text goes into the world
// event.
func (b *faultBook) afterLast(w *World, what string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	last, ran := b.last[w]
	if !ran {
		return ""
	}
	if last.outcome != report.Crash && last.outcome != report.Timeout {
		b.faults = append(b.faults, RunFault{Case: last.id, Outcome: last.outcome, What: what})
	}
	return fmt.Sprintf(" after case %s (%s)", last.id, last.outcome)
}

// note records a run fault.
func (b *faultBook) note(f RunFault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = append(b.faults, f)
}

// take hands out the run faults no earlier call handed out, in the order
// they were found: the suite puts each on the stream once, at its next
// collection of the world's facts (the lock is the book's alone; nothing
// is pushed from under it).
func (b *faultBook) take() []RunFault {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]RunFault(nil), b.faults[b.taken:]...)
	b.taken = len(b.faults)
	return out
}

// runFaults are the run faults so far, as results.json's lines.
func (b *faultBook) runFaults() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, f := range b.faults {
		out = append(out, f.String())
	}
	return out
}
