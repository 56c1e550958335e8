package specs

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
	"p2patomics/wire"
)

type wireArg = wire.Arg

var flakyRuns atomic.Int32

func (b *builder) patterns() {
	for _, s := range kernels.Scopes {
		k := kernels.MustLookup(kernels.Name(kernels.OpSpread, kernels.U64, kernels.Relaxed, s))
		b.add("spread", k.Name, b.o.Ranks, report.Pass, []string{"atomics", "spread", string(s)}, 60*time.Second, func(c *harness.Ctx) error {
			if err := c.NeedPeer(true); err != nil {
				return err
			}
			sz := sizing(c, kernels.OpSpread)
			m, err := c.Shared(0, max(sz.threads()*8, 4096), true)
			if err != nil {
				return err
			}
			if err := c.Zero(0, m.Bufs[0], 0, sz.threads()*8); err != nil {
				return err
			}
			ls := make([]harness.Launch, c.N())
			for r := range ls {
				ls[r] = counterLaunch(r, k, sz, harness.P(m.Bufs[r], 0), 1)
			}
			if _, err := c.Run(ls...); err != nil {
				return err
			}
			data, err := c.Read(0, m.Bufs[0], 0, sz.threads()*8)
			if err != nil {
				return err
			}
			want := uint64(c.N()) * sz.iters
			for g := uint64(0); g < sz.threads(); g++ {
				if v := le64(data[g*8:]); v != want {
					return harness.Failf("word %d: expected %d, got %d (lost %d)", g, want, v, int64(want-v))
				}
			}
			return nil
		})
		ar := kernels.MustLookup(kernels.Name(kernels.OpAllReduce, kernels.U64, kernels.Relaxed, s))
		b.add("allreduce", ar.Name, b.o.Ranks, report.Pass, []string{"atomics", "allreduce", string(s)}, 60*time.Second, func(c *harness.Ctx) error {
			if err := c.NeedPeer(true); err != nil {
				return err
			}
			const n = 4096
			sz := sizing(c, kernels.OpAllReduce)
			dst, err := c.Shared(0, n*8, true)
			if err != nil {
				return err
			}
			if err := c.Zero(0, dst.Bufs[0], 0, n*8); err != nil {
				return err
			}
			want := make([]uint64, n)
			ls := make([]harness.Launch, c.N())
			for r := range ls {
				src, err := c.Local(r, n*8)
				if err != nil {
					return err
				}
				vals := make([]byte, n*8)
				for j := 0; j < n; j++ {
					v := uint64(r+1)*1_000_003 + uint64(j)*uint64(c.Seed+7)
					binary.LittleEndian.PutUint64(vals[j*8:], v)
					want[j] += v
				}
				if err := c.Write(r, src, 0, vals); err != nil {
					return err
				}
				ls[r] = harness.Launch{Rank: r, Kernel: ar.Name, Grid: sz.grid, Block: sz.block, Args: map[string]wireArg{
					"dst": harness.P(dst.Bufs[r], 0), "src": harness.P(src, 0), "n": harness.V(n),
					"block": harness.V(uint64(sz.block)), "nthreads": harness.V(sz.threads())}}
			}
			if _, err := c.Run(ls...); err != nil {
				return err
			}
			// Every rank reads the reduced vector through its own mapping.
			for r := 0; r < c.N(); r++ {
				data, err := c.Read(r, dst.Bufs[r], 0, n*8)
				if err != nil {
					return err
				}
				for j := 0; j < n; j++ {
					if v := le64(data[j*8:]); v != want[j] {
						return harness.Failf("rank %d sees element %d = %d, expected %d", r, j, v, want[j])
					}
				}
			}
			return nil
		})
	}
}

func litmusSize(c *harness.Ctx) (n uint64, block uint32, timeout time.Duration) {
	if c.Vendor() == "host" {
		return 20000, 2, 5 * time.Second
	}
	return 200000, 256, 5 * time.Second
}

func (b *builder) litmus() {
	for _, name := range []string{"mp_u32_acqrel_sys", "mp_u32_relaxed_sys"} {
		k := kernels.MustLookup(name)
		labels := []string{"litmus", "mp"}
		if k.Info {
			labels = append(labels, "info")
		}
		b.add("litmus", k.Name, b.o.Ranks, report.Pass, labels, 60*time.Second, func(c *harness.Ctx) error {
			if err := c.NeedPeer(false); err != nil {
				return err
			}
			n, block, to := litmusSize(c)
			xy, err := c.Shared(0, 2*n*4, true)
			if err != nil {
				return err
			}
			if err := c.Zero(0, xy.Bufs[0], 0, 2*n*4); err != nil {
				return err
			}
			outs := make([]int, 2)
			for r := 0; r < 2; r++ {
				if outs[r], err = c.Local(r, 64); err != nil {
					return err
				}
				if err := c.Zero(r, outs[r], 0, 64); err != nil {
					return err
				}
			}
			ls := make([]harness.Launch, 2)
			for r := 0; r < 2; r++ {
				ls[r] = harness.Launch{Rank: r, Kernel: k.Name, Grid: 1, Block: block, Args: map[string]wireArg{
					"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4), "out": harness.P(outs[r], 0),
					"n": harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(uint64(block)), "timeout_ns": harness.V(uint64(to))}}
			}
			if _, err := c.Run(ls...); err != nil {
				return err
			}
			o, err := c.Read(1, outs[1], 0, 16)
			if err != nil {
				return err
			}
			bad, lost := binary.LittleEndian.Uint32(o), binary.LittleEndian.Uint32(o[4:])
			c.Note("%d message-passing rounds, %d stale reads, %d lost flags", n, bad, lost)
			if lost > 0 {
				return harness.Failf("flag never arrived in %d of %d rounds (last flag value seen %d at round %d)",
					lost, n, binary.LittleEndian.Uint32(o[8:]), binary.LittleEndian.Uint32(o[12:]))
			}
			if bad > 0 {
				return harness.Failf("forbidden outcome: %d of %d reads saw the flag but stale data", bad, n)
			}
			return nil
		})
	}
	sb := kernels.MustLookup("sb_u32_seqcst_sys")
	b.add("litmus", sb.Name, b.o.Ranks, report.Pass, []string{"litmus", "sb"}, 60*time.Second, func(c *harness.Ctx) error {
		if err := c.NeedPeer(false); err != nil {
			return err
		}
		n, block, to := litmusSize(c)
		xy, err := c.Shared(0, 2*n*4, true)
		if err != nil {
			return err
		}
		if err := c.Zero(0, xy.Bufs[0], 0, 2*n*4); err != nil {
			return err
		}
		outs := make([]int, 2)
		ls := make([]harness.Launch, 2)
		for r := 0; r < 2; r++ {
			if outs[r], err = c.Local(r, n*4); err != nil {
				return err
			}
			ls[r] = harness.Launch{Rank: r, Kernel: sb.Name, Grid: 1, Block: block, Args: map[string]wireArg{
				"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4), "out": harness.P(outs[r], 0),
				"n": harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(uint64(block)), "timeout_ns": harness.V(uint64(to))}}
		}
		if _, err := c.Run(ls...); err != nil {
			return err
		}
		r0, err := c.Read(0, outs[0], 0, n*4)
		if err != nil {
			return err
		}
		r1, err := c.Read(1, outs[1], 0, n*4)
		if err != nil {
			return err
		}
		forbidden, both := 0, 0
		for i := uint64(0); i < n; i++ {
			a, b := binary.LittleEndian.Uint32(r0[i*4:]), binary.LittleEndian.Uint32(r1[i*4:])
			if a == 0 && b == 0 {
				forbidden++
			}
			if a == 1 && b == 1 {
				both++
			}
		}
		c.Note("%d store-buffering rounds, %d saw both stores, %d forbidden", n, both, forbidden)
		if forbidden > 0 {
			return harness.Failf("forbidden outcome r0=r1=0 in %d of %d rounds", forbidden, n)
		}
		return nil
	})
	iriw := kernels.MustLookup("iriw_u32_seqcst_sys")
	ranks := max(3, b.o.Ranks)
	b.add("litmus", iriw.Name, ranks, report.Pass, []string{"litmus", "iriw"}, 60*time.Second, func(c *harness.Ctx) error {
		if err := c.NeedPeer(false); err != nil {
			return err
		}
		n, _, to := litmusSize(c)
		n = min(n, 20000)
		xy, err := c.Shared(0, 2*n*4, true)
		if err != nil {
			return err
		}
		if err := c.Zero(0, xy.Bufs[0], 0, 2*n*4); err != nil {
			return err
		}
		out, err := c.Local(2, 2*n*4)
		if err != nil {
			return err
		}
		var ls []harness.Launch
		for r := 0; r < 3; r++ {
			args := map[string]wireArg{"x": harness.P(xy.Bufs[r], 0), "y": harness.P(xy.Bufs[r], n*4),
				"n": harness.V(n), "role": harness.V(uint64(r)), "block": harness.V(2), "timeout_ns": harness.V(uint64(to))}
			if r == 2 {
				args["out"] = harness.P(out, 0)
			}
			ls = append(ls, harness.Launch{Rank: r, Kernel: iriw.Name, Grid: 1, Block: 2, Args: args})
		}
		if _, err := c.Run(ls...); err != nil {
			return err
		}
		o, err := c.Read(2, out, 0, 2*n*4)
		if err != nil {
			return err
		}
		forbidden, lost := 0, 0
		for i := uint64(0); i < n; i++ {
			a, b := binary.LittleEndian.Uint32(o[8*i:]), binary.LittleEndian.Uint32(o[8*i+4:])
			if a >= 2 || b >= 2 {
				lost++
				continue
			}
			if a == 0 && b == 0 {
				forbidden++
			}
		}
		c.Note("%d IRIW rounds on 3 ranks, %d forbidden, %d waits timed out", n, forbidden, lost)
		if lost > 0 {
			return harness.Failf("a write never arrived at the readers in %d of %d rounds", lost, n)
		}
		if forbidden > 0 {
			return harness.Failf("forbidden IRIW outcome (readers disagree on the order of two writes) in %d of %d rounds", forbidden, n)
		}
		return nil
	})
}

func (b *builder) fdExchange() {
	b.add("fdexchange", "pattern", b.o.Ranks, report.Pass, []string{"fd"}, 30*time.Second, func(c *harness.Ctx) error {
		if err := c.NeedPeer(false); err != nil {
			return err
		}
		const size = 1 << 20
		for owner := 0; owner < c.N(); owner++ {
			m, err := c.Shared(owner, size, true)
			if err != nil {
				return err
			}
			pat := make([]byte, size)
			for i := range pat {
				pat[i] = byte(i*31 + owner*7 + int(c.Seed))
			}
			if err := c.Write(owner, m.Bufs[owner], 0, pat); err != nil {
				return err
			}
			for r := 0; r < c.N(); r++ {
				got, err := c.Read(r, m.Bufs[r], 0, size)
				if err != nil {
					return err
				}
				if i := firstDiff(got, pat); i >= 0 {
					return harness.Failf("rank %d reads byte %d of rank %d's buffer as %#x, owner wrote %#x", r, i, owner, got[i], pat[i])
				}
			}
			// And the other way: the last peer writes, the owner reads.
			peer := (owner + 1) % c.N()
			if err := c.Write(peer, m.Bufs[peer], 4096, []byte("p2patomics")); err != nil {
				return err
			}
			back, err := c.Read(owner, m.Bufs[owner], 4096, 10)
			if err != nil {
				return err
			}
			if string(back) != "p2patomics" {
				return harness.Failf("rank %d wrote through its import; owner %d reads %q", peer, owner, back)
			}
		}
		return nil
	})
	b.add("lifetime", "owner_frees", b.o.Ranks, report.Pass, []string{"fd", "lifetime"}, 30*time.Second, func(c *harness.Ctx) error {
		m, err := c.Shared(0, 1<<20, true)
		if err != nil {
			return err
		}
		if err := c.PutU64(0, m.Bufs[0], 0, 0xfeedface); err != nil {
			return err
		}
		if err := c.FreeBuf(0, m.Bufs[0]); err != nil {
			return err
		}
		v, err := c.U64(1, m.Bufs[1], 0)
		if err != nil {
			c.Note("after the owner freed its buffer, the peer's read failed: %v", err)
			return nil
		}
		c.Note("after the owner freed its buffer, the peer still reads %#x through its import (the import holds a reference)", v)
		return nil
	})
	lt := b.add("lifetime", "owner_dies", b.o.Ranks, report.Pass, []string{"fd", "lifetime"}, 30*time.Second, func(c *harness.Ctx) error {
		m, err := c.Shared(0, 1<<20, true)
		if err != nil {
			return err
		}
		if err := c.PutU64(0, m.Bufs[0], 0, 0xdecafbad); err != nil {
			return err
		}
		p := c.W.Procs[0]
		p.Signal(syscall.SIGKILL)
		if !p.WaitExit(5 * time.Second) {
			return harness.Failf("rank 0 survived SIGKILL")
		}
		v, err := c.U64(1, m.Bufs[1], 0)
		if err != nil {
			c.Note("after the owner died, the peer's read failed: %v", err)
			return nil
		}
		if v != 0xdecafbad {
			return harness.Failf("after the owner died the peer reads %#x, not the %#x written", v, uint64(0xdecafbad))
		}
		c.Note("after the owner was killed, the peer still reads %#x through its import", v)
		return nil
	})
	lt.NoLeak = true
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// controls are cases that must NOT pass: a planted non-atomic increment, a
// mapping without access, a flag nobody sets.
func (b *builder) controls() {
	racy := kernels.MustLookup("racy_u64_plain_sys")
	b.add("planted", racy.Name, b.o.Ranks, report.Fail, []string{"control", "planted"}, 60*time.Second, func(c *harness.Ctx) error {
		if err := c.NeedPeer(true); err != nil {
			return err
		}
		sz := sizing(c, kernels.OpRacy)
		pause := uint64(2000)
		if c.Vendor() == "host" {
			sz, pause = size{1, 2, 20000}, 200
		} else {
			sz.iters = min(sz.iters, 20)
		}
		m, err := c.Shared(0, 4096, true)
		if err != nil {
			return err
		}
		if err := c.Zero(0, m.Bufs[0], 0, 16); err != nil {
			return err
		}
		parties := uint64(c.N()) * uint64(sz.grid)
		ls := make([]harness.Launch, c.N())
		for r := range ls {
			ls[r] = harness.Launch{Rank: r, Kernel: racy.Name, Grid: sz.grid, Block: sz.block, Args: map[string]wireArg{
				"target": harness.P(m.Bufs[r], 0), "bar": harness.P(m.Bufs[r], 8), "iters": harness.V(sz.iters),
				"block": harness.V(uint64(sz.block)), "pause": harness.V(pause), "parties": harness.V(parties),
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
		c.Metric("lost_updates", "count", "expected - counted", float64(want-got))
		if got == want {
			c.Note("no update was lost: the planted race did not show")
			return nil
		}
		return harness.Failf("non-atomic increment lost %d of %d updates (counted %d)", want-got, want, got)
	})
	add := kernels.MustLookup("add_u64_relaxed_sys")
	// Legacy IPC mappings always carry access: there is no ungranted
	// mapping to test for ipc.
	noAccess := b.kind != "ipc"
	na := b.add("noaccess", add.Name, b.o.Ranks, report.Crash, []string{"control", "noaccess"}, 30*time.Second, func(c *harness.Ctx) error {
		m, err := c.Shared(0, 1<<20, false) // peers map it without access
		if err != nil {
			return err
		}
		_, err = c.Run(harness.Launch{Rank: 1, Kernel: add.Name, Grid: 1, Block: 1, Args: map[string]wireArg{
			"target": harness.P(m.Bufs[1], 0), "operand": harness.V(1), "iters": harness.V(1), "block": harness.V(1), "salt": harness.V(1)}})
		if err != nil {
			return err
		}
		return harness.Failf("a peer without access to the mapping wrote it and nothing faulted")
	})
	na.NoLeak = true
	if !noAccess {
		b.cases = b.cases[:len(b.cases)-1]
	}
	wait := kernels.MustLookup("wait_u32_acquire_sys")
	waitCase := func(variant string, expected report.Outcome, timeout uint64, caseTimeout time.Duration) {
		wc := b.add("waitflag", variant, b.o.Ranks, expected, []string{"control", "waitflag"}, caseTimeout, func(c *harness.Ctx) error {
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
		})
		wc.Grace = 500 * time.Millisecond
		wc.NoLeak = true
	}
	waitCase("bounded", report.Fail, uint64(200*time.Millisecond), 20*time.Second)
	waitCase("unbounded", report.Timeout, 0, time.Second)
}

// canaries: every way a rank can end badly, classified on every run, each
// followed by a case that must pass on a fresh world.
func (b *builder) canaries() {
	// The canaries exercise the harness (crash, hang and protocol
	// classification in a backend's ranks), not a memory path: the same
	// purego segv or panic says nothing new on a second kind, and each one
	// costs a world restart. They run on the backend's first kind, or on
	// the one kind a run selected.
	if m := harness.Matrix[b.backend]; b.o.Alloc == "" && len(m) > 0 && b.kind != m[0] {
		return
	}
	type canary struct {
		how      string
		expected report.Outcome
		timeout  time.Duration
		check    func(r report.Result) string
	}
	list := []canary{
		{"purego_segv", report.Crash, 20 * time.Second, nil},
		{"cthread_segv", report.Crash, 20 * time.Second, nil},
		{"abort", report.Crash, 20 * time.Second, nil},
		{"panic", report.Crash, 20 * time.Second, nil},
		{"hang", report.Timeout, time.Second, nil},
		{"exit_mid_protocol", report.Crash, 20 * time.Second, nil},
		{"malformed_reply", report.Error, 20 * time.Second, nil},
	}
	if os.Getenv("P2PAT_INTERNAL_SLEEP_CASE") == "1" {
		// Only the SIGTERM suite canary selects this: a case that is still
		// running when its suite is terminated.
		b.add("canary", "sleep", b.o.Ranks, report.Pass, []string{"canary", "manual"}, 60*time.Second, func(c *harness.Ctx) error {
			return c.Canary(1, "sleep")
		})
	}
	if os.Getenv("P2PAT_INTERNAL_FLAKY") == "1" {
		// Only the gate check selects this: a planted flake that fails on
		// its first run in a suite process and passes on the rerun.
		b.add("canary", "flaky", b.o.Ranks, report.Pass, []string{"canary", "manual"}, 30*time.Second, func(c *harness.Ctx) error {
			if flakyRuns.Add(1) == 1 {
				return harness.Failf("planted flake: the first run fails")
			}
			return nil
		})
	}
	for _, cn := range list {
		cc := b.add("canary", cn.how, b.o.Ranks, cn.expected, []string{"canary"}, cn.timeout, func(c *harness.Ctx) error {
			return c.Canary(1, cn.how)
		})
		cc.Grace, cc.NoLeak = 500*time.Millisecond, true
		b.add("canary", cn.how+".after", b.o.Ranks, report.Pass, []string{"canary"}, 60*time.Second, func(c *harness.Ctx) error {
			return freshWorldCheck(c, cn.how)
		})
	}
}

func (b *builder) dmabuf() {
	b.add("fdexchange", "fdinfo", b.o.Ranks, report.Pass, []string{"fd", "dmabuf"}, 30*time.Second, func(c *harness.Ctx) error {
		const size = 2 << 20
		own, peers, err := c.ShareFd(0, "dmabuf", size)
		if err != nil {
			return err
		}
		name := own["exp_name"]
		if name == "" {
			return harness.Failf("the exported fd shows no exp_name in fdinfo (%v): not a dma-buf", own)
		}
		for r, info := range peers {
			if info["exp_name"] != name || info["size"] != own["size"] || info["ino"] != own["ino"] {
				return harness.Failf("rank %d holds exp_name=%q size=%q ino=%q, exporter has exp_name=%q size=%q ino=%q",
					r, info["exp_name"], info["size"], info["ino"], name, own["size"], own["ino"])
			}
		}
		c.Note("dma-buf exp_name=%s size=%s seen identically by %d ranks", name, own["size"], len(peers))
		return nil
	})
}

// freshWorldCheck is the case after a canary: the world must be a new one
// (every rank respawned) and must work end to end: rank 1 fills rank 0's
// memory with a kernel through its import, rank 0 reads it back. It uses no
// atomics, so it holds on every kind, including those whose atomics fail.
func freshWorldCheck(c *harness.Ctx, after string) error {
	fill := kernels.MustLookup("fill_u64_plain_dev")
	m, err := c.Shared(0, 1<<20, true)
	if err != nil {
		return err
	}
	const n = 4096
	v := uint64(0x5eed0000) + uint64(c.Seed)
	if _, err := c.Run(harness.Launch{Rank: 1, Kernel: fill.Name, Grid: 1, Block: 2, Args: map[string]wireArg{
		"dst": harness.P(m.Bufs[1], 0), "value": harness.V(v), "n": harness.V(n), "block": harness.V(2), "nthreads": harness.V(2)}}); err != nil {
		return err
	}
	sum, err := c.Sum(0, m.Bufs[0], 0, n, 64)
	if err != nil {
		return err
	}
	if sum != v*n {
		return harness.Failf("after the %s canary: rank 0 sums %#x over the words rank 1 filled, expected %#x", after, sum, v*n)
	}
	c.Note("fresh world: ranks %d and %d (pids %d, %d) share memory again", 0, 1, c.W.Procs[0].Pid, c.W.Procs[1].Pid)
	return nil
}
