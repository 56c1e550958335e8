package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// fakeWorld is a fake clock and a fake world's progress for patience: each
// test moves the clock and says what the ranks did meanwhile.
type fakeWorld struct {
	t0    time.Time
	now   time.Time
	seq   uint64
	cpu   time.Duration
	stall time.Duration
	// two ranks: rank 0 does what advance says; rank 1, when blocked names
	// a call, sits in it doing nothing, else idles between requests
	blocked string
	// starved: a rank's thread is runnable at every look (no CPU given)
	starved bool
}

func newFakeWorld() *fakeWorld {
	t0 := time.Unix(1_000_000, 0)
	return &fakeWorld{t0: t0, now: t0}
}

func (f *fakeWorld) patience(budget, hard time.Duration) (*patience, time.Time) {
	p := newPatience(func() time.Time { return f.now },
		func() progress {
			return progress{at: f.now, seq: f.seq, cpu: f.cpu, seqs: []uint64{f.seq, 7}, cpus: []time.Duration{f.cpu, time.Second}, runnable: f.starved}
		},
		func(r int) string {
			if r == 1 {
				return f.blocked
			}
			return ""
		},
		func() time.Duration { return f.stall }, f.now.Add(hard), max(progressWindow, budget/2))
	return p, f.now.Add(budget)
}

// advance moves the fake clock by d in steps of 100 ms, the world doing
// seqPerStep traced calls and using cpuShare of a CPU each step, with the
// wait loop's tick between steps.
func (f *fakeWorld) advance(p *patience, d time.Duration, seqPerStep uint64, cpuShare float64) {
	for step := 100 * time.Millisecond; d > 0; d -= step {
		f.now = f.now.Add(step)
		f.seq += seqPerStep
		f.cpu += time.Duration(cpuShare * float64(step))
		p.tick()
	}
}

// waitOut is what a wait with deadline does with p: it runs the fake
// clock to the deadline as shifted, asks p for more, and repeats; it
// returns when p gives up, at the fake time it did.
func (f *fakeWorld) waitOut(p *patience, deadline time.Time, seqPerStep uint64, cpuShare float64) time.Duration {
	for i := 0; i < 1000; i++ {
		if left := deadline.Add(p.shift()).Sub(f.now); left > 0 {
			f.advance(p, left, seqPerStep, cpuShare)
		}
		if _, ok := p.extend(deadline); !ok {
			return f.now.Sub(f.t0)
		}
	}
	panic("patience never gave up")
}

// A case slow but moving (a spinning thread: CPU, no traced call) runs
// past its budget up to its own limit; one that stopped (a rank blocked
// in a wedged call: no call traced, no CPU) is cut at its budget. Fails
// with the budget deciding alone (extend never granting).
func TestPatienceMovingGetsItsOwnLimitStoppedIsCutAtBudget(t *testing.T) {
	f := newFakeWorld()
	p, dl := f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 0, 0.07); got != 30*time.Second {
		t.Errorf("a spinning world (7%% of a CPU, load 28 on 2 cores) gave up at %s, want its own 30s", got)
	}
	if !strings.Contains(p.why, "own limit passed") {
		t.Errorf("why: %q", p.why)
	}
	f = newFakeWorld()
	p, dl = f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 3, 0); got != 30*time.Second {
		t.Errorf("a world tracing calls gave up at %s, want 30s", got)
	}
	f = newFakeWorld()
	p, dl = f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 0, 0.005); got != 2*time.Second {
		t.Errorf("a stopped world (0.5%% of a CPU: runtime timers) gave up at %s, want its 2s budget", got)
	}
	if !strings.Contains(p.why, "no progress") {
		t.Errorf("why: %q", p.why)
	}
	if p.note() != "" {
		t.Errorf("a world never extended has a note: %q", p.note())
	}
}

// A world that moved for a while and then stopped is cut one step after
// it stopped, not at its own limit.
func TestPatienceStopsExtendingOnceTheWorldStops(t *testing.T) {
	f := newFakeWorld()
	p, dl := f.patience(2*time.Second, 30*time.Second)
	f.advance(p, 2*time.Second, 1, 0.5)
	if _, ok := p.extend(dl); !ok {
		t.Fatal("a moving world was refused at its budget")
	}
	got := f.waitOut(p, dl, 0, 0)
	if got > 4*time.Second {
		t.Errorf("a world that stopped at 2s was waited until %s (want one step of 1s, two at most)", got)
	}
}

// The suite's own stalls move the deadline by their length, and only
// them: a world that never moves, whose suite was stopped for 5 s, is cut
// 5 s after its budget. Fails without the stall shift.
func TestPatienceStallsMoveTheDeadline(t *testing.T) {
	f := newFakeWorld()
	p, dl := f.patience(2*time.Second, 30*time.Second)
	f.advance(p, time.Second, 0, 0)
	f.stall += 5 * time.Second // SIGSTOP of the suite for 5 s
	f.now = f.now.Add(5 * time.Second)
	if got := f.waitOut(p, dl, 0, 0); got != 7*time.Second {
		t.Errorf("a stalled suite cut its case at %s, want 7s (2s budget + 5s stall)", got)
	}
	if n := p.note(); !strings.Contains(n, "5.0 s for the suite's own stalls") {
		t.Errorf("note: %q", n)
	}
}

// The stall clock counts a gap between observations longer than its tick
// by more than the slack, and only the excess over the tick.
func TestStallClockCountsGaps(t *testing.T) {
	var now time.Duration
	s := &stallClock{now: func() time.Duration { return now }}
	for i := 0; i < 10; i++ {
		now += stallTick
		s.observe()
	}
	now += 200 * time.Millisecond // a busy machine's late wakeup: under the slack
	s.observe()
	if s.total != 0 {
		t.Fatalf("a 200 ms gap counted as a stall: %s", s.total)
	}
	now += 5 * time.Second
	if got := s.observe(); got != 5*time.Second-stallTick || s.n != 1 {
		t.Fatalf("a 5 s stop: total %s over %d stalls, want %s over 1", got, s.n, 5*time.Second-stallTick)
	}
}

func TestStatCPU(t *testing.T) {
	line := "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0 100 0 0"
	if got := statCPU(line); got != 281*clockTick {
		t.Fatalf("statCPU: %s, want %s", got, 281*clockTick)
	}
	if got := statCPU("garbage"); got != 0 {
		t.Fatalf("statCPU(garbage): %s", got)
	}
}

// A wait whose deadline passes while the suite is stopped, the rank's
// reply arriving meanwhile, reads the reply: the stop is a stall of the
// suite's clock, which moves the deadline. The fake clock jumps 5 s (and
// the rank replies) as soon as real time passes the deadline. Fails with
// the stall check removed from recv.
func TestRecvStalledSuiteReadsTheReply(t *testing.T) {
	a, b, err := wire.Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	defer unix.Close(b)
	deadline := time.Now().Add(30 * time.Millisecond)
	saved := stalls
	defer func() { stalls = saved }()
	var jumped bool
	var last time.Duration
	fake := &stallClock{}
	fake.now = func() time.Duration {
		d := time.Since(monoStart)
		if !jumped && time.Now().After(deadline) {
			jumped = true
			if err := wire.Send(b, wire.TReply, 1, wire.Reply{OK: true}); err != nil {
				t.Error(err)
			}
		}
		if jumped {
			d += 5 * time.Second
		}
		last = max(last, d)
		return last
	}
	fake.last = fake.now()
	stalls = fake
	p := &Proc{Rank: 1, sock: a}
	m, err := p.recv(deadline, "read")
	if err != nil {
		t.Fatalf("a suite stopped past its deadline while the rank answered: %v", err)
	}
	if m.Seq != 1 {
		t.Fatalf("seq %d", m.Seq)
	}
}

// A stale reply is dropped only when its request timed out; a reply to a
// request that did not time out is the rank's protocol error (adversary
// B4). Fails with every stale reply dropped.
func TestLateReplyOnlyForATimedOutRequest(t *testing.T) {
	a, b, err := wire.Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	defer unix.Close(b)
	p := &Proc{Rank: 0, sock: a}
	send := func(seq uint32) {
		if err := wire.Send(b, wire.TReply, seq, wire.Reply{OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	send(1)
	send(2)
	_, err = p.await(2, "read", time.Now().Add(5*time.Second))
	var pe *ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "did not time out") {
		t.Fatalf("a reply to request 1, which never timed out: %v, want a protocol error", err)
	}
	// Drain reply 2, then make request 3 time out and its reply come late.
	if _, err := wire.Recv(a, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.await(3, "read", time.Now().Add(10*time.Millisecond)); err == nil {
		t.Fatal("no reply: want a timeout")
	}
	send(3)
	send(4)
	m, err := p.await(4, "read", time.Now().Add(5*time.Second))
	if err != nil || m.Seq != 4 {
		t.Fatalf("the late reply to timed-out request 3 was not dropped: %v (seq %d)", err, m.Seq)
	}
}

// Two cases that time out stuck in the same call make the driver wedged
// there: later cases are judged not-run from the first, at once. An
// expected timeout (a control spinning in synchronize) never counts, nor
// does a timeout with no call named. Fails without the wedge rule.
func TestWedgedCallJudgesLaterCasesNotRun(t *testing.T) {
	r := NewRunner(backends.HostName, wire.Settings{}, 1)
	timeout := func(id string, expected report.Outcome, call string) {
		c := &Case{ID: id, Expected: expected}
		res := report.Result{Outcome: report.Timeout, Detail: "rank 1 did not answer launch"}
		r.streaks.noteWedge(c, res, &TimeoutError{Rank: 1, What: "launch", Call: call})
	}
	timeout("a.control", report.Timeout, "synchronize")
	timeout("b.spin", report.Pass, "")
	timeout("c.first", report.Pass, "synchronize")
	var res report.Result
	if r.streaks.judgedFromWedge(&Case{ID: "d"}, &res) {
		t.Fatal("one wedged case judged the next: want two")
	}
	timeout("e.second", report.Pass, "mmap")
	if r.streaks.judgedFromWedge(&Case{ID: "f"}, &res) {
		t.Fatal("two cases stuck in different calls judged the next")
	}
	timeout("g.third", report.Pass, "synchronize")
	if !r.streaks.judgedFromWedge(&Case{ID: "h"}, &res) {
		t.Fatal("two cases stuck in synchronize: the next still runs")
	}
	if res.Outcome != report.NotRunOutcome || res.JudgedFrom == nil || res.JudgedFrom.Case != "c.first" ||
		!strings.Contains(res.Detail, "wedged in synchronize") || !r.JudgedFromSetup("h") {
		t.Fatalf("judged: %+v", res)
	}
	if w := r.WedgedIn(); !strings.HasPrefix(w, "synchronize") {
		t.Fatalf("WedgedIn: %q", w)
	}
}

// The budget scales with the run's own pace: a run whose passing cases
// take three times what the baseline recorded gives the next case three
// times the budget, never less than the recorded one, never past the
// case's own limit. Fails with a fixed budget.
func TestBudgetScalesWithTheRunsPace(t *testing.T) {
	r := NewRunner(backends.HostName, wire.Settings{}, 1)
	r.Recorded = map[string]float64{"a": 0.5, "b": 0.3, "slow": 1.0}
	c := &Case{ID: "slow", Timeout: 60 * time.Second}
	if got := r.pace.budgeted(r.Recorded, c).Limit(); got != 10*time.Second {
		t.Fatalf("budget before any pace: %s, want 10s", got)
	}
	r.pace.note(r.Recorded, &Case{ID: "a"}, report.Result{Outcome: report.Pass, Duration: 1.5})
	r.pace.note(r.Recorded, &Case{ID: "b"}, report.Result{Outcome: report.Pass, Duration: 0.9})
	r.pace.note(r.Recorded, &Case{ID: "b"}, report.Result{Outcome: report.Timeout, Duration: 50})
	if got := r.pace.budgeted(r.Recorded, c).Limit(); got != 30*time.Second {
		t.Fatalf("budget at 3x pace: %s, want 30s", got)
	}
	if got := r.pace.budgeted(r.Recorded, &Case{ID: "slow", Timeout: 20 * time.Second}).Limit(); got != 20*time.Second {
		t.Fatalf("budget past the case's own limit: %s", got)
	}
	fast := NewRunner(backends.HostName, wire.Settings{}, 1)
	fast.Recorded = r.Recorded
	fast.pace.note(fast.Recorded, &Case{ID: "a"}, report.Result{Outcome: report.Pass, Duration: 0.1})
	if got := fast.pace.budgeted(fast.Recorded, c).Limit(); got != 10*time.Second {
		t.Fatalf("a faster run shrank the budget: %s", got)
	}
}

// A rank blocked in a traced call (a wedged mmap: no call traced, no CPU)
// stops the world however hard its peer spins waiting for it: the case is
// cut at its budget, naming the rank and the call. An idle rank between
// requests (no call in flight) does not. Fails without the per-rank check.
func TestPatienceABlockedRankIsStuckWhileItsPeerSpins(t *testing.T) {
	f := newFakeWorld()
	f.blocked = "mmap"
	p, dl := f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 0, 0.5); got != 2*time.Second {
		t.Errorf("a peer spinning beside a rank blocked in mmap: gave up at %s, want the 2s budget", got)
	}
	if !strings.Contains(p.why, "rank 1 is blocked in mmap") {
		t.Errorf("why: %q", p.why)
	}
	f = newFakeWorld()
	p, dl = f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 0, 0.5); got != 30*time.Second {
		t.Errorf("a spinning rank beside an idle one gave up at %s, want its own 30s", got)
	}
}

// A world that neither traces nor uses CPU but has a runnable thread is
// starved on a loaded machine (a spinning role thread pinned to a CPU
// that 15 other tasks share got 0 ms in 1.2 s, at load 30), not stopped:
// it runs on to its own limit. Fails without the runnable check.
func TestPatienceAStarvedWorldIsMoving(t *testing.T) {
	f := newFakeWorld()
	f.starved = true
	p, dl := f.patience(2*time.Second, 30*time.Second)
	if got := f.waitOut(p, dl, 0, 0); got != 30*time.Second {
		t.Errorf("a starved world (runnable, no CPU) gave up at %s, want its own 30s", got)
	}
}
