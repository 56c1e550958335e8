package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// TestUnitFallback: a metric recorded without a declared direction (every
// committed run) is read by the old unit rule: every unit the committed
// runs carry, and the edge cases the two rules it replaced disagreed on
// (p2pfleet called "ps" higher and "cycles" unknown).
func TestUnitFallback(t *testing.T) {
	for unit, want := range map[string]int{
		"GB/s": 1, "Mops/s": 1, "gbps": 1, "Hz": 1,
		"us": -1, "µs": -1, "ns": -1, "ps": -1, "ms": -1, "s": -1, "cycles": -1, "ns/op": -1, "us/rt": -1,
		"count": 0, "1/M": 0, "": 0, "%": 0,
	} {
		if got := (report.Metric{Unit: unit}).Direction().Sign(); got != want {
			t.Errorf("undeclared %q: direction %d, want %d", unit, got, want)
		}
	}
	if report.Higher.Words() != "higher" || report.Lower.Words() != "lower" || report.Direction("").Words() != "unknown" {
		t.Errorf("Words disagrees with Sign")
	}
}

// TestDeclaredDirectionWins: a declaration beats the unit (a GB/s metric
// declared lower-is-better — say bytes re-sent per second — is lower), and
// survives a results.json round trip; an undeclared metric writes no
// "better", so a run without declarations is byte-identical to before.
func TestDeclaredDirectionWins(t *testing.T) {
	m := report.Metric{Unit: "GB/s", Better: report.Lower, Median: 1}
	if m.Direction() != report.Lower {
		t.Fatalf("declared lower, unit GB/s: got %q", m.Direction())
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back report.Metric
	if err := json.Unmarshal(b, &back); err != nil || back.Direction() != report.Lower {
		t.Fatalf("round trip of %s: %q, %v", b, back.Direction(), err)
	}
	b, _ = json.Marshal(report.Metric{Unit: "GB/s"})
	if strings.Contains(string(b), "better") {
		t.Errorf("an undeclared metric writes %s", b)
	}
}
