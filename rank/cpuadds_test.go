package rank

import "testing"

// The racy CPU control loses an update every time, whatever the
// scheduler does: one iteration per thread, the case where two threads
// running one after the other lose nothing unless every load comes before
// any store. The atomic adds never lose one. Count-based: 200 rounds each.
func TestRacyCPUAddsAlwaysLose(t *testing.T) {
	for round := 0; round < 200; round++ {
		var w uint64
		startCPUAdds(&w, 2, 1, 1, true)()
		if w >= 2 {
			t.Fatalf("round %d: two racy adds of one iteration each gave %d: no update lost", round, w)
		}
		w = 0
		startCPUAdds(&w, 4, 1000, 1, false)()
		if w != 4000 {
			t.Fatalf("round %d: 4 x 1000 atomic adds gave %d", round, w)
		}
	}
}
