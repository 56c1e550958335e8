package harness_test

import (
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// A control whose kernel the injector dropped has lost its control: the
// fill case made a control expected to fail (its fail is what it shows)
// fails as expected when its kernel runs, and ends error, naming the
// dropped launch, when drop: took it; a case that is no control keeps the
// fail the drop caused.
func TestControlDroppedIsLost(t *testing.T) {
	for _, tc := range []struct {
		rules   []string
		control bool
		want    report.Outcome
	}{
		{nil, true, report.Fail},
		{[]string{"drop:fill_u64_plain_dev"}, true, report.Error},
		{[]string{"drop:fill_u64_plain_dev"}, false, report.Fail},
	} {
		set := wire.DefaultSettings
		set.Inject = tc.rules
		r := harness.NewRunner(backends.HostName, set, 1)
		c := fillCase("witness_drop")
		if tc.control {
			c.Expected = report.Fail
			run := c.Run
			c.Run = func(x *harness.Ctx) error {
				if err := run(x); err != nil {
					return err
				}
				return harness.Failf("the planted bug shows") // the control's expected fail
			}
		}
		res := r.Run(c)
		r.Close()
		if res.Outcome != tc.want {
			t.Errorf("%v control=%v: %s (%s), want %s", tc.rules, tc.control, res.Outcome, res.Detail, tc.want)
		}
		if tc.want == report.Error && !strings.Contains(res.Detail, "dropped 1 launch(es), first rank 0's fill_u64_plain_dev (drop:fill_u64_plain_dev)") {
			t.Errorf("detail %q", res.Detail)
		}
	}
}

// The leak check counts from the kernel: under noop:munmap the host
// backend's own counters say the buffers are gone, the rank's
// /proc/<pid>/maps says they are still mapped, and the case fails as a
// leak; without the rule the same case passes (TestInjectDrop).
func TestLeakCheckCountsFromTheKernel(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"noop:munmap"}
	r := harness.NewRunner(backends.HostName, set, 1)
	res := r.Run(fillCase("leak_kernel"))
	r.Close()
	if res.Outcome != report.Fail || !strings.Contains(res.Detail, "more bytes of shared memory than before the case") {
		t.Errorf("noop:munmap: %s (%s), want a leak", res.Outcome, res.Detail)
	}
}
