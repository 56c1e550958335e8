package harness

import (
	"fmt"
	"strings"
	"time"

	"p2patomics/harness/health"
	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
)

// faultBook is what the runner keeps to charge a kernel-log line to the
// case it belongs to: whose rank each pid was, and the last case each world
// ran. A line names its process (kmsg.Pid); a rank's pid belongs to one
// world for the world's life, and a world runs one case at a time.
type faultBook struct {
	owners  map[int]rankOwner    // every rank pid this runner started
	last    map[*World]lastEnded // the case each world ran last
	lastAny lastEnded            // the case the runner ran last
	// open, when set, replaces the machine's kernel log (tests plant
	// lines in a file: SetKernelLog).
	open func() (*kmsg.Reader, *health.Monitor, error)
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
func (r *Runner) register(w *World) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.book.owners == nil {
		r.book.owners = map[int]rankOwner{}
	}
	for _, p := range w.Procs {
		if p.Pid > 0 {
			r.book.owners[p.Pid] = rankOwner{w: w, rank: p.Rank}
		}
	}
}

// noteLast records c as the last case w ran, with the outcome it ended
// with: a fault found later in w is that case's.
func (r *Runner) noteLast(w *World, c *Case, res *report.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.book.last == nil {
		r.book.last = map[*World]lastEnded{}
	}
	r.book.last[w] = lastEnded{id: c.ID, outcome: res.Outcome}
	r.book.lastAny = r.book.last[w]
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
func (r *Runner) chargeLines(c *Case, w *World, res *report.Result, evs []kmsg.Event) {
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
			r.chargeElsewhere(c.ID, c.GPU, e, f)
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
func (r *Runner) chargeBetween(evs []kmsg.Event) {
	gpu := r.gpuBackend()
	for _, e := range evs {
		f := health.CaseFault(e)
		if harnessMarker(e) {
			f = nil
		}
		r.chargeElsewhere("", gpu, e, f)
	}
}

// gpuBackend: the runner's backend drives a GPU (a host run's ranks use
// none, so another process's GPU fault cannot touch its results).
func (r *Runner) gpuBackend() bool {
	for _, b := range Backends {
		if b.Name == r.Backend {
			return b.GPU
		}
	}
	return false
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
func (r *Runner) chargeElsewhere(during string, gpu bool, e kmsg.Event, f *report.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	when := "between cases"
	if during != "" {
		when = "while " + during + " ran"
	}
	o, known := r.book.owners[e.Pid]
	who := fmt.Sprintf("pid %d, none of the run's ranks,", e.Pid)
	target, ok := r.book.last[o.w]
	switch {
	case known:
		who = fmt.Sprintf("rank %d (pid %d) of a world of %d", o.rank, e.Pid, o.w.N)
	case e.Pid == 0:
		who = "a line naming no process, charged by time window,"
		target, ok = r.book.lastAny, r.book.lastAny.id != ""
	}
	line := e.Lines[0].String()
	switch {
	case f == nil || (ok && (target.outcome == report.Crash || target.outcome == report.Timeout)) || (!ok && !known && !gpu):
		r.Events = append(r.Events, fmt.Sprintf("%s: kernel log %s (not charged to a case): %s", time.Now().Format(time.TimeOnly), when, line))
	case ok:
		r.Failures = append(r.Failures, fmt.Sprintf("%s ended %s, but %s logged a GPU fault after it was recorded (%s): %v",
			target.id, target.outcome, who, when, f))
	case known:
		r.Failures = append(r.Failures, fmt.Sprintf("%s that had run no case logged a GPU fault (%s): %v", who, when, f))
	default:
		r.Failures = append(r.Failures, fmt.Sprintf("foreign GPU fault: %s logged %s: %v", who, when, f))
	}
}

// afterLast names the case w ran last, for a failure found between cases
// (a probe's sticky error, a rank that died idle): it is recorded in
// Failures against that case and the returned text goes into the world
// event. Call with r.mu held.
func (r *Runner) afterLast(w *World, what string) string {
	last, ran := r.book.last[w]
	if !ran {
		return ""
	}
	if last.outcome != report.Crash && last.outcome != report.Timeout {
		r.Failures = append(r.Failures, fmt.Sprintf("%s ended %s, but after it %s", last.id, last.outcome, what))
	}
	return fmt.Sprintf(" after case %s (%s)", last.id, last.outcome)
}
