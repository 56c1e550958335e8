package cuda

import (
	"slices"
	"testing"
)

func TestNVMLReasonNames(t *testing.T) {
	got := NVMLReasonNames(0x4 | 0x40 | 0x1000)
	want := []string{"sw_power_cap", "hw_thermal_slowdown", "0x1000"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if NVMLReasonNames(0) != nil {
		t.Error("no reasons must be nil")
	}
}

// TestDeviceClockSample reads the SM clock through NVML on a GPU machine
// (skips where libcuda or libnvidia-ml is missing).
func TestDeviceClockSample(t *testing.T) {
	w := newWorker(t)
	b, _ := openDevice(t, w, 0)
	mhz, reasons, err := b.SampleClock()
	if err != nil {
		t.Skipf("no clock: %v", err)
	}
	if mhz == 0 {
		t.Errorf("SM clock 0 MHz")
	}
	t.Logf("SM clock %d MHz, reasons %v", mhz, reasons)
}
