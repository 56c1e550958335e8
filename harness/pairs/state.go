package pairs

import "p2patomics/harness/report"

// State is what a case's result means for the pictures: the four words of
// the verdict matrix, worst last in States.
type State string

const (
	// Met: the case did what its spec expects (a planted bug failing, a
	// canary crashing, a real case passing).
	Met State = "met"
	// NotSupported: a result the verdict calls not-supported
	// (report.NotSupportedReason: a skip, or a fail a device's missing
	// needs= attribute predicts). The verdict counts it as met and lists it
	// apart (docs/ARCHITECTURE.md).
	NotSupported State = "not-supported"
	// ExpectedFail: the outcome differs from the spec's but matches the
	// baseline's fails.txt (gate verdict expected-fail): a known bug.
	ExpectedFail State = "expected-fail"
	// NotRun: an interrupted run did not finish the case (verdict
	// not-run): neither met nor unmet.
	NotRun State = "not-run"
	// Unmet: anything else — the outcome the run reports as unexpected.
	Unmet State = "unmet"
)

// States lists the states, least severe first: a cell that sums up many
// cases shows the worst.
var States = []State{Met, NotSupported, ExpectedFail, NotRun, Unmet}

// Order is the state's index in States (worst last).
func (s State) Order() int {
	for i, x := range States {
		if x == s {
			return i
		}
	}
	return len(States)
}

// Classify derives one result's state with the run's verdict rule
// (report.Unexpected, report.NotSupportedReason), so a picture never
// calls unmet what the verdict line calls met, nor the reverse: a gating
// verdict or a missed outcome that is not not-supported is unmet; a
// not-supported result is not-supported; a known bug (expected-fail) is
// expected-fail; the rest is met. A result not judged yet (a results.json
// older than the verdict) is classified by the same rule the suite would
// have judged it with.
func Classify(r report.Result) State {
	if r.Verdict == "" && r.NotSupported == "" {
		r.NotSupported = report.NotSupportedReason(r, report.Environment{})
	}
	switch {
	case report.Unexpected(r):
		return Unmet
	case r.Verdict == report.NotRun:
		return NotRun
	case r.NotSupported != "":
		return NotSupported
	case r.Verdict == report.ExpectedFail:
		return ExpectedFail
	}
	return Met
}
