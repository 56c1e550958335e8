package harness

import (
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 35 item 4: a line appended to Runner.Events directly (any code of
// the runner may) is still a typed world event, its kind read from its
// words and its rank, pid and signal from a Classify summary in it; a
// world's ready line is timing, not an event; order is kept.
func TestEventLinesAreTyped(t *testing.T) {
	r := NewRunner(backends.HostName, wire.DefaultSettings, 1)
	r.Events = append(r.Events, "world of 2 host ranks ready in 0.020 s",
		"00:00:01: world of 2 stopped answering between cases (rank 1 (pid 77) killed by SIGKILL); respawned")
	r.mu.Lock()
	r.eventf(report.EventRetired, "world of 2 retired after x: 3 cases in a row ended in error")
	r.mu.Unlock()
	r.Events = append(r.Events, "kernel log unreadable (EPERM): cases carry no kernel-log lines",
		"00:00:02: idle rank died (rank 0 (pid 78) killed by SIGHUP; Go fault dump: SIGHUP: hangup); world respawned")
	evs := r.WorldEvents()
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4: %+v", len(evs), evs)
	}
	if e := evs[3]; e.Kind != report.EventIdleDeath || e.Rank == nil || *e.Rank != 0 || e.Pid != 78 || e.Signal != "SIGHUP" {
		t.Errorf("an idle death line read as %+v", e)
	}
	if e := evs[0]; e.Kind != report.EventRespawn || e.Rank == nil || *e.Rank != 1 || e.Pid != 77 || e.Signal != "SIGKILL" || e.Time == "" ||
		e.Detail != "world of 2 stopped answering between cases (rank 1 (pid 77) killed by SIGKILL); respawned" {
		t.Errorf("a respawn line read as %+v", e)
	}
	if evs[1].Kind != report.EventRetired || evs[2].Kind != report.EventOther || evs[2].Backend != backends.HostName {
		t.Errorf("kinds %s %s (%s), want retired, other (host)", evs[1].Kind, evs[2].Kind, evs[2].Backend)
	}
	if len(r.Events) != 5 {
		t.Errorf("the lines changed: %q", r.Events)
	}
}
