package harness

import (
	"fmt"
	"testing"
)

// Median, spread and units on recorded samples (the five 256 MiB copy-engine
// samples of cuda.vmm.perf.copy_ce_write.r0r1 on 2xH200, and an even count).
func TestSummarize(t *testing.T) {
	got := summarize(map[string]Metric{
		"bw_ce_write_gbps": {Unit: "GB/s", Method: "cuda-events", Samples: []float64{306.388, 311.984, 305.373, 308.1, 305.9}},
		"rtt_sys_us":       {Unit: "us", Method: "kernel", Samples: []float64{2.64, 2.639, 2.642, 2.6405}},
		"empty":            {Unit: "us"},
	})
	bw := got["bw_ce_write_gbps"]
	if bw.Median != 306.388 || bw.Min != 305.373 || bw.Max != 311.984 || bw.N != 5 || bw.Unit != "GB/s" || bw.Method != "cuda-events" {
		t.Errorf("bw = %+v", bw)
	}
	// Every sample is kept, in the order taken (not sorted), for the U test.
	if fmt.Sprint(bw.Samples) != "[306.388 311.984 305.373 308.1 305.9]" {
		t.Errorf("bw samples = %v, want all five in the order taken", bw.Samples)
	}
	rtt := got["rtt_sys_us"]
	if rtt.Median != 2.64 || rtt.Min != 2.639 || rtt.Max != 2.642 || rtt.N != 4 || rtt.Unit != "us" {
		t.Errorf("rtt = %+v (even count: mean of the middle two, rounded to 3 places)", rtt)
	}
	if _, ok := got["empty"]; ok {
		t.Error("a metric without samples must not be reported")
	}
	if summarize(nil) != nil {
		t.Error("no metrics must be nil (omitted from results.json)")
	}
}
