package perf

import (
	"strings"
	"testing"
)

// TestParseChecksTheOpAgainstItsBand: with the unit no longer read for a
// direction, a line written the wrong way round by hand (a ">=" limit
// above its band, a "<=" one below it) is refused by its own numbers.
func TestParseChecksTheOpAgainstItsBand(t *testing.T) {
	for _, l := range []string{
		"cuda.vmm.perf.x.r0r1 bw_gbps >= 20 GB/s | band 10..12 runs=3 tol=8% family=other",
		"cuda.vmm.perf.x.r0r1 rtt_us <= 5 us | band 10..12 runs=3 tol=8% family=other",
	} {
		if _, err := Parse("perf.txt", []byte("# scope: sku x\n"+l+"\n")); err == nil || !strings.Contains(err.Error(), "wrong side of its band") {
			t.Errorf("%s: %v, want refused", l, err)
		}
	}
	ok := "cuda.vmm.perf.x.r0r1 resent_gbps <= 13 GB/s | band 10..12 runs=3 tol=8% family=other"
	if _, err := Parse("perf.txt", []byte("# scope: sku x\n"+ok+"\n")); err != nil {
		t.Errorf("a <= GB/s line (declared lower): %v", err)
	}
}
