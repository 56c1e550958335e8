package harness

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"p2patomics/harness/report"
)

// streaks are a runner's rules over runs of cases that ended the same way,
// each a world event when it fires: a kind whose setup keeps failing the
// same way (its later cases judged from the first, never run), a world
// whose cases keep ending in error (retired), and a driver wedged in one
// call (stuck.go: every later case not run). Its own lock; it adds to the
// runner's event log, never the reverse.
type streaks struct {
	log *eventLog
	mu  sync.Mutex
	// setup is, per allocation kind, the run of cases in a row that failed
	// the same way (failSig: a setup request's status, or the same crash); from setupStreakMax
	// on, later cases of the kind are judged from it without running.
	setup map[string]*setupStreak
	// errStreak counts each live world's consecutive error outcomes.
	errStreak map[*World]int
	// judged names the cases judged from a streak (never run).
	judged map[string]bool
	// rerun is set while Rerun runs a case: it runs, streak or not.
	rerun bool
	// wedge is the wedged-driver rule (stuck.go).
	wedge *wedges
}

// noteWedge counts a case that timed out stuck in a named call (stuck.go).
func (s *streaks) noteWedge(c *Case, res report.Result, err error) { s.wedge.note(c, res, err) }

// judgedFromWedge returns c's result judged not-run from the call the
// driver is wedged in, or false when none is.
func (s *streaks) judgedFromWedge(c *Case, res *report.Result) bool {
	if !s.wedge.judgedFrom(res) {
		return false
	}
	s.mu.Lock()
	s.judge(c.ID)
	s.mu.Unlock()
	return true
}

// wedgedIn names the call the driver was taken as wedged in, "" while
// none.
func (s *streaks) wedgedIn() string { return s.wedge.in() }

// setupStreakMax: after this many cases of one kind in a row whose setup
// failed with the same call and status, the kind's later cases (canaries
// aside) are judged from the first of them without running (a driver whose export says
// NOT_SUPPORTED otherwise costs every case of the kind its own attempt).
const setupStreakMax = 3

type setupStreak struct {
	sig     string // request + the rank's message: the same call, the same status
	n       int
	first   string // the first case that hit it
	outcome report.Outcome
	detail  string
}

// setupSig is the signature of an error that came back from a setup
// request (alloc, import) with every rank still answering; "" for any
// other error.
func setupSig(err error) string {
	var re *RemoteError
	if !errors.As(err, &re) || re.Fault != nil || (re.What != "alloc" && re.What != "import") {
		return ""
	}
	return re.What + ": " + rankField.ReplaceAllString(re.Msg, "rank N")
}

// pidField and rankField are what differs between two ranks' identical
// deaths: which rank touched the memory first is the scheduler's choice.
var (
	pidField  = regexp.MustCompile(`\(pid [0-9]+\)`)
	rankField = regexp.MustCompile(`\brank [0-9]+\b`)
)

// failSig is the signature of the way a case failed, for the streak: a
// setup request's error or skip (the same call, the same status), or a
// crash in the same request the same way (a GPU fault the rank reported, or
// a rank's death as classified, its pid left out): a grant that does
// nothing faults every case's first launch. "" for any other ending.
func failSig(res report.Result, err error) string {
	switch res.Outcome {
	case report.Error, report.Skip:
		return setupSig(err)
	case report.Crash:
		var re *RemoteError
		var de *DeadError
		if errors.As(err, &re) && re.Fault != nil {
			return "fault in " + re.What + ": " + rankField.ReplaceAllString(re.Msg, "rank N")
		}
		if errors.As(err, &de) {
			return "crash: " + rankField.ReplaceAllString(pidField.ReplaceAllString(res.Detail, "(pid)"), "rank N")
		}
	}
	return ""
}

// judgedFromSetup returns the result of c judged from its kind's setup
// streak, or false when c must run.
func (s *streaks) judgedFromSetup(c *Case, res *report.Result) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.setup[c.Kind]
	// A case that expects the streak's outcome runs: judged, it would meet
	// its expectation without having run. A control (a planted bug, a
	// canary, an expected failure) runs too: judged, it would have lost
	// its control (expect.Judge), so only its own run can tell.
	if s.rerun || st == nil || st.n < setupStreakMax || c.Canary || c.Expected == st.outcome ||
		report.IsControl(report.Result{Labels: c.Labels, Expected: c.Expected}) {
		return false
	}
	s.judge(c.ID)
	// Its own outcome, never the streak's: a skip or an error would read
	// as a run that said so (docs/GATING.md, "Cases judged without
	// running").
	res.Outcome = report.NotRunOutcome
	res.JudgedFrom = &report.JudgedFrom{Case: st.first, Outcome: st.outcome}
	res.Detail = fmt.Sprintf("not run: judged from %s, the first of %d %s cases in a row that failed the same way (%s): %s",
		st.first, st.n, c.Kind, st.sig, st.detail)
	return true
}

// judge notes id as judged from a streak. Call with s.mu held.
func (s *streaks) judge(id string) {
	if s.judged == nil {
		s.judged = map[string]bool{}
	}
	s.judged[id] = true
}

// wasJudged reports whether the case's last result was judged from a
// streak without running.
func (s *streaks) wasJudged(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.judged[id]
}

// setRerun marks a rerun's start and end: a rerun runs, streak or not,
// and extends none.
func (s *streaks) setRerun(on bool) {
	s.mu.Lock()
	s.rerun = on
	s.mu.Unlock()
}

// noteSetup extends or ends c's kind's setup streak with the case's end.
func (s *streaks) noteSetup(c *Case, res report.Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rerun || c.Canary {
		// A canary tests the harness's handling of a rank's death, not
		// the kind's setup: it neither extends nor ends a streak, and is
		// never judged from one.
		return
	}
	sig := failSig(res, err)
	if sig == "" || res.Outcome == c.Expected {
		// Only a case that missed its expected outcome extends a streak:
		// a control's expected crash never judges the cases after it.
		delete(s.setup, c.Kind)
		return
	}
	if s.setup == nil {
		s.setup = map[string]*setupStreak{}
	}
	st := s.setup[c.Kind]
	if st == nil || st.sig != sig || st.outcome != res.Outcome {
		st = &setupStreak{sig: sig, first: c.ID, outcome: res.Outcome, detail: res.Detail}
		s.setup[c.Kind] = st
	}
	if st.n++; st.n == setupStreakMax {
		s.log.addf(report.EventSetupStreak, "%d %s cases in a row from %s failed the same way (%s); the kind's later cases are judged from it without running",
			st.n, c.Kind, st.first, sig)
	}
}

// errStreakMax: a world whose cases end in error this many times in a row
// is retired (the next case starts a fresh one): a rank left in a bad state
// (an address-space limit, a poisoned context) otherwise turns every later
// case in its world into an error, a case that expects a timeout included.
const errStreakMax = 3

// unusableMarks are remote errors after which the rank is not trusted with
// another case: the rank's process ran out of memory or descriptors.
var unusableMarks = []string{"cannot allocate memory", "out of memory", "too many open files", "resource temporarily unavailable"}

// retireAfter counts the world's consecutive error outcomes and says
// whether the world must go: at errStreakMax, or at once after an error
// that leaves the rank unusable. It records a world event when it does.
func (s *streaks) retireAfter(w *World, res report.Result, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.Outcome != report.Error {
		delete(s.errStreak, w)
		return false
	}
	var re *RemoteError
	clean := errors.As(err, &re) && re.Fault == nil
	if clean {
		// A rank answered with an API error: it failed cleanly and keeps
		// its world, unless the error says the rank is unusable.
		for _, m := range unusableMarks {
			if strings.Contains(strings.ToLower(re.Msg), m) {
				delete(s.errStreak, w)
				s.log.addf(report.EventRetired, "world of %d retired after %s: rank %d is unusable (%s); the next case starts a fresh one",
					w.N, res.ID(), re.Rank, m)
				return true
			}
		}
		delete(s.errStreak, w)
		return false
	}
	if s.errStreak == nil {
		s.errStreak = map[*World]int{}
	}
	s.errStreak[w]++
	if s.errStreak[w] < errStreakMax {
		return false
	}
	n := s.errStreak[w]
	delete(s.errStreak, w)
	s.log.addf(report.EventRetired, "world of %d retired after %s: %d cases in a row ended in error; the next case starts a fresh one",
		w.N, res.ID(), n)
	return true
}
