package suite

import "p2patomics/harness/perf"

// Seams for the black-box tests in package suite_test.

// SetRecording makes --perf-runs measure and record by rc (its metric
// predicate and scope) instead of the perf gate's own, until restore: the
// only way to drive perf.txt's writing path on a machine with no GPU,
// whose host metrics perf.Gated rightly refuses.
func SetRecording(rc perf.Recording) (restore func()) {
	old := recording
	recording = rc
	return func() { recording = old }
}
