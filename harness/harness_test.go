package harness_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/rank"
	"p2patomics/rank/backend"
	"p2patomics/trace"
	"p2patomics/wire"
)

// The test binary doubles as the rank binary, exactly as the suite does.
func TestMain(m *testing.M) {
	if rank.IsRank() {
		os.Exit(rank.Main())
	}
	os.Exit(m.Run())
}

func TestMatrixMatchesBackends(t *testing.T) {
	for _, name := range backend.Names() {
		if _, ok := harness.Matrix[name]; !ok {
			t.Errorf("backend %s is linked into ranks but not in harness.Backends", name)
		}
	}
	for name, kinds := range harness.Matrix {
		be, err := backend.New(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := be.Kinds(); strings.Join(got, ",") != strings.Join(kinds, ",") {
			t.Errorf("backend %s offers %v, the matrix says %v", name, got, kinds)
		}
	}
}

func deadline() time.Time { return time.Now().Add(30 * time.Second) }

// TestParseFault: the rank's own fault line (written by the formatter the
// rank uses) wins over the sticky-error name in the same stderr; ROCr's line
// and a bare CUDA error name are read too.
func TestParseFault(t *testing.T) {
	own := report.Fault{Vendor: "nvidia", Kind: "gpu", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Address: "0x7f00", Reason: "cuStreamSynchronize: an \"illegal\" memory access"}
	cases := []struct {
		stderr string
		want   report.Fault
	}{
		{"error: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)\n" + own.Line() + "\nSIGABRT: abort", own},
		{"junk\nMemory access fault by GPU node-6 (Agent handle: 0x55d0c8e3a2b0) on address 0x7f3a00000000. Reason: Page not present or supervisor privilege.\nAborted",
			report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: "6", Address: "0x7f3a00000000", Reason: "Page not present or supervisor privilege"}},
		{"error: cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED (719)",
			report.Fault{Vendor: "nvidia", Kind: "gpu", Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED"}},
	}
	for _, c := range cases {
		got := harness.ParseFault(c.stderr)
		if got == nil || *got != c.want {
			t.Errorf("ParseFault(%q) = %+v, want %+v", c.stderr, got, c.want)
		}
	}
	if f := harness.ParseFault("SIGSEGV: segmentation violation"); f != nil {
		t.Errorf("a CPU fault parsed as a GPU fault: %+v", f)
	}
}

// A world of real rank processes: spawn, handshake, and an idle death that
// must be seen as such.
func TestWorldIdleDeath(t *testing.T) {
	w, err := harness.NewWorld(backends.HostName, 2, wire.DefaultSettings, deadline())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.Alive() || len(w.Procs) != 2 {
		t.Fatalf("world not alive: %+v", w)
	}
	w.Procs[1].Signal(syscall.SIGKILL)
	if !w.Procs[1].WaitExit(5 * time.Second) {
		t.Fatal("rank survived SIGKILL")
	}
	if w.Alive() {
		t.Fatal("world still alive after a rank died")
	}
	d := harness.Classify(w.Procs[1])
	if d.Signal != "SIGKILL" {
		t.Fatalf("classified %+v, want SIGKILL", d)
	}
}

func TestRunnerOutcomes(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	mk := func(id string, run func(*harness.Ctx) error) *harness.Case {
		return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 5 * time.Second, Grace: 200 * time.Millisecond, Run: run}
	}
	ok := r.Run(mk("ok", func(c *harness.Ctx) error { _, err := c.Shared(0, 4096, true); return err }))
	if ok.Outcome != report.Pass {
		t.Fatalf("ok: %+v", ok)
	}
	pid0 := 0
	first := r.Run(mk("pid", func(c *harness.Ctx) error { pid0 = c.W.Procs[0].Pid; return nil }))
	if first.Outcome != report.Pass {
		t.Fatal(first.Detail)
	}
	fail := r.Run(mk("fail", func(*harness.Ctx) error { return harness.Failf("expected 1, got 2") }))
	if fail.Outcome != report.Fail || fail.Detail != "expected 1, got 2" {
		t.Fatalf("fail: %+v", fail)
	}
	skip := r.Run(mk("skip", func(*harness.Ctx) error { return harness.Skipf("no P2P") }))
	if skip.Outcome != report.Skip {
		t.Fatalf("skip: %+v", skip)
	}
	crash := r.Run(mk("crash", func(c *harness.Ctx) error { return c.Canary(1, "panic") }))
	if crash.Outcome != report.Crash || !strings.Contains(crash.Detail, "Go panic") || crash.Ranks[1].GoDump != true {
		t.Fatalf("crash: %+v", crash)
	}
	after := r.Run(mk("after", func(c *harness.Ctx) error {
		if c.W.Procs[0].Pid == pid0 {
			return errors.New("world was not respawned after a crash")
		}
		return nil
	}))
	if after.Outcome != report.Pass {
		t.Fatalf("after: %+v", after)
	}
	checkIdleDeath(t, r, mk)
	hang := r.Run(mk("hang", func(c *harness.Ctx) error { return c.Canary(1, "hang") }))
	if hang.Outcome != report.Timeout || !strings.Contains(hang.Ranks[1].StderrTail, "goroutine") {
		t.Fatalf("hang: %+v", hang)
	}
	// A leak the case makes is caught: allocate, then hide the buffer from
	// teardown by freeing nothing (an Alloc the Ctx does not know about).
	leak := r.Run(mk("leak", func(c *harness.Ctx) error { return c.Canary(0, "leak_buffer") }))
	if leak.Outcome != report.Fail || !strings.Contains(leak.Detail, "leak") {
		t.Fatalf("leak: %+v", leak)
	}
}

// checkIdleDeath: a rank that dies between cases is a world event, not the
// next case's fault: the next case runs on a fresh world and passes.
func checkIdleDeath(t *testing.T, r *harness.Runner, mk func(string, func(*harness.Ctx) error) *harness.Case) {
	t.Helper()
	var idle *harness.Proc
	r.Run(mk("note", func(c *harness.Ctx) error { idle = c.W.Procs[1]; return nil }))
	syscall.Kill(idle.Pid, syscall.SIGKILL)
	// Wait until the parent has seen the death (not a fixed sleep: at load
	// 15 a 100 ms sleep let the next case's meminfo find it first, which is
	// the between-cases path, not the idle one this checks).
	waitDead(t, idle)
	next := r.Run(mk("next", func(c *harness.Ctx) error { _, err := c.Shared(0, 4096, true); return err }))
	if next.Outcome != report.Pass {
		t.Fatalf("case after an idle death: %+v", next)
	}
	evs := r.WorldEvents()
	for _, e := range evs {
		if e.Kind == report.EventIdleDeath && e.Signal == "SIGKILL" && e.Rank != nil && *e.Rank == 1 && e.Pid == idle.Pid &&
			strings.Contains(e.Detail, "idle rank died") {
			return
		}
	}
	t.Fatalf("idle death not recorded as a typed world event of rank 1 (pid %d), SIGKILL: %+v", idle.Pid, evs)
}

func BenchmarkWorld2(b *testing.B) { benchWorld(b, 2) }
func BenchmarkWorld8(b *testing.B) { benchWorld(b, 8) }

func benchWorld(b *testing.B, n int) {
	for i := 0; i < b.N; i++ {
		w, err := harness.NewWorld(backends.HostName, n, wire.DefaultSettings, deadline())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w.Close()
		b.StartTimer()
	}
}

// BenchmarkFdRoundTrip: one allocation exported by rank 0, its fd brokered
// to rank 1 and mapped there, then both freed.
func BenchmarkFdRoundTrip(b *testing.B) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	c := &harness.Case{ID: "bench", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, NoLeak: true, Timeout: time.Minute}
	var err error
	c.Run = func(ctx *harness.Ctx) error {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err = ctx.Shared(0, 1<<20, true); err != nil {
				return err
			}
		}
		b.StopTimer()
		return nil
	}
	if res := r.Run(c); res.Outcome != report.Pass {
		b.Fatal(res.Detail)
	}
}

// BenchmarkSpecRoundTrip: a whole warm-world case: share, contended add
// from both ranks, read back, teardown, leak check. Ranks trace every call.
func BenchmarkSpecRoundTrip(b *testing.B) { benchSpec(b, wire.DefaultSettings) }

// BenchmarkSpecRoundTripTraceOff is the same with the ranks' tracing off:
// the difference is what the always-on trace costs.
func BenchmarkSpecRoundTripTraceOff(b *testing.B) {
	set := wire.DefaultSettings
	set.NoTrace = true
	benchSpec(b, set)
}

func benchSpec(b *testing.B, set wire.Settings) {
	r := harness.NewRunner(backends.HostName, set, 1)
	defer r.Close()
	c := &harness.Case{ID: "bench", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: time.Minute,
		Run: func(ctx *harness.Ctx) error {
			m, err := ctx.Shared(0, 4096, true)
			if err != nil {
				return err
			}
			var ls []harness.Launch
			for rk := 0; rk < 2; rk++ {
				ls = append(ls, harness.Launch{Rank: rk, Kernel: "add_u64_relaxed_sys", Grid: 1, Block: 2, Args: map[string]harness.Arg{
					"target": harness.P(m.Bufs[rk], 0), "operand": harness.V(1), "iters": harness.V(100), "block": harness.V(2), "salt": harness.V(uint64(rk))}})
			}
			if _, err := ctx.Run(ls...); err != nil {
				return err
			}
			v, err := ctx.U64(0, m.Bufs[0], 0)
			if err != nil {
				return err
			}
			if v != 400 {
				return harness.Failf("got %d", v)
			}
			return nil
		}}
	r.Run(c) // warm the world
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := r.Run(c); res.Outcome != report.Pass {
			b.Fatal(res.Detail)
		}
	}
}

// Requests that name bytes outside a buffer are answered with an error,
// never a dead rank or a write into a neighbouring mapping. This runs the
// host backend, which checks a launch's extents again, so it stays green
// with the rank's own checks removed; rank's TestRankChecksEveryRange, on a
// backend that checks nothing (as a GPU's), is the one that fails then.
func TestOutOfRangeRequests(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	c := &harness.Case{ID: "bounds", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 10 * time.Second,
		Run: func(ctx *harness.Ctx) error {
			b, err := ctx.Local(0, 4096)
			if err != nil {
				return err
			}
			bad := map[string]func() error{
				"read past the end":  func() error { _, err := ctx.Read(0, b, 1<<64-1, 1); return err },
				"write past the end": func() error { return ctx.Write(0, b, 4090, make([]byte, 16)) },
				"copy offset wraps":  func() error { _, _, err := ctx.Copy(0, b, 1<<64-8, b, 0, 16); return err },
				"sum count wraps":    func() error { _, err := ctx.Sum(0, b, 0, 1<<61, 64); return err },
				"fill past the end": func() error {
					_, err := ctx.Run(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 1, Args: map[string]harness.Arg{
						"dst": harness.P(b, 0), "value": harness.V(7), "n": harness.V(1024), "block": harness.V(1), "nthreads": harness.V(1), "wit": harness.P(b, 16), "nonce": harness.V(1)}})
					return err
				},
				"cpu share with no threads": func() error {
					_, err := ctx.Run(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 1, Args: map[string]harness.Arg{
						"dst": harness.P(b, 0), "value": harness.V(7), "n": harness.V(1), "block": harness.V(1), "nthreads": harness.V(1), "wit": harness.P(b, 16), "nonce": harness.V(1)},
						CPU: &wire.CPUAtomics{Target: harness.P(b, 0), Threads: 0, Iters: 1, Operand: 1}})
					return err
				},
				"cpu word past the end": func() error {
					_, err := ctx.Run(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 1, Args: map[string]harness.Arg{
						"dst": harness.P(b, 0), "value": harness.V(7), "n": harness.V(1), "block": harness.V(1), "nthreads": harness.V(1), "wit": harness.P(b, 16), "nonce": harness.V(1)},
						CPU: &wire.CPUAtomics{Target: harness.P(b, 4092), Threads: 1, Iters: 1, Operand: 1}})
					return err
				},
				"pointer at the end": func() error {
					_, err := ctx.Run(harness.Launch{Rank: 0, Kernel: "fill_u64_plain_dev", Grid: 1, Block: 1, Args: map[string]harness.Arg{
						"dst": harness.P(b, 4096), "value": harness.V(7), "n": harness.V(1), "block": harness.V(1), "nthreads": harness.V(1), "wit": harness.P(b, 16), "nonce": harness.V(1)}})
					return err
				},
			}
			for name, f := range bad {
				err := f()
				var re *harness.RemoteError
				if !errors.As(err, &re) {
					return harness.Failf("%s: want an error reply from a live rank, got %v", name, err)
				}
			}
			return nil
		}}
	if res := r.Run(c); res.Outcome != report.Pass {
		t.Fatalf("%s: %s", res.Outcome, res.Detail)
	}
}

// A case that gives up on a request at its deadline and then fails must not
// leave the late reply behind for the next request to take as its own: the
// slow_reply canary answers after the deadline, so teardown's first request
// (and the next case's) find that reply queued ahead of theirs.
func TestOverrunCaseDoesNotPoisonTheNext(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	// A warm world first, so the short deadline below is the request's,
	// not the spawn's (the machine may be loaded).
	warm := &harness.Case{ID: "warm", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 30 * time.Second,
		Run: func(*harness.Ctx) error { return nil }}
	if res := r.Run(warm); res.Outcome != report.Pass {
		t.Fatalf("warm: %s %s", res.Outcome, res.Detail)
	}
	pids := func(ctx *harness.Ctx) (p []int) {
		for _, pr := range ctx.W.Procs {
			p = append(p, pr.Pid)
		}
		return p
	}
	var slowPids []int
	slow := &harness.Case{ID: "slow", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 300 * time.Millisecond,
		Run: func(ctx *harness.Ctx) error {
			slowPids = pids(ctx)
			if _, err := ctx.Local(0, 4096); err != nil {
				return err
			}
			var te *harness.TimeoutError
			if err := ctx.Canary(0, "slow_reply"); !errors.As(err, &te) {
				return fmt.Errorf("slow_reply answered before the deadline: %v", err)
			}
			// Let the late reply arrive before teardown's first request.
			time.Sleep(400 * time.Millisecond)
			return harness.Failf("gave up")
		}}
	if res := r.Run(slow); res.Outcome != report.Fail {
		t.Fatalf("slow: %s %s", res.Outcome, res.Detail)
	}
	// The same world serves the next case: teardown took its own reply,
	// not the late one, so nothing made the world untrustworthy.
	next := &harness.Case{ID: "next", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 5 * time.Second,
		Run: func(ctx *harness.Ctx) error {
			if got := pids(ctx); !slices.Equal(got, slowPids) {
				return fmt.Errorf("the world was replaced after the slow case (ranks %v, then %v): its teardown took the late reply", slowPids, got)
			}
			b, err := ctx.Local(0, 4096)
			if err != nil {
				return err
			}
			return ctx.PutU64(0, b, 0, 1)
		}}
	if res := r.Run(next); res.Outcome != report.Pass {
		t.Fatalf("next: %s %s", res.Outcome, res.Detail)
	}
}

// A case's evidence grade reaches the result on a pass only: a failing
// mutation-scored case must not read as "strong" anything.
func TestEvidenceOnPassOnly(t *testing.T) {
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	for _, c := range []struct {
		err  error
		want report.Evidence
	}{{nil, report.EvidenceStrong}, {harness.Failf("weak outcome"), ""}} {
		res := r.Run(&harness.Case{ID: "ev", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass, Timeout: 10 * time.Second,
			Run: func(ctx *harness.Ctx) error {
				ctx.Evidence = report.EvidenceStrong
				return c.err
			}})
		if res.Evidence != c.want {
			t.Errorf("outcome %s: evidence %q, want %q", res.Outcome, res.Evidence, c.want)
		}
	}
}

// TestHelloChecksMatrix: a rank whose backend offers other kinds than the
// matrix the suite planned from is a protocol error at hello, naming both.
func TestHelloChecksMatrix(t *testing.T) {
	saved := harness.Matrix[backends.HostName]
	defer func() { harness.Matrix[backends.HostName] = saved }()
	harness.Matrix[backends.HostName] = []string{"memfd", "shm"}
	w, err := harness.NewWorld(backends.HostName, 2, wire.DefaultSettings, deadline())
	if err == nil {
		w.Close()
		t.Fatal("a backend offering other kinds than the matrix was accepted")
	}
	var pe *harness.ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "offers kinds [memfd], the suite's matrix says [memfd shm]") {
		t.Fatalf("want a protocol error naming both lists, got %v", err)
	}
}

// TestHelloSettings: the settings reach the rank through its hello, not its
// environment: NoTrace stops the rank's trace ring from growing, the default
// keeps it recording, and a clock period the rank cannot use fails the hello.
func TestHelloSettings(t *testing.T) {
	grows := func(set wire.Settings) bool {
		w, err := harness.NewWorld(backends.HostName, 2, set, deadline())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ctx := &harness.Ctx{W: w, Kind: "memfd", Deadline: deadline()}
		before, err := trace.SharedSeq(w.Procs[0].Trace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ctx.Local(0, 4096); err != nil {
			t.Fatal(err)
		}
		after, err := trace.SharedSeq(w.Procs[0].Trace)
		if err != nil {
			t.Fatal(err)
		}
		return after > before
	}
	if !grows(wire.DefaultSettings) {
		t.Error("default settings: the rank traced nothing")
	}
	off := wire.DefaultSettings
	off.NoTrace = true
	if grows(off) {
		t.Error("NoTrace: the rank still traced its requests")
	}
	bad := wire.DefaultSettings
	bad.ClockPeriod = -time.Millisecond
	if w, err := harness.NewWorld(backends.HostName, 2, bad, deadline()); err == nil || !strings.Contains(err.Error(), "clock period -1ms is negative") {
		if w != nil {
			w.Close()
		}
		t.Errorf("a negative clock period must fail the hello, got %v", err)
	}
}
