package harness

import (
	"errors"
	"testing"
	"time"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// Issue 52: on a GPU backend a case that plans a respawn and takes a
// standby (a canary's `.after`) starts the next standby before it waits
// for the one it takes, and then neither settles its baseline on it nor
// compares free memory (prestart says a standby started beside it). A
// case that plans none starts nothing. Counts: the standbys started while
// the taken one's start still runs (its open blocks until released).
// Planted: newOrStandby taking with take (wait first, start in prestart
// after), prestart ignoring the early start, and a baseline that settles
// on it anyway (settles = !NoLeak), each fail it.
func TestAfterCaseStartsTheNextStandbyAtOnce(t *testing.T) {
	for _, tc := range []struct {
		c    *Case
		want int
	}{
		{&Case{Case: report.Case{Ranks: 2}, ID: "cuda.vmm.canary.abort.after", Canary: true, Expected: report.Pass}, 2},
		{&Case{Case: report.Case{Ranks: 2}, ID: "cuda.vmm.lifetime.owner_frees", Expected: report.Pass}, 1},
	} {
		p := &pool{backend: "cuda", settings: &wire.DefaultSettings, log: &eventLog{}, book: &faultBook{}, worlds: map[int]*World{}, startFloor: 30 * time.Second}
		release := make(chan struct{})
		p.spare.start(2, func() (*World, error) { <-release; return nil, errors.New("test: the standby taken") })
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.newOrStandby(2, time.Now().Add(30*time.Second), tc.c)
		}()
		// The taken standby's start runs until released: what started
		// by then started before the wait. Both ends are counts; the
		// bound only turns a start that never comes into a failure.
		end := time.Now().Add(10 * time.Second)
		for started, _ := p.spare.counts(); started < tc.want && time.Now().Before(end); started, _ = p.spare.counts() {
			time.Sleep(time.Millisecond)
		}
		started, _ := p.spare.counts()
		close(release)
		<-done
		if started != tc.want {
			t.Errorf("%s: %d standbys started before the taken one's start ended, want %d", tc.c.ID, started, tc.want)
		}
		early := tc.want == 2
		if got := p.startedEarly(tc.c); got != early {
			t.Errorf("%s: startedEarly %v, want %v", tc.c.ID, got, early)
		}
		if got := p.settles(tc.c); got == early {
			t.Errorf("%s: its baseline settles %v, want %v (an early start is its own, its free memory not compared)", tc.c.ID, got, !early)
		}
		if early && !p.prestart(tc.c) {
			t.Errorf("%s: prestart does not say a standby started beside it: its leak check would compare free memory", tc.c.ID)
		}
		if p.startedEarly(tc.c) {
			t.Errorf("%s: still startedEarly after its prestart", tc.c.ID)
		}
		p.spare.close()
	}
}
