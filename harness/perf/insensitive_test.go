package perf

import (
	"os"
	"strings"
	"testing"
)

// The committed H200 perf.txt's insensitive lines are exactly the families
// docs/GATING.md ("Metrics gated loosely") lists with their reasons: both-
// direction copies, one-launch round trips and spread atomics. A family
// whose floor is narrowed, or one widened, changes this set and the doc.
func TestInsensitiveFamilies(t *testing.T) {
	const path = "../../expectations/nvidia-sm_90-580-x1/perf.txt"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(path, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{CopyBoth.Name: true, RoundTripLaunch.Name: true, AtomicSpread.Name: true}
	seen := map[string]bool{}
	for _, l := range f.Lines {
		ins := l.Insensitive()
		if ins != want[l.Family] {
			t.Errorf("%s %s: family %q, tolerance %.0f%%: insensitive=%v, docs say %v", l.ID, l.Metric, l.Family, l.Tol*100, ins, want[l.Family])
		}
		if ins {
			seen[l.Family] = true
			if !strings.Contains(l.ID, "bidir") && !strings.Contains(l.ID, "pingpong_latency_local") && !strings.Contains(l.ID, "atomic_spread") {
				t.Errorf("%s: insensitive but not a case docs/GATING.md lists", l.ID)
			}
		}
	}
	for fam := range want {
		if !seen[fam] {
			t.Errorf("no insensitive line of family %q", fam)
		}
	}
}
