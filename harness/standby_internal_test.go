package harness

import (
	"strings"
	"testing"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// On a GPU backend no standby is replenished beside the case that took
// one (that case is leak-checked); on the host it is (the leak check
// counts the case's own processes). Planted: replenishes always true
// fails it.
func TestNoGPUReplenish(t *testing.T) {
	for b, want := range map[string]bool{"cuda": false, "hip": false, "hsa": false, backends.HostName: true} {
		p := &pool{backend: b, settings: &wire.DefaultSettings}
		if got := p.startStandby(2, false); got != want {
			t.Errorf("%s: a replenish beside a taker started %v, want %v", b, got, want)
		}
		p.spare.close()
	}
}

// A leak check beside a standby's start keeps the buffer and fd
// comparison and leaves the device's free memory out. Planted: leaks
// ignoring free (always comparing it) fails the first; dropping the
// buffer rule fails the second.
func TestLeaksBesideAStandby(t *testing.T) {
	before := []wire.MemInfo{{Bufs: 1, Fds: 5, Free: 80 << 30}}
	ctxs := []wire.MemInfo{{Bufs: 1, Fds: 5, Free: 79 << 30}} // a standby's contexts
	if got := leaks(before, ctxs, true); !strings.Contains(got, "free memory dropped") {
		t.Errorf("free compared: %q, want the drop", got)
	}
	if got := leaks(before, ctxs, false); got != "" {
		t.Errorf("beside a standby: %q, want no leak", got)
	}
	held := []wire.MemInfo{{Bufs: 2, Fds: 5, Free: 79 << 30}}
	if got := leaks(before, held, false); !strings.Contains(got, "holds 2 buffers, had 1") {
		t.Errorf("beside a standby, a buffer kept: %q, want it named", got)
	}
}

// settle returns only once a standby start in flight has ended, so a GPU
// leak baseline taken after it never sees the start's memory go.
// Planted: settle returning at once fails it (the start still runs).
func TestSettleWaitsForTheStart(t *testing.T) {
	var sp spare
	release := make(chan struct{})
	ended := false
	sp.start(2, func() (*World, error) {
		<-release
		ended = true
		return nil, nil
	})
	go close(release)
	sp.settle()
	sp.mu.Lock()
	s := sp.s
	sp.mu.Unlock()
	select {
	case <-s.done:
	default:
		t.Fatal("settle returned while the start ran")
	}
	if !ended {
		t.Fatal("settle returned before the start ended")
	}
}

// On the host (a leak check that counts the case's own processes) no
// leak baseline waits for a standby's start; on a GPU backend a plain
// case's does. Planted: settles without the backend rule (f2a5b55: every
// host .after case waited for the replenished standby's start, and a
// suite stopped during that wait read as a rank that did not answer)
// fails the host row.
func TestNoSettleOnTheHost(t *testing.T) {
	plain := &Case{ID: "x.plain", Case: report.Case{Ranks: 2}}
	for b, want := range map[string]bool{backends.HostName: false, "cuda": true, "hip": true, "hsa": true} {
		p := &pool{backend: b, settings: &wire.DefaultSettings}
		if got := p.settles(plain); got != want {
			t.Errorf("%s: a plain case's baseline settles %v, want %v", b, got, want)
		}
	}
}

// A leak baseline's deadline starts when the baseline does: a case whose
// Ctx deadline was spent before it (a wait for a standby's start, a
// stopped suite) still takes its baseline from that live world, not a
// respawned one. Planted: the deadline set once when the Ctx is made
// (f2a5b55: the respawn's fresh world inherited it too) fails it, and so
// does a fresh deadline for the respawn's attempt alone.
func TestBaselineDeadlineStartsWithIt(t *testing.T) {
	r := NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	w, err := r.pool.world(2, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := report.Result{}
	cr := &caseRun{pool: r.pool, c: &Case{ID: "x.after", Case: report.Case{Ranks: 2}}, w: w, res: &res,
		ctx: &Ctx{W: w, Deadline: time.Now().Add(-time.Second)}, aux: 5 * time.Second}
	if !cr.baselineOrRespawn() {
		t.Fatalf("a live world's baseline after a spent deadline: %s %s", res.Outcome, res.Detail)
	}
	if len(cr.before) != 2 {
		t.Fatalf("baseline of %d ranks, want 2", len(cr.before))
	}
	if cr.w != w {
		t.Errorf("the baseline respawned a live world: its first attempt ran on the spent deadline")
	}
}
