package harness

import (
	"fmt"
	"strings"
	"time"

	"p2patomics/trace"
)

// stuckCall names the call a hung world is stuck in, from its ranks'
// trace rings (the memfds the parent holds, readable whatever the rank is
// doing): in each rank, the innermost record still in flight (the last
// begun: a launch's synchronize, not the launch around it) that is a
// vendor or kernel call, not the request around it; of those, the one in
// flight longest, e.g. "rank 1 (pid 42) is stuck in mprotect (in flight
// 2.0 s: injected hang-at:mprotect=50: never returns)". "" when no rank
// has one (tracing off, or a rank stuck outside any traced call: a spin in
// Go, a SIGSTOP).
func stuckCall(w *World) string {
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
		return ""
	}
	s := fmt.Sprintf("rank %d (pid %d) is stuck in %s (in flight %.1f s", rank, pid, best.Name, best.Dur.Round(100*time.Millisecond).Seconds())
	if best.Args != "" {
		s += ": " + best.Args
	}
	return s + ")"
}
