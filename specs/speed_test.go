package specs

import (
	"flag"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/wire"
)

// hostCase is the host backend's case id of a two-rank world.
func hostCase(t *testing.T, id string) *harness.Case {
	t.Helper()
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 2
	for _, c := range Catalogue(&o, backends.HostName, string(backends.Memfd)) {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no case %s in the host catalogue", id)
	return nil
}

// medianOf runs c on a fresh host runner under rules and returns metric's
// median; the case must pass (a speed rule changes no result).
func medianOf(t *testing.T, c *harness.Case, metric string, rules ...string) float64 {
	t.Helper()
	set := wire.DefaultSettings
	set.Inject = rules
	r := harness.NewRunner(backends.HostName, set, 1)
	defer r.Close()
	res := r.Run(c)
	if res.Outcome != report.Pass {
		t.Fatalf("%s under %v: %s (%s), want pass", c.ID, rules, res.Outcome, res.Detail)
	}
	m, ok := res.Metrics[metric]
	if !ok || m.N == 0 {
		t.Fatalf("%s under %v: no %s metric (%v)", c.ID, rules, metric, res.Metrics)
	}
	return m.Median
}

// Issue 36 item 4: copy-times slows the real host copy path and nothing
// else: copy-times:2 issues every copy twice inside its timed window, so
// the copy bandwidth's median falls to about half (1.6-2.2x measured: the
// second memmove finds its 8 MiB warm). The margin (1.3 for a planted 2)
// is wide: the two medians are wall-clock samples on a shared CPU, and
// only their ratio is asserted. stretch is tested at the launch
// (rank/host TestStretchLaunch): the host's atomic rates move 2x between
// two healthy runs (goroutine scheduling), too much for a ratio.
func TestCopyTimesSlowsTheHostCopy(t *testing.T) {
	for _, tc := range []struct {
		id, metric, rule string
	}{
		{"host.memfd.perf.copy_ce_write.r0r1", "bw_ce_write_gbps", "copy-times:2"},
	} {
		c := hostCase(t, tc.id)
		healthy := medianOf(t, c, tc.metric)
		slowed := medianOf(t, c, tc.metric, tc.rule)
		if healthy/slowed < 1.3 {
			t.Errorf("%s under %s: median %.4g, healthy %.4g: a ratio of %.2f, want above 1.3 for a planted 2x", tc.id, tc.rule, slowed, healthy, healthy/slowed)
		}
		t.Logf("%s: %s %.4g healthy, %.4g under %s (%.2fx)", tc.id, tc.metric, healthy, slowed, tc.rule, healthy/slowed)
	}
}
