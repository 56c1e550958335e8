package specs

import (
	"fmt"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// perf cases measure what a path is worth: copy bandwidth with the copy
// engine and with a copy kernel, both directions, per ordered rank pair, and
// the round-trip latency of a dependent chain of system-scope atomics.
func (b *builder) perf() {
	n := b.o.Ranks
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s == d {
				continue
			}
			for _, eng := range []string{"ce", "kernel"} {
				for _, dir := range []string{"write", "read"} {
					variant := fmt.Sprintf("copy_%s_%s.r%dr%d", eng, dir, s, d)
					b.add("perf", variant, n, report.Pass, []string{"perf", "bandwidth", eng, dir, fmt.Sprintf("pair=%d-%d", s, d)}, 120*time.Second,
						func(c *harness.Ctx) error { return runCopy(c, s, d, eng, dir) })
				}
			}
		}
	}
	pp := kernels.MustLookup("pingpong_u64_acqrel_sys")
	b.add("perf", "pingpong_latency.r0r1", n, report.Pass, []string{"perf", "latency", "pair=0-1"}, 60*time.Second, func(c *harness.Ctx) error {
		rounds := uint64(20000)
		if c.Vendor() == "host" {
			rounds = 2000
		}
		m, err := c.Shared(0, 4096, true)
		if err != nil {
			return err
		}
		outs := make([]int, 2)
		for r := 0; r < 2; r++ {
			if outs[r], err = c.Local(r, 64); err != nil {
				return err
			}
		}
		for sample := 0; sample < 6; sample++ {
			if err := c.Zero(0, m.Bufs[0], 0, 64); err != nil {
				return err
			}
			ls := make([]harness.Launch, 2)
			for r := 0; r < 2; r++ {
				ls[r] = harness.Launch{Rank: r, Kernel: pp.Name, Grid: 1, Block: 1, Args: map[string]wireArg{
					"flag": harness.P(m.Bufs[r], 0), "out": harness.P(outs[r], 0), "n": harness.V(rounds),
					"role": harness.V(uint64(r)), "timeout_ns": harness.V(uint64(5 * time.Second))}}
			}
			el, err := c.Run(ls...)
			if err != nil {
				return err
			}
			done, err := c.U64(0, outs[0], 0)
			if err != nil {
				return err
			}
			if done != rounds {
				st, _ := c.U64(0, outs[0], 16)
				return harness.Failf("ping-pong stopped after %d of %d rounds (flag last seen %d)", done, rounds, st)
			}
			if sample == 0 {
				continue // warm-up
			}
			c.Metric("rtt_sys_us", "us", "rank 0 kernel elapsed / rounds (dependent acquire/release chain)", el[0].Seconds()*1e6/float64(rounds))
		}
		return nil
	})
}

func copySize(c *harness.Ctx) uint64 {
	if c.Vendor() == "host" {
		return 16 << 20
	}
	return 256 << 20
}

// runCopy moves size bytes between rank s's local buffer and memory owned
// by rank d, from rank s: "write" pushes into d, "read" pulls from d.
func runCopy(c *harness.Ctx, s, d int, eng, dir string) error {
	size := copySize(c)
	local, err := c.Local(s, size)
	if err != nil {
		return err
	}
	remote, err := c.Shared(d, size, true)
	if err != nil {
		return err
	}
	fill := kernels.MustLookup("fill_u64_plain_dev")
	copyK := kernels.MustLookup("copy_b128_plain_dev")
	grid, block := uint32(c.Units(s)*4), uint32(256)
	if c.Vendor() == "host" {
		grid, block = 1, 2
	}
	nthreads := uint64(grid) * uint64(block)
	// Fill the source with a value, the destination with another, so the
	// sum check after each copy proves the bytes moved.
	srcRank, srcBuf, dstRank, dstBuf := s, local, d, remote.Bufs[d]
	if dir == "read" {
		srcRank, srcBuf, dstRank, dstBuf = d, remote.Bufs[d], s, local
	}
	fillBuf := func(rank, buf int, v uint64) error {
		_, err := c.Run(harness.Launch{Rank: rank, Kernel: fill.Name, Grid: grid, Block: block, Args: map[string]wireArg{
			"dst": harness.P(buf, 0), "value": harness.V(v), "n": harness.V(size / 8), "block": harness.V(uint64(block)), "nthreads": harness.V(nthreads)}})
		return err
	}
	// s addresses the remote buffer through its import.
	sSrc, sDst := local, remote.Bufs[s]
	if dir == "read" {
		sSrc, sDst = remote.Bufs[s], local
	}
	name := fmt.Sprintf("bw_%s_%s_gbps", eng, dir)
	for sample := 0; sample < 6; sample++ {
		val := uint64(0x0101010101010101) * uint64(sample+1)
		if err := fillBuf(srcRank, srcBuf, val); err != nil {
			return err
		}
		if err := fillBuf(dstRank, dstBuf, 0); err != nil {
			return err
		}
		var el time.Duration
		var method string
		if eng == "ce" {
			el, method, err = c.Copy(s, sDst, 0, sSrc, 0, size)
		} else {
			var els []time.Duration
			els, err = c.Run(harness.Launch{Rank: s, Kernel: copyK.Name, Grid: grid, Block: block, Args: map[string]wireArg{
				"dst": harness.P(sDst, 0), "src": harness.P(sSrc, 0), "nbytes": harness.V(size), "block": harness.V(uint64(block)), "nthreads": harness.V(nthreads)}})
			if len(els) > 0 {
				el = els[0]
			}
			method = "kernel elapsed"
		}
		if err != nil {
			return err
		}
		sum, err := c.Sum(dstRank, dstBuf, 0, size/8, 64)
		if err != nil {
			return err
		}
		if want := val * (size / 8); sum != want {
			return harness.Failf("copy %s/%s sample %d: destination sums to %#x, expected %#x", eng, dir, sample, sum, want)
		}
		if sample == 0 || el <= 0 {
			continue // warm-up
		}
		c.Metric(name, "GB/s", fmt.Sprintf("%s, %d MiB, rank %d %s rank %d", method, size>>20, s, map[string]string{"write": "→", "read": "←"}[dir], d),
			float64(size)/el.Seconds()/1e9)
	}
	return nil
}
