package harness_test

import (
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// fillCase fills 1024 words with 7 on rank 0 and checks them through the
// rank's sum (a read-back, not a kernel): a dropped fill leaves zeros.
func fillCase(id string) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass,
		Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *harness.Ctx) error {
			const n = 1024
			b, err := c.Local(0, n*8+16) // the fill's witness words after the data
			if err != nil {
				return err
			}
			if err := c.Zero(0, b, 0, n*8); err != nil {
				return err
			}
			if _, err := c.Run(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 64,
				Args: map[string]wire.Arg{"dst": harness.P(b, 0), "value": harness.V(7), "n": harness.V(n),
					"block": harness.V(64), "nthreads": harness.V(64), "wit": harness.P(b, n*8), "nonce": harness.V(1)}}); err != nil {
				return err
			}
			s, err := c.Sum(0, b, 0, n, 64)
			if err != nil {
				return err
			}
			if s != 7*n {
				return harness.Failf("fill summed to %d, want %d", s, 7*n)
			}
			return nil
		}}
}

// The injector's drop rule at the rank's launch path: the launch reports
// success, nothing runs, and the case that relied on it does not pass; the
// same case without the rule passes (so the test can fail), and the rule
// is on the result.
func TestInjectDrop(t *testing.T) {
	for _, tc := range []struct {
		rules []string
		want  report.Outcome
	}{
		{nil, report.Pass},
		{[]string{"drop:fill_u64_plain_dev"}, report.Fail},
		{[]string{"drop:copy_b128_plain_dev"}, report.Pass}, // another kernel: untouched
		// The device sum that checks every read and Ctx.Sum (readcheck.go):
		// dropped, its witness says it did not run, the case's error.
		{[]string{"drop:sum_u64_relaxed_dev"}, report.Error},
		{[]string{"drop-every:1"}, report.Error},
	} {
		set := wire.DefaultSettings
		set.Inject = tc.rules
		r := harness.NewRunner(backends.HostName, set, 1)
		res := r.Run(fillCase("inject_drop"))
		r.Close()
		if res.Outcome != tc.want {
			t.Errorf("%v: %s (%s), want %s", tc.rules, res.Outcome, res.Detail, tc.want)
		}
		if strings.Join(res.Inject, ",") != strings.Join(tc.rules, ",") {
			t.Errorf("%v: the result names the rules %v", tc.rules, res.Inject)
		}
	}
}
