package harness

import (
	"errors"
	"fmt"
	"time"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// judge is a case's outcome, detail and fault from the error it ended with:
// the error's own classification (errors.go), worded by its type below.
func judge(c *Case, w *World, err error) (report.Outcome, string, *report.Fault) {
	ce := classOf(err)
	detail, fault := ce.(judger).judge(c, w, err)
	return ce.outcome(), detail, fault
}

// judger words the result's detail (and fault) for a case that ended with
// err, which holds the error; it may kill w (a hang, a malformed message).
// Every classified error is one (checked below, at compile time): the
// classification (errors.go) knows neither cases nor worlds.
type judger interface {
	classified
	judge(c *Case, w *World, err error) (string, *report.Fault)
}

var _ = []judger{passed{}, plainError{}, (*SkipError)(nil), (*FailError)(nil), (*TimeoutError)(nil), (*DeadError)(nil),
	(*RemoteError)(nil), (*ProtocolError)(nil), (*StartError)(nil), (*SpawnError)(nil), (*IntegrityError)(nil)}

// How each error type words its judgement. err is the whole error the case
// ended with (a round's wrapping, teardown's join), the receiver the part
// of it that classified it.

func (passed) judge(*Case, *World, error) (string, *report.Fault) { return "", nil }
func (e *IntegrityError) judge(*Case, *World, error) (string, *report.Fault) {
	return e.Error(), nil
}
func (plainError) judge(_ *Case, _ *World, err error) (string, *report.Fault) {
	return err.Error(), nil
}
func (e *SkipError) judge(*Case, *World, error) (string, *report.Fault) { return e.Reason, nil }
func (e *FailError) judge(*Case, *World, error) (string, *report.Fault) { return e.Detail, nil }

// A hang: every rank gets SIGQUIT (a Go rank dumps its goroutines) and
// SIGKILL after the case's grace.
func (e *TimeoutError) judge(c *Case, w *World, err error) (string, *report.Fault) {
	grace := c.Grace
	if grace == 0 {
		grace = 2 * time.Second
	}
	// The call the world is stuck in, read before the kill while its
	// record's time in flight is the hang's.
	stuck, call := stuckCall(w)
	if c := wedgedCall(e.Watchdog); c != "" {
		call = c // the watchdog saw its work done: the call it names is the wedged one
	}
	e.Call = call
	w.Kill(grace, err)
	limit := c.Limit().String()
	if c.budgetWhy != "" {
		limit += ": " + c.budgetWhy
	}
	detail := fmt.Sprintf("%s (case timeout %s); SIGQUIT to every rank, SIGKILL after %s", e.Error(), limit, grace)
	if stuck != "" {
		detail += "; " + stuck
	}
	if d := Classify(w.Procs[e.Rank]); d.GoDump {
		detail += "; goroutine dump captured"
	}
	return detail, nil
}

// A death is classified from the rank's wait status and stderr, once the
// reaper has seen the exit.
func (e *DeadError) judge(_ *Case, w *World, err error) (string, *report.Fault) {
	p := w.Procs[e.Rank]
	p.WaitExit(3 * time.Second)
	d := Classify(p)
	return fmt.Sprintf("%s: %s", err.Error(), d.Summary), d.Fault
}

func (e *RemoteError) judge(_ *Case, _ *World, err error) (string, *report.Fault) {
	switch {
	case e.Fault != nil:
		return e.Error(), e.Fault
	case e.NotSupported:
		return e.Msg, nil
	}
	return err.Error(), nil
}

// A malformed message: the world is killed at once, its ranks' state
// unknown.
func (e *ProtocolError) judge(_ *Case, w *World, err error) (string, *report.Fault) {
	w.Kill(200*time.Millisecond, err)
	return "protocol: " + e.Error(), nil
}

// A StartError or SpawnError ends a case in its world start (Runner.getWorld
// words it); a body that started a world of its own gets the error's text.
func (e *StartError) judge(_ *Case, _ *World, err error) (string, *report.Fault) {
	return err.Error(), e.Death.Fault
}
func (*SpawnError) judge(_ *Case, _ *World, err error) (string, *report.Fault) {
	return err.Error(), nil
}

// diedDuring returns a DeadError for the first rank of w that has died
// without the case asking for it (Proc.Sacrifice), naming what the body
// returned (err), which judge turns into a crash classified from the rank's
// wait status and stderr; nil when no rank did, or when err already says a
// rank died (a death or a GPU fault: a crash).
func diedDuring(w *World, err error) *DeadError {
	if classOf(err).outcome() == report.Crash {
		return nil
	}
	for _, p := range w.Procs {
		if !p.hungUp() || p.sacrificed.Load() {
			continue
		}
		// The kernel closes a dead rank's socket before the reaper sees the
		// exit: wait for the wait status so the classification names it.
		p.WaitExit(3 * time.Second)
		body := "nil"
		if err != nil {
			body = err.Error()
		}
		return &DeadError{Rank: p.Rank, What: "the case (its body returned " + body + ")"}
	}
	return nil
}

// deadInEvidence reports whether ranks (taken from w) shows a rank that
// exited and that the case did not kill itself.
func deadInEvidence(w *World, ranks []report.Rank) bool {
	for i, rk := range ranks {
		if (rk.ExitCode != nil || rk.Signal != "") && !w.Procs[i].sacrificed.Load() {
			return true
		}
	}
	return false
}

// ping makes one round trip to every rank before the judgement. A signal
// sent to a rank just before its body returned may not have taken it yet:
// a rank that answers a request after the signal was sent has survived it,
// and one that was killed never answers (its socket hangs up, diedDuring
// sees it). A rank that does not answer at all while the body said nil is
// the case's timeout.
//
// It is the end-of-case probe of every case, a NoLeak one's too: a rank
// that answers with a GPU fault ends the case in that crash.
//
// Every rank the case did not kill is asked, also in a world whose other
// rank the case sacrificed (lifetime.owner_dies: a stopped peer there read
// as pass), and a rank that does not answer is the case's timeout whatever
// the body returned: an expected fail does not absorb a hang after it.
func ping(w *World, err error) error {
	if isWorldFatal(err) || w.broken.Load() != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range w.Procs {
		if p.sacrificed.Load() || !p.Alive() {
			continue // a rank that died is diedDuring's to name
		}
		m, perr := p.call(wire.TMemInfo, nil, deadline, nil)
		m.CloseFds()
		// MemInfo asks the device (cuMemGetInfo on CUDA), which returns
		// the sticky error a fault in the case left: the case's crash,
		// whatever the body returned, never a pass for the next case's
		// probe to find (the rank exits after this reply).
		var re *RemoteError
		if errors.As(perr, &re) && re.Fault != nil {
			return perr
		}
		var te *TimeoutError
		if errors.As(perr, &te) {
			te.What = "the liveness check after the case's body"
			if err != nil {
				te.What += " (the body had returned: " + err.Error() + ")"
			}
			return te
		}
	}
	return err
}
