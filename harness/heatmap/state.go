package heatmap

import (
	"strings"

	"p2patomics/harness/report"
)

// State is what a case's result means for the pictures: the four words of
// the verdict matrix, worst last in States.
type State string

const (
	// Met: the case did what its spec expects (a planted bug failing, a
	// canary crashing, a real case passing).
	Met State = "met"
	// NotSupported: a skip whose reason is a capability the hardware or
	// driver lacks (it names a device attribute or says "not supported").
	// The verdict counts it as met and lists it apart (docs/ARCHITECTURE.md).
	NotSupported State = "not-supported"
	// ExpectedFail: the outcome differs from the spec's but matches the
	// baseline's fails.txt (gate verdict expected-fail): a known bug.
	ExpectedFail State = "expected-fail"
	// Unmet: anything else — the outcome the run reports as unexpected.
	Unmet State = "unmet"
)

// States lists the states, least severe first: a cell that sums up many
// cases shows the worst.
var States = []State{Met, NotSupported, ExpectedFail, Unmet}

func (s State) rank() int {
	for i, x := range States {
		if x == s {
			return i
		}
	}
	return len(States)
}

// Classify derives one result's state from its outcome, expected outcome
// and gate verdict. It is the one place the pictures decide this: when
// results.json gains the suite's own not-supported classification and
// summary, this function is what to connect to them.
//
// A gate verdict decides when present (expected-fail is a known bug,
// known-flake and flake are accepted as the gate accepts them, the
// gating verdicts are unmet); without one the outcome is compared with
// the expected outcome. Either way a skip whose detail names a missing
// capability is not-supported rather than met or unmet.
func Classify(r report.Result) State {
	if r.Outcome == report.Skip && r.Expected != report.Skip && notSupported(r.Detail) {
		return NotSupported
	}
	switch r.Verdict {
	case "":
	case report.ExpectedFail:
		return ExpectedFail
	case report.Expected, report.KnownFlake, report.Flake:
		return Met
	default:
		if r.Verdict.Gating() {
			return Unmet
		}
	}
	if r.Met() {
		return Met
	}
	return Unmet
}

// notSupported reports whether a skip's reason names a capability the
// machine lacks: a device attribute (CU_DEVICE_ATTRIBUTE_…,
// HSA_AMD_…_SUPPORTED, hipDeviceAttribute…) or the words "not supported" /
// "unsupported".
func notSupported(detail string) bool {
	d := strings.ToLower(detail)
	for _, w := range []string{"not supported", "unsupported", "_attribute_", "deviceattribute", "_supported"} {
		if strings.Contains(d, w) {
			return true
		}
	}
	return false
}
