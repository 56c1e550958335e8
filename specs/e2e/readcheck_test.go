package e2e

import (
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 37 item 1: the three case families that passed with every read's
// first bit flipped (a flip keeps a litmus round's outcome legal, and the
// histogram sums to n by construction) fail under corrupt-read, each with
// the read-back integrity check's words; healthy, each passes. Planted:
// Ctx.Read without verifyRead passed all three under corrupt-read:0 (red),
// as the adversary's stand-in driver found.
func TestCorruptReadFailsLitmusAndLifetime(t *testing.T) {
	for _, tc := range []struct {
		id    string
		ranks int
	}{
		{"host.memfd.litmus.sb_u32_seqcst_sys", 2},
		{"host.memfd.litmus.iriw_u32_seqcst_sys.r3", 3},
		{"host.memfd.lifetime.owner_frees", 2},
	} {
		c := hostCaseOf(t, tc.id, tc.ranks)
		for _, rules := range [][]string{nil, {"corrupt-read:0"}} {
			set := wire.DefaultSettings
			set.Inject = rules
			r := harness.NewRunner(backends.HostName, set, 1)
			res := r.Run(c)
			r.Close()
			want := report.Pass
			if rules != nil {
				want = report.Fail
			}
			if res.Outcome != want || (rules != nil && !strings.HasPrefix(res.Detail, "read-back integrity: ")) {
				t.Errorf("%s under %v: %s (%s), want %s", tc.id, rules, res.Outcome, res.Detail, want)
			}
		}
	}
}
