package report

import "testing"

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
