package harness

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"p2patomics/harness/report"
)

// World events are kept twice: Events, the lines stdout and summary.txt
// print (any code of the runner may append one, "HH:MM:SS: what
// happened"), and their typed records (report.WorldEvent), which
// results.json, junit.xml and report.html carry. A line appended to Events
// directly is typed when next seen (stampEvents): its kind read from its
// words, its rank, pid and signal from a Classify summary in it.

// event records e: its line in Events and its typed record. Call with r.mu
// held.
func (r *Runner) event(e report.WorldEvent) {
	r.stampEvents()
	now := time.Now()
	if e.Time == "" {
		e.Time = now.UTC().Format(time.RFC3339)
	}
	if e.Backend == "" {
		e.Backend = r.Backend
	}
	r.Events = append(r.Events, now.Format(time.TimeOnly)+": "+e.Detail)
	if r.typed == nil {
		r.typed = map[int]report.WorldEvent{}
	}
	r.typed[len(r.Events)-1] = e
	r.stamped = len(r.Events)
}

// eventf records a world event of kind in words. Call with r.mu held.
func (r *Runner) eventf(kind, format string, a ...any) {
	r.event(report.WorldEvent{Kind: kind, Detail: fmt.Sprintf(format, a...)})
}

// WorldEvents are the runner's world events so far, typed, in the order
// they happened. A world's "ready" line is not one: timing.worlds records
// every start.
func (r *Runner) WorldEvents() []report.WorldEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stampEvents()
	var out []report.WorldEvent
	for i := range r.Events {
		if e, ok := r.typed[i]; ok && e.Kind != "" {
			out = append(out, e)
		}
	}
	return out
}

var (
	lineTime = regexp.MustCompile(`^([0-9]{2}:[0-9]{2}:[0-9]{2}): `)
	lineRank = regexp.MustCompile(`rank ([0-9]+) \(pid ([0-9]+)\)(?: killed by (SIG[A-Z0-9]+))?`)
)

// lineKinds read a line's kind from its words, first match wins.
var lineKinds = []struct{ words, kind string }{
	{"idle rank died", report.EventIdleDeath},
	{"retired", report.EventRetired},
	{"respawn", report.EventRespawn},
	{"stopped answering between cases", report.EventRespawn},
	{"judged from it without running", report.EventSetupStreak},
}

// stampEvents types the lines appended to Events directly since the last
// look, each timed by its own "HH:MM:SS: " (today's, or yesterday's when
// that is later than now), else now. Call with r.mu held.
func (r *Runner) stampEvents() {
	if r.typed == nil {
		r.typed = map[int]report.WorldEvent{}
	}
	for i := r.stamped; i < len(r.Events); i++ {
		if _, ok := r.typed[i]; ok {
			continue
		}
		r.typed[i] = r.parseEvent(r.Events[i], time.Now())
	}
	r.stamped = len(r.Events)
}

// parseEvent types one line of Events; a world's ready line gets no kind
// (it is timing, not an event).
func (r *Runner) parseEvent(line string, now time.Time) report.WorldEvent {
	if strings.Contains(line, " ready in ") && !lineTime.MatchString(line) {
		return report.WorldEvent{}
	}
	e := report.WorldEvent{Kind: report.EventOther, Backend: r.Backend, Detail: line, Time: now.UTC().Format(time.RFC3339)}
	if m := lineTime.FindStringSubmatch(line); m != nil {
		e.Detail = strings.TrimPrefix(line, m[0])
		if t, err := time.ParseInLocation(time.TimeOnly, m[1], now.Location()); err == nil {
			at := time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), t.Second(), 0, now.Location())
			if at.After(now) {
				at = at.AddDate(0, 0, -1)
			}
			e.Time = at.UTC().Format(time.RFC3339)
		}
	}
	for _, k := range lineKinds {
		if strings.Contains(e.Detail, k.words) {
			e.Kind = k.kind
			break
		}
	}
	if m := lineRank.FindStringSubmatch(e.Detail); m != nil {
		rk, _ := strconv.Atoi(m[1])
		e.Rank = &rk
		e.Pid, _ = strconv.Atoi(m[2])
		e.Signal = m[3]
	}
	return e
}
