package specs

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"p2patomics/specs/ungated"
)

// Every not-gated entry names cases of today's catalogue and a metric
// those cases record (in the committed 1xH200 run): an entry left behind
// by a renamed case or metric would silently gate it again. Planted: a
// misspelt variant or metric is reported.
func TestUngatedNamesRealCases(t *testing.T) {
	var ids []string
	for _, c := range everyCase(t) {
		ids = append(ids, c.ID)
	}
	b, err := os.ReadFile("../results/h200x1-580.159.04/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			ID      string                     `json:"id"`
			Metrics map[string]json.RawMessage `json:"metrics"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range ungated.List {
		cases, metrics := 0, 0
		for _, id := range ids {
			if _, ok := ungated.Reason(id, m.Metric); ok {
				cases++
			}
		}
		for _, r := range doc.Results {
			if _, ok := r.Metrics[m.Metric]; !ok {
				continue
			}
			if _, ok := ungated.Reason(r.ID, m.Metric); ok {
				metrics++
			}
		}
		if cases == 0 || metrics == 0 || m.Reason == "" {
			t.Errorf("%s %s: %d catalogue cases, %d recorded metrics, reason %q: want some of each", m.Case, m.Metric, cases, metrics, m.Reason)
		}
	}
	// And the gated ones stay gated: the one-direction copies, the
	// vmm-host round trip, the GPU-memory spread atomics.
	for _, id := range []string{"cuda.vmm.perf.copy_ce_write.r0r1", "cuda.vmm-host.perf.pingpong_latency_local", "cuda.vmm.perf.atomic_spread_local_sys"} {
		metric := map[bool]string{true: "bw_ce_write_gbps", false: "rtt_dev_us"}[strings.Contains(id, "copy")]
		if strings.Contains(id, "atomic") {
			metric = "atomic_rate"
		}
		if why, ok := ungated.Reason(id, metric); ok {
			t.Errorf("%s %s is not gated: %s", id, metric, why)
		}
	}
}
