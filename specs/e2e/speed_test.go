package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/inject"
	"p2patomics/wire"
)

// underRule runs c on a fresh host runner under rules, with every rank's
// trace kept (--trace), and returns metric and how many inject.<kind>
// records the ranks' traces hold; the case must pass (a speed rule changes
// no result).
func underRule(t *testing.T, c *harness.Case, metric, kind string, rules ...string) (report.Metric, int) {
	t.Helper()
	set := wire.DefaultSettings
	set.Inject = rules
	r := harness.NewRunner(backends.HostName, set, 1)
	out := t.TempDir()
	r.Evidence = &harness.Evidence{Out: out, TraceAll: true}
	defer r.Close()
	res := r.Run(c)
	if res.Outcome != report.Pass {
		t.Fatalf("%s under %v: %s (%s), want pass", c.ID, rules, res.Outcome, res.Detail)
	}
	m, ok := res.Metrics[metric]
	if !ok || m.N == 0 {
		t.Fatalf("%s under %v: no %s metric (%v)", c.ID, rules, metric, res.Metrics)
	}
	traces, _ := filepath.Glob(filepath.Join(out, "cases", c.ID, "rank-*.trace"))
	if len(traces) == 0 {
		t.Fatalf("%s: no rank trace kept in %s", c.ID, out)
	}
	n := 0
	for _, p := range traces {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "inject."+kind)
	}
	return m, n
}

// Issue 36 item 4: copy-times slows the real host copy path and nothing
// else: copy-times:2 issues every copy again inside its timed window. What
// is asserted is counted, never timed (make test runs on a loaded shared
// CPU, where a wall-clock ratio flaked at 1.26 against a 1.3 margin): the
// ranks' traces hold no copy-times record healthy, and under the rule at
// least one per timed sample; the bandwidth medians' ratio (1.6-2.2x when
// quiet: the second memmove finds its 8 MiB warm) is only logged. stretch
// is tested at the launch (rank/host TestStretchLaunch).
func TestCopyTimesSlowsTheHostCopy(t *testing.T) {
	const id, metric = "host.memfd.perf.copy_ce_write.r0r1", "bw_ce_write_gbps"
	c := hostCase(t, id)
	healthy, none := underRule(t, c, metric, inject.CopyTimes)
	slowed, again := underRule(t, c, metric, inject.CopyTimes, "copy-times:2")
	if none != 0 {
		t.Errorf("%s healthy: %d copy-times records, want 0", id, none)
	}
	if again < slowed.N {
		t.Errorf("%s under copy-times:2: %d copies issued again for %d timed samples, want at least one each", id, again, slowed.N)
	}
	t.Logf("%s: %s %.4g healthy, %.4g under copy-times:2 (%.2fx); %d copies issued again", id, metric, healthy.Median, slowed.Median, healthy.Median/slowed.Median, again)
}
