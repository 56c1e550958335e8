package specs

import (
	"encoding/binary"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// racyParties is the racy kernel's parties argument for a launch whose
// blocks are parties first .. first+grid-1 of total. On AMD its barrier is
// a store barrier (issue 50, Q1: P2P read-modify-writes fault on the
// coarse-grained paths this control runs on): block b stores to its own
// slot bar[first+b], so the launch's first slot rides in the high 32 bits.
// NVIDIA's barrier (and the host's) is a fetch_add on bar[0]: the total
// alone.
func racyParties(c *harness.Ctx, total, first uint64) uint64 {
	if c.Backend().Vendor == "amd" {
		return total | first<<32
	}
	return total
}

// racyBarBytes is the span of the racy kernel's barrier words from bar:
// AMD's one u64 slot per party (NVIDIA uses the first).
func racyBarBytes(total uint64) uint64 { return 8 * total }

// controls are cases that must NOT pass: a planted non-atomic increment, a
// mapping without access, a flag nobody sets.
func (b *builder) controls() {
	racy := kernels.MustLookup("racy_u64_plain_sys")
	b.add(Spec{Name: "planted", Variant: racy.Name, Ranks: b.o.Ranks, Expected: report.Fail,
		Labels: []report.Label{LabelControl, LabelPlanted}, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error {
			if err := c.NeedPeer(true); err != nil {
				return err
			}
			sz := sizing(c, kernels.OpRacy)
			pause := uint64(2000)
			if !c.Backend().GPU {
				sz, pause = size{1, 2, 20000}, 200
			} else {
				sz.iters = min(sz.iters, 20)
			}
			parties := uint64(c.N()) * uint64(sz.grid)
			m, err := c.Shared(0, max(4096, 8+racyBarBytes(parties)), true)
			if err != nil {
				return err
			}
			if err := c.Zero(0, m.Bufs[0], 0, 8+racyBarBytes(parties)); err != nil {
				return err
			}
			ls := make([]harness.Launch, c.N())
			for r := range ls {
				ls[r] = harness.Launch{Rank: r, Kernel: racy.Name, Grid: sz.grid, Block: sz.block, Args: map[string]wireArg{
					"target": harness.P(m.Bufs[r], 0), "bar": harness.P(m.Bufs[r], 8), "iters": harness.V(sz.iters),
					"block": harness.V(uint64(sz.block)), "pause": harness.V(pause), "parties": harness.V(racyParties(c, parties, uint64(r)*uint64(sz.grid))),
					// The barrier only makes the race certain; where the barrier's own
					// atomics are not atomic (vmm-host) it gives up after a second.
					"timeout_ns": harness.V(uint64(time.Second))}}
			}
			if _, err := c.Run(ls...); err != nil {
				return err
			}
			got, err := c.U64(0, m.Bufs[0], 0)
			if err != nil {
				return err
			}
			want := uint64(c.N()) * sz.threads() * sz.iters
			c.Metric(report.MetricKind{Name: "lost_updates", Unit: "count"}, "expected - counted", float64(want-got))
			if got == want {
				c.Note("no update was lost: the planted race did not show")
				return nil
			}
			return harness.Failf("non-atomic increment lost %d of %d updates (counted %d)", want-got, want, got)
		}})
	add := kernels.MustLookup("add_u64_relaxed_sys")
	// Legacy IPC mappings always carry access: there is no ungranted
	// mapping to test for ipc.
	noAccess := !backends.KindSpecOf(b.backend, b.kind).AlwaysGranted
	na := b.add(Spec{Name: "noaccess", Variant: add.Name, Ranks: b.o.Ranks, Expected: report.Crash,
		Labels: []report.Label{LabelControl}, Timeout: 30 * time.Second,
		Run: func(c *harness.Ctx) error {
			m, err := c.Shared(0, 1<<20, false) // peers map it without access
			if err != nil {
				return err
			}
			_, err = c.Run(harness.Launch{Rank: 1, Kernel: add.Name, Grid: 1, Block: 1, Args: map[string]wireArg{
				"target": harness.P(m.Bufs[1], 0), "out": harness.Null(), "operand": harness.V(1), "iters": harness.V(1), "block": harness.V(1), "salt": harness.V(1)}})
			if err != nil {
				return err
			}
			return harness.Failf("a peer without access to the mapping wrote it and nothing faulted")
		}})
	na.NoLeak = true
	if !noAccess {
		b.cases = b.cases[:len(b.cases)-1]
	}
	wait := kernels.MustLookup("wait_u32_acquire_sys")
	waitCase := func(variant string, expected report.Outcome, timeout uint64, caseTimeout time.Duration) {
		wc := b.add(Spec{Name: "waitflag", Variant: variant, Ranks: b.o.Ranks, Expected: expected,
			Labels: []report.Label{LabelControl}, Timeout: caseTimeout,
			Run: func(c *harness.Ctx) error {
				m, err := c.Shared(0, 4096, true)
				if err != nil {
					return err
				}
				if err := c.Zero(0, m.Bufs[0], 0, 64); err != nil {
					return err
				}
				_, err = c.Run(harness.Launch{Rank: 1, Kernel: wait.Name, Grid: 1, Block: 1, Args: map[string]wireArg{
					"flag": harness.P(m.Bufs[1], 0), "out": harness.P(m.Bufs[1], 8), "expect": harness.V(1), "timeout_ns": harness.V(timeout)}})
				if err != nil {
					return err
				}
				o, err := c.Read(0, m.Bufs[0], 8, 8)
				if err != nil {
					return err
				}
				if st := binary.LittleEndian.Uint32(o); st != 1 {
					return harness.Failf("flag never arrived: waited %s for flag==1, last value seen %d (status %d)",
						time.Duration(timeout), binary.LittleEndian.Uint32(o[4:]), st)
				}
				return nil
			}})
		wc.Grace = 500 * time.Millisecond
		wc.NoLeak = true
	}
	waitCase("bounded", report.Fail, uint64(BoundedWait), 20*time.Second)
	waitCase("unbounded", report.Timeout, 0, PlantedHangBudget)
}

// BoundedWait is how long waitflag.bounded's kernel polls for a flag
// nobody sets before it reports the flag missing (a fail, not a hang). The
// wait is the whole case: at 200 ms its three cases cost 0.64 s of a
// one-GPU run (0.21 s each on one H100); 50 ms proves the same bound
// (issue 52: cheap sizes that change no outcome).
const BoundedWait = 50 * time.Millisecond

// PlantedHangBudget is the budget of a planted hang (waitflag.unbounded,
// canary.hang): it proves the hang is classified (timeout, the stuck call
// named by the watchdog) and the world recovered, which takes no longer at
// 150 ms than at 1 s; four of them cost 4.6 s of a 57.7 s GPU run at 1 s
// each (issue 52 item 3), and 0.43 s each on one H100 at 250 ms (the
// budget, then 0.17 s for the killed ranks' exit). Its setup (a 4 KiB
// allocation and one launch) takes 10-15 ms on one H100 (--trace at
// a1d6007); a setup slower than the budget still ends the case in the
// timeout it expects.
const PlantedHangBudget = 150 * time.Millisecond
