package report

import (
	"fmt"
	"testing"
)

// TestClockAdd: ranges widen over devices, reasons collect once, and only a
// reason that lowers the clock marks the metric throttled.
func TestClockAdd(t *testing.T) {
	var c *Clock
	c = c.Add(0, 1980, 1980, 5, []string{"gpu_idle"}, "")
	if c.Throttled || c.MinMHz != 1980 || c.Samples != 5 {
		t.Fatalf("idle only: %+v", c)
	}
	c = c.Add(1, 1755, 1980, 3, []string{"sw_power_cap", "gpu_idle"}, "")
	if !c.Throttled || c.MinMHz != 1755 || c.MaxMHz != 1980 || c.Samples != 8 || len(c.Devices) != 2 || len(c.Reasons) != 2 {
		t.Fatalf("power cap: %+v", c)
	}
	c = c.Add(1, 0, 0, 0, nil, "nvml gone")
	if c.Samples != 8 || c.Error != "nvml gone" || len(c.Devices) != 2 {
		t.Fatalf("error sample: %+v", c)
	}
}

// TestSoakMetrics: the median of the runs' medians (so the first, cold run
// is one vote), the smallest min, the largest max, every sample counted.
func TestSoakMetrics(t *testing.T) {
	run := func(med, lo, hi float64) map[string]Metric {
		return map[string]Metric{"case_wall_ms": {Unit: "ms", Median: med, Min: lo, Max: hi, N: 1, Method: "wall", Samples: []float64{med}}}
	}
	got := SoakMetrics([]map[string]Metric{run(14.8, 14.8, 14.8), run(5.5, 5.1, 5.9), run(5.6, 5.6, 5.6), nil})
	m := got["case_wall_ms"]
	if m.Median != 5.6 || m.Min != 5.1 || m.Max != 14.8 || m.N != 3 || m.Unit != "ms" {
		t.Fatalf("got %+v", m)
	}
	if fmt.Sprint(m.Samples) != "[14.8 5.5 5.6]" {
		t.Fatalf("samples %v: want every run's samples, in run order", m.Samples)
	}
	if SoakMetrics([]map[string]Metric{nil, nil}) != nil {
		t.Fatal("no metrics must give nil")
	}
	even := SoakMetrics([]map[string]Metric{run(1, 1, 1), run(3, 3, 3)})["case_wall_ms"]
	if even.Median != 2 {
		t.Fatalf("even count: median %v, want 2", even.Median)
	}
}
