package harness_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// witnessedFill fills n words on rank 0 through RunWitnessed and trusts
// nothing else: no read-back, so only the witness can tell a fill that ran
// from one that did not.
func witnessedFill(id string, n uint64, gotErr *error) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass,
		Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *harness.Ctx) error {
			b, err := c.Local(0, n*8)
			if err != nil {
				return err
			}
			*gotErr = c.RunWitnessed(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 4,
				Args: map[string]wire.Arg{"dst": harness.P(b, 0), "value": harness.V(7), "n": harness.V(n),
					"block": harness.V(4), "nthreads": harness.V(4)}}, n, "words")
			return *gotErr
		}}
}

// A witnessed launch that the driver dropped (the injector's drop rule:
// success reported, nothing run) is an error naming the kernel and the count
// it visited, never a pass; the same launch run passes. (Seen failing with
// Witness.Check not reading the witness: the dropped fill passed.)
func TestWitnessCatchesDroppedCheck(t *testing.T) {
	for _, tc := range []struct {
		rules []string
		want  report.Outcome
		msg   string
	}{
		{nil, report.Pass, ""},
		{[]string{"drop:fill_u64_plain_dev"}, report.Error, "fill_u64_plain_dev in rank 0 visited 0 of 1024 words"},
	} {
		set := wire.DefaultSettings
		set.Inject = tc.rules
		r := harness.NewRunner(backends.HostName, set, 1)
		var err error
		res := r.Run(witnessedFill("witness_fill", 1024, &err))
		r.Close()
		if res.Outcome != tc.want || !strings.Contains(res.Detail, tc.msg) {
			t.Errorf("%v: %s (%s), want %s naming %q", tc.rules, res.Outcome, res.Detail, tc.want, tc.msg)
		}
		if tc.msg != "" && !errors.Is(err, harness.ErrUnwitnessed) {
			t.Errorf("%v: error %v is not ErrUnwitnessed", tc.rules, err)
		}
	}
}

// RunWitnessed refuses a kernel that carries no witness: its launch could
// not prove anything.
func TestRunWitnessedRefusesUnwitnessed(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	res := r.Run(&harness.Case{ID: "witness_none", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Error,
		Timeout: 20 * time.Second, Run: func(c *harness.Ctx) error {
			b, err := c.Local(0, 4096)
			if err != nil {
				return err
			}
			return c.RunWitnessed(harness.Launch{Rank: 0, Kernel: "spread_u64_relaxed_dev", Grid: 1, Block: 1,
				Args: map[string]wire.Arg{"target": harness.P(b, 0), "operand": harness.V(1), "iters": harness.V(1), "block": harness.V(1)}}, 1, "words")
		}})
	if res.Outcome != report.Error || !strings.Contains(res.Detail, "carries no witness") {
		t.Fatalf("%s: %s", res.Outcome, res.Detail)
	}
}
