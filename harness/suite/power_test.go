package suite

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Issue 52 item 1: --power (and P2PAT_POWER) is read by Validate, before
// --out is touched: a malformed or unreachable target is a usage error of
// one line naming the value (exit 2); a good one reaches the plan's judge.
// Planted: an Options without the flag refuses --power as unknown, and a
// Validate that skips power.Parse takes perf=5%.
func TestPowerFlag(t *testing.T) {
	for _, bad := range []string{"perf=5%", "perf=20", "litmus=1e-12", "speed=2"} {
		_, err := parseWith(t, nil, "--power="+bad)
		var u *UsageError
		if err == nil || !errors.As(err, &u) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--power="+bad) {
			t.Errorf("--power=%s: %v, want one usage line naming it", bad, err)
		}
	}
	if o, err := parseWith(t, nil); err != nil || o.power.String() != "" {
		t.Errorf("no --power: %+v %v", o.power, err)
	}
	o, err := parseWith(t, map[string]string{"P2PAT_POWER": "perf=20%,litmus=5/M"})
	if err != nil || math.Abs(o.power.Perf-0.20) > 1e-12 || math.Abs(o.power.Litmus-5e-6) > 1e-15 || o.power.String() != "perf=20%,litmus=5/M" {
		t.Errorf("P2PAT_POWER: %+v %v", o.power, err)
	}
}
