package harness

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// The errors a case can end with, each answering once what the runner asks
// of it (as cilium/ebpf's error types answer Is, so no caller compares
// them): the outcome a case that ends with it gets, whether the world's
// ranks are in an unknown state after it, and how much it explains when
// several ranks failed at once. judge, isWorldFatal, worstErr, ping,
// diedDuring, startFailed, StartError.Outcome, the runner's world start and
// Round.Take all ask classOf, never the types themselves; how each type
// words its detail is in judge.go.
type classified interface {
	error
	// outcome is what a case whose body ended with the error is judged.
	outcome() report.Outcome
	// fatal: after it the ranks' state is unknown (a hang, a death, a
	// malformed message, a GPU fault): no teardown, and the world is killed.
	fatal() bool
	// weight ranks errors by how much they explain: of several ranks'
	// errors (one launch per rank, teardown's frees) the heaviest is the
	// case's, so a rank that died or faulted wins over one that timed out
	// waiting for it.
	weight() int
}

// Weights, heaviest last.
const (
	weightNone    = 0 // no error
	weightPlain   = 2 // an error that says what it is and leaves the ranks answering
	weightTimeout = 3
	weightDead    = 4
	weightFault   = 5
)

// classOf is the classification of err: the classified error its chain
// holds; where err joins several (teardown's frees), the heaviest of
// them, a fatal one among equals, so a world in an unknown state is never
// kept for a lighter error beside it; a plain error (any other) is the
// case's error; nil is a pass.
func classOf(err error) classified {
	if err == nil {
		return passed{}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		best := classOf(heaviest(errs))
		for _, e := range errs {
			if ce := classOf(e); ce.weight() == best.weight() && ce.fatal() {
				return ce
			}
		}
		return best
	}
	var ce classified
	if errors.As(err, &ce) {
		return ce
	}
	return plainError{err}
}

// heaviest is the error of errs that explains the most (weight), the first
// of equal weight; nil when every one is nil.
func heaviest(errs []error) error {
	var best error
	for _, e := range errs {
		if classOf(e).weight() > classOf(best).weight() {
			best = e
		}
	}
	return best
}

// isWorldFatal: after these the ranks' state is unknown.
func isWorldFatal(err error) bool { return classOf(err).fatal() }

// passed is no error: a pass.
type passed struct{}

func (passed) Error() string           { return "" }
func (passed) outcome() report.Outcome { return report.Pass }
func (passed) fatal() bool             { return false }
func (passed) weight() int             { return weightNone }

// plainError is any error none of the types below holds (a spec's own
// error, ErrUnwitnessed, a lock that cannot be taken): the case's error.
type plainError struct{ error }

func (plainError) outcome() report.Outcome { return report.Error }
func (plainError) fatal() bool             { return false }
func (plainError) weight() int             { return weightPlain }

// SkipError: a capability is missing.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Skipf builds a SkipError.
func Skipf(format string, a ...any) error { return &SkipError{fmt.Sprintf(format, a...)} }

func (*SkipError) outcome() report.Outcome { return report.Skip }
func (*SkipError) fatal() bool             { return false }
func (*SkipError) weight() int             { return weightPlain }

// FailError: a verification did not hold (expected vs got).
type FailError struct{ Detail string }

func (e *FailError) Error() string { return e.Detail }

// Failf builds a FailError.
func Failf(format string, a ...any) error { return &FailError{fmt.Sprintf(format, a...)} }

func (*FailError) outcome() report.Outcome { return report.Fail }
func (*FailError) fatal() bool             { return false }
func (*FailError) weight() int             { return weightPlain }

// TimeoutError: a deadline passed while waiting on a rank.
type TimeoutError struct {
	Rank int
	What string
	// Watchdog is the rank's watchdog's report when it, not the deadline,
	// ended the wait (internal/watchdog): a call wedged with its work done.
	Watchdog string
	// Patience is why the case's patience gave up at the deadline (no
	// progress, or its own limit passed), "" outside a case.
	Patience string
	// Call names the vendor call the hung world was found stuck in (the
	// watchdog's, or the innermost traced call in flight: stuckCall), set
	// when the case is judged; "" when none was found.
	Call string
}

func (e *TimeoutError) Error() string {
	if e.Watchdog != "" {
		return fmt.Sprintf("rank %d did not answer %s: its watchdog found %s", e.Rank, e.What, e.Watchdog)
	}
	if e.Patience != "" {
		return fmt.Sprintf("rank %d did not answer %s before the deadline (%s)", e.Rank, e.What, e.Patience)
	}
	return fmt.Sprintf("rank %d did not answer %s before the deadline", e.Rank, e.What)
}

func (*TimeoutError) outcome() report.Outcome { return report.Timeout }
func (*TimeoutError) fatal() bool             { return true }
func (*TimeoutError) weight() int             { return weightTimeout }

// DeadError: a rank died (or closed its socket) during a request.
type DeadError struct {
	Rank int
	What string
}

func (e *DeadError) Error() string { return fmt.Sprintf("rank %d died during %s", e.Rank, e.What) }

func (*DeadError) outcome() report.Outcome { return report.Crash }
func (*DeadError) fatal() bool             { return true }
func (*DeadError) weight() int             { return weightDead }

// RemoteError: a rank answered with an error. What it means is in the
// reply: a GPU fault is a crash (the rank exits after it), a backend's
// ErrNotSupported a skip, anything else the case's error from a rank that
// still answers.
type RemoteError struct {
	Rank         int
	What         string
	Msg          string
	NotSupported bool
	Fault        *wire.Fault
}

func (e *RemoteError) Error() string { return fmt.Sprintf("rank %d %s: %s", e.Rank, e.What, e.Msg) }

func (e *RemoteError) outcome() report.Outcome {
	switch {
	case e.Fault != nil:
		return report.Crash
	case e.NotSupported:
		return report.Skip
	}
	return report.Error
}
func (e *RemoteError) fatal() bool { return e.Fault != nil }
func (e *RemoteError) weight() int {
	if e.Fault != nil {
		return weightFault
	}
	return weightPlain
}

// RankRefused reports whether err is the one failure a case may accept
// as an outcome: the rank answered, with an error reply that is neither a
// fault (a crash) nor not-supported. A timeout, a dead rank or a protocol
// error never is: a case expects one specific failure, never any error.
// Nor is a read that succeeded and whose device check was refused
// (IntegrityError): the read did not fail, it could not be verified.
func RankRefused(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.outcome() == report.Error && !isIntegrity(err)
}

// ProtocolError: a malformed message.
type ProtocolError struct {
	Rank int
	Err  error
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }
func (e *ProtocolError) Unwrap() error { return e.Err }

func (*ProtocolError) outcome() report.Outcome { return report.Error }
func (*ProtocolError) fatal() bool             { return true }
func (*ProtocolError) weight() int             { return weightPlain }

// SpawnError: a rank process could not be started (fork/exec failed, e.g.
// EAGAIN under a process limit). The errno is named. No rank ran: the
// case's error, its world never existed.
type SpawnError struct {
	Rank int
	Err  error
}

func (e *SpawnError) Error() string {
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		return fmt.Sprintf("cannot start rank %d: %v (%s)", e.Rank, e.Err, unix.ErrnoName(errno))
	}
	return fmt.Sprintf("cannot start rank %d: %v", e.Rank, e.Err)
}
func (e *SpawnError) Unwrap() error { return e.Err }

func (*SpawnError) outcome() report.Outcome { return report.Error }
func (*SpawnError) fatal() bool             { return false }
func (*SpawnError) weight() int             { return weightPlain }

// IntegrityError, which RankRefused does not count as the read's refusal:
// a read that cannot be verified is never the allowed "the read failed"
// answer of a lifetime case. Every other error (a hang, a death, a
// corrupted frame, a witness that says the sum did not run) keeps its class.
func checkFailed(r, buf int, off, words uint64, err error) error {
	if RankRefused(err) {
		return &IntegrityError{Rank: r, Buf: buf, Off: off, Words: words, Err: err}
	}
	return fmt.Errorf("read-back integrity check of rank %d's read of buffer %d [%d, +%d words): %w", r, buf, off, words, err)
}

// IntegrityError: a read succeeded but the device could not check it.
type IntegrityError struct {
	Rank       int
	Buf        int
	Off, Words uint64
	Err        error
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("read-back integrity: rank %d's read of buffer %d [%d, +%d words) succeeded but its device sum was refused: %v",
		e.Rank, e.Buf, e.Off, e.Words, e.Err)
}
func (e *IntegrityError) Unwrap() error { return e.Err }

func (*IntegrityError) outcome() report.Outcome { return report.Error }
func (*IntegrityError) fatal() bool             { return false }
func (*IntegrityError) weight() int             { return weightPlain }

// isIntegrity reports whether err holds an IntegrityError (RankRefused).
func isIntegrity(err error) bool {
	var ie *IntegrityError
	return errors.As(err, &ie)
}
