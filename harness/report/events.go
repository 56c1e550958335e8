package report

import (
	"fmt"
	"strings"
)

// WorldEvent is one thing that happened to the ranks outside a case's body:
// a rank that crashed or hung while its world started, one that died idle
// between cases, a world retired or respawned. results.json keeps them
// (world_events), so the record, junit.xml and report.html say what stdout
// said; a start crash is also charged to the case that needed the world
// (docs/FAULTS.md, "World start").
type WorldEvent struct {
	// Time is when the harness saw it, RFC 3339 in UTC (to the second for
	// an event recorded only as a line of text).
	Time string `json:"time"`
	// Kind is one of WorldEventKinds.
	Kind    string `json:"kind"`
	Backend string `json:"backend,omitempty"`
	// Ranks is the size of the world it happened to (0: not known).
	Ranks int `json:"ranks,omitempty"`
	// Rank and Pid name the rank the event is about (Rank nil: none, or
	// not known).
	Rank *int `json:"rank,omitempty"`
	Pid  int  `json:"pid,omitempty"`
	// Signal killed the rank (a death), as Classify named it.
	Signal string `json:"signal,omitempty"`
	// Case is the case that needed the world (a start) or the last case it
	// ran (a retirement).
	Case string `json:"case,omitempty"`
	// Detail is the event in words, as stdout and summary.txt print it.
	Detail string `json:"detail"`
	// GoDump: the rank's stderr holds a Go crash or goroutine dump;
	// StderrTail is the end of that stderr (a start event's evidence).
	GoDump     bool   `json:"go_dump,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// The kinds of world event.
const (
	EventStartCrash  = "start-crash"  // a rank died before answering its hello
	EventStartHang   = "start-hang"   // a rank did not answer its hello in time
	EventStartError  = "start-error"  // a rank's handshake was malformed
	EventIdleDeath   = "idle-death"   // a rank died between cases
	EventRespawn     = "respawn"      // a world stopped answering between cases and was started again
	EventRetired     = "retired"      // a world was ended after a case so the next starts a fresh one
	EventSetupStreak = "setup-streak" // a kind's later cases are judged from a streak of setup failures
	EventOther       = "other"        // any other line a runner recorded
)

// WorldEventKinds lists every kind (the schema's enum).
var WorldEventKinds = []string{EventStartCrash, EventStartHang, EventStartError, EventIdleDeath, EventRespawn, EventRetired, EventSetupStreak, EventOther}

// Line is the event as one line of text (junit.xml's system-err, the
// report's table): time, kind, the rank, the detail.
func (e WorldEvent) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Time, e.Kind)
	if e.Rank != nil {
		fmt.Fprintf(&b, " rank %d", *e.Rank)
		if e.Pid > 0 {
			fmt.Fprintf(&b, " (pid %d)", e.Pid)
		}
	}
	if e.Signal != "" {
		b.WriteString(" " + e.Signal)
	}
	if e.Case != "" {
		b.WriteString(" case " + e.Case)
	}
	b.WriteString(": " + strings.ReplaceAll(e.Detail, "\n", " "))
	return b.String()
}

func knownEventKind(k string) bool {
	for _, x := range WorldEventKinds {
		if x == k {
			return true
		}
	}
	return false
}

// RunFault is a finding no case's result carries that fails the run's
// verdict (harness/charge.go charges it), typed where the charging finds
// it and put on the result stream as it is (stream.RunFault); String is
// its line in results.json's summary.run_faults (Summary.RunFaults).
type RunFault struct {
	// Case ended Outcome before the fault was found ("" when the fault is
	// no case's: a foreign process's, or a rank's that ran no case).
	Case    string
	Outcome Outcome
	// Who logged it and When, as the charging words them; What is a
	// finding between cases (a rank that died idle, a probe that failed)
	// instead of a logged fault.
	Who, When, What string
	Fault           *Fault
	// Foreign: Who is none of the run's ranks.
	Foreign bool
}

func (f RunFault) String() string {
	switch {
	case f.What != "":
		return fmt.Sprintf("%s ended %s, but after it %s", f.Case, f.Outcome, f.What)
	case f.Case != "":
		return fmt.Sprintf("%s ended %s, but %s logged a GPU fault after it was recorded (%s): %v", f.Case, f.Outcome, f.Who, f.When, f.Fault)
	case f.Foreign:
		return fmt.Sprintf("foreign GPU fault: %s logged %s: %v", f.Who, f.When, f.Fault)
	}
	return fmt.Sprintf("%s that had run no case logged a GPU fault (%s): %v", f.Who, f.When, f.Fault)
}
