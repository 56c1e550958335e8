package perf

import "testing"

// TestDirection: every unit the committed runs carry, and the edge cases
// the two rules it replaced disagreed on (p2pfleet called "ps" higher and
// "cycles" unknown).
func TestDirection(t *testing.T) {
	for unit, want := range map[string]int{
		"GB/s": 1, "Mops/s": 1, "gbps": 1, "Hz": 1,
		"us": -1, "µs": -1, "ns": -1, "ps": -1, "ms": -1, "s": -1, "cycles": -1, "ns/op": -1, "us/rt": -1,
		"count": 0, "1/M": 0, "": 0, "%": 0,
	} {
		if got := Direction(unit); got != want {
			t.Errorf("Direction(%q) = %d, want %d", unit, got, want)
		}
	}
	if Better("GB/s") != "higher" || Better("us") != "lower" || Better("count") != "unknown" {
		t.Errorf("Better disagrees with Direction")
	}
}
