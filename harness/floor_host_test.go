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

// The physics floor through the runner, on the host backend: a case whose
// bandwidth (a ceiling planted, since the host reads none) sits below
// FloorFraction of it ends fail naming the floor; one above passes.
func TestFloorFailsTheCase(t *testing.T) {
	ceil := &report.Ceiling{Value: 100, Basis: "planted: 100 GB/s"}
	for _, tc := range []struct {
		gbps float64
		want report.Outcome
	}{
		{100 * harness.FloorFraction * 0.9, report.Fail},
		{100 * harness.FloorFraction * 1.1, report.Pass},
	} {
		c := &harness.Case{ID: "floor", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 1}, Expected: report.Pass,
			Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *harness.Ctx) error {
				for range 3 {
					if err := c.Bandwidth("bw_planted_gbps", "planted", ceil, tc.gbps); err != nil {
						return err
					}
				}
				return nil
			}}
		r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
		res := r.Run(c)
		r.Close()
		if res.Outcome != tc.want || (tc.want == report.Fail && !strings.Contains(res.Detail, "physics floor")) {
			t.Errorf("%.1f GB/s under a 100 GB/s ceiling: %s (%s), want %s", tc.gbps, res.Outcome, res.Detail, tc.want)
		}
		if m := res.Metrics["bw_planted_gbps"]; m.Ceiling == nil || m.N != 3 {
			t.Errorf("%.1f GB/s: the metric is not kept with its ceiling: %+v", tc.gbps, m)
		}
	}
}
