package harness

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/report"
	"p2patomics/trace"
)

// stuckCall names the call a hung world is stuck in, from its ranks'
// trace rings (the memfds the parent holds, readable whatever the rank is
// doing): in each rank, the innermost record still in flight (the last
// begun: a launch's synchronize, not the launch around it) that is a
// vendor or kernel call, not the request around it; of those, the one in
// flight longest, e.g. "rank 1 (pid 42) is stuck in mprotect (in flight
// 2.0 s: injected hang-at:mprotect=50: never returns)", and the call's
// name ("mprotect"). "" when no rank has one (tracing off, or a rank stuck
// outside any traced call: a spin in Go, a SIGSTOP).
func stuckCall(w *World) (detail, call string) {
	var best trace.Record
	rank, pid := -1, 0
	for _, p := range w.Procs {
		if p.Trace == nil {
			continue
		}
		recs, err := trace.ReadShared(p.Trace, 0)
		if err != nil {
			continue
		}
		var inner trace.Record
		for _, r := range recs {
			if r.InFlight && !strings.HasPrefix(r.Name, "request.") && r.Seq > inner.Seq {
				inner = r
			}
		}
		if inner.Seq != 0 && (rank < 0 || inner.Dur > best.Dur) {
			best, rank, pid = inner, p.Rank, p.Pid
		}
	}
	if rank < 0 {
		return "", ""
	}
	s := fmt.Sprintf("rank %d (pid %d) is stuck in %s (in flight %.1f s", rank, pid, best.Name, best.Dur.Round(100*time.Millisecond).Seconds())
	if best.Args != "" {
		s += ": " + best.Args
	}
	return s + ")", best.Name
}

// wedgedCall is the call a watchdog's report names ("synchronize wedged:
// in flight …" names synchronize), "" for another text.
func wedgedCall(report string) string {
	call, _, ok := strings.Cut(report, " wedged")
	if !ok || strings.ContainsAny(call, " :") {
		return ""
	}
	return call
}

// wedgeMax: once this many cases of a runner ended in a timeout they did
// not expect, each with its world stuck in the same vendor call, the driver
// is taken as wedged in that call, and every later case (reruns included)
// is judged not-run from the first of them instead of paying its own
// budget, kill grace and fresh world (issue 48 item 2: a hang:mmap run
// otherwise never ended). Two, not one: a single hang could be the case's
// own; the same call wedged in two cases is the driver's.
const wedgeMax = 2

// wedge is a vendor call cases were found stuck in.
type wedge struct {
	call   string
	first  string // the first case stuck in it
	rank   int    // the rank the first was stuck on
	n      int    // cases stuck in it
	detail string // the first case's detail
}

// wedges are the vendor calls a runner's cases timed out stuck in, by
// call; wedged, once set, is the one the driver is taken as wedged in:
// every later case is judged not-run from it. Its own lock; the event it
// fires goes to the runner's log.
type wedges struct {
	log    *eventLog
	mu     sync.Mutex
	byCall map[string]*wedge
	wedged *wedge
}

// note counts a case that timed out stuck in a named call. Only an
// unexpected timeout counts: a control that expects a timeout (a kernel
// that spins on a flag never set) is stuck in synchronize by design.
func (ws *wedges) note(c *Case, res report.Result, err error) {
	var te *TimeoutError
	if c.Canary || res.Outcome != report.Timeout || res.Outcome == c.Expected || !errors.As(err, &te) || te.Call == "" {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byCall == nil {
		ws.byCall = map[string]*wedge{}
	}
	wg := ws.byCall[te.Call]
	if wg == nil {
		wg = &wedge{call: te.Call, first: c.ID, rank: te.Rank, detail: res.Detail}
		ws.byCall[te.Call] = wg
	}
	if wg.n++; wg.n == wedgeMax && ws.wedged == nil {
		ws.wedged = wg
		ws.log.addf(report.EventOther, "%d cases timed out stuck in %s (the first: %s, rank %d); the driver is taken as wedged there, and the later cases are not run",
			wg.n, wg.call, wg.first, wg.rank)
	}
}

// judgedFrom returns c's result judged not-run from the call the driver
// is wedged in, or false when none is.
func (ws *wedges) judgedFrom(res *report.Result) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	wg := ws.wedged
	if wg == nil {
		return false
	}
	res.Outcome = report.NotRunOutcome
	res.JudgedFrom = &report.JudgedFrom{Case: wg.first, Outcome: report.Timeout}
	res.Detail = fmt.Sprintf("not run: the driver is wedged in %s (%d cases timed out stuck in it; the first, %s, on rank %d: %s)",
		wg.call, wg.n, wg.first, wg.rank, wg.detail)
	return true
}

// in names the call the driver was taken as wedged in and the case that
// first showed it, "" while none.
func (ws *wedges) in() string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.wedged == nil {
		return ""
	}
	return fmt.Sprintf("%s (first stuck in it: %s)", ws.wedged.call, ws.wedged.first)
}
