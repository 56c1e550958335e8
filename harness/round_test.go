package harness_test

import (
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// TestTournament: every unordered pair meets exactly once, no rank plays
// twice in a round, and the round count is n−1 (even n) or n (odd n).
func TestTournament(t *testing.T) {
	for n := 2; n <= 9; n++ {
		rounds := harness.Tournament(n)
		want := n - 1
		if n%2 == 1 {
			want = n
		}
		if len(rounds) != want {
			t.Errorf("n=%d: %d rounds, want %d", n, len(rounds), want)
		}
		met := map[[2]int]int{}
		for i, rd := range rounds {
			busy := map[int]bool{}
			for _, p := range rd {
				if p[0] >= p[1] || p[1] >= n || p[0] < 0 {
					t.Errorf("n=%d round %d: bad pair %v", n, i, p)
				}
				if busy[p[0]] || busy[p[1]] {
					t.Errorf("n=%d round %d: a rank plays twice: %v", n, i, rd)
				}
				busy[p[0]], busy[p[1]] = true, true
				met[p]++
			}
			if len(rd) != n/2 {
				t.Errorf("n=%d round %d: %d pairs, want %d", n, i, len(rd), n/2)
			}
		}
		if len(met) != n*(n-1)/2 {
			t.Errorf("n=%d: %d distinct pairs met, want %d", n, len(met), n*(n-1)/2)
		}
		for p, k := range met {
			if k != 1 {
				t.Errorf("n=%d: pair %v met %d times", n, p, k)
			}
		}
	}
}

// TestRoundShares runs a round's members as the suite does, one case each
// on one runner: the body runs once, each member gets its own outcome,
// metric and note; a member run again (soak) runs the body again; a body
// that kills its world blames the member that ran it and the rest run
// alone.
func TestRoundShares(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	bodies, alone := 0, 0
	crash := false
	rd := &harness.Round{Name: "round 1 of 1", Members: []string{"a", "b", "c"}}
	rd.Body = func(c *harness.Ctx, parts []*harness.Part) error {
		bodies++
		if crash {
			return c.Canary(1, "panic")
		}
		for i, p := range parts {
			p.Metric(report.MetricKind{Name: "rate", Unit: "Mops/s", Better: report.Higher}, "test", float64(10*(i+1)))
			p.Note("%s ran with %d others", p.ID, len(parts)-1)
		}
		parts[1].Err = harness.Failf("lost 3 updates")
		return nil
	}
	rd.Alone = func(c *harness.Ctx, id string) error {
		alone++
		return nil
	}
	mk := func(id string) *harness.Case { return roundCase(rd, id) }
	got := map[string]report.Result{}
	for _, id := range rd.Members {
		got[id] = r.Run(mk(id))
	}
	if bodies != 1 {
		t.Fatalf("the body ran %d times for one pass over the members, want 1", bodies)
	}
	if got["a"].Outcome != report.Pass || got["b"].Outcome != report.Fail || got["c"].Outcome != report.Pass {
		t.Fatalf("outcomes a=%s b=%s c=%s, want pass fail pass", got["a"].Outcome, got["b"].Outcome, got["c"].Outcome)
	}
	if !strings.Contains(got["b"].Detail, "lost 3 updates") || !strings.Contains(got["b"].Detail, "b ran with 2 others") {
		t.Errorf("b's detail lacks its own share: %q", got["b"].Detail)
	}
	if m := got["c"].Metrics["rate"]; m.Median != 30 || m.N != 1 {
		t.Errorf("c's metric is not its own share: %+v", m)
	}
	r.Run(mk("b"))
	if bodies != 2 {
		t.Errorf("a member run again took a stale share (bodies %d, want 2)", bodies)
	}
	crash = true
	crashingRound(t, r, rd, &alone)
	if err := (&harness.Round{Name: "r", Members: []string{"p"}}).Take(&harness.Ctx{}, "q"); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Errorf("a non-member took a share: %v", err)
	}
}

// roundCase is member id's case, taking its share of rd.
func roundCase(rd *harness.Round, id string) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 5 * time.Second,
		Grace: 200 * time.Millisecond, Run: func(c *harness.Ctx) error { return rd.Take(c, id) }}
}

// crashingRound runs a fresh round over rd's (now crashing) body: the member
// that ran it crashes, naming the round; the other runs alone on a fresh
// world and passes.
func crashingRound(t *testing.T, r *harness.Runner, rd *harness.Round, alone *int) {
	t.Helper()
	rd2 := &harness.Round{Name: "round 2 of 2", Members: []string{"x", "y"}, Body: rd.Body, Alone: rd.Alone}
	x := r.Run(roundCase(rd2, "x"))
	if x.Outcome != report.Crash || !strings.Contains(x.Detail, "round 2 of 2") {
		t.Fatalf("x: %s %q, want a crash naming the round", x.Outcome, x.Detail)
	}
	y := r.Run(roundCase(rd2, "y"))
	if y.Outcome != report.Pass || *alone != 1 || !strings.Contains(y.Detail, "run alone") {
		t.Fatalf("y: %s %q (alone %d), want a pass run alone", y.Outcome, y.Detail, *alone)
	}
}
