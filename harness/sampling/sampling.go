// Package sampling holds how the perf cases lay out their samples: how long
// an atomic-throughput sample runs and where a ping-pong puts its flags.
// The reference program (scripts/ref/p2pref.cu) repeats both, so the two
// measure the same thing.
package sampling

import "time"

// Target is how long one timed atomic-throughput sample should last on a
// GPU. A fixed 6.8 M operations took 50 µs to 3 ms depending on the path,
// and samples that short spread by 4-24% on 2xH200 (launch and clock-ramp
// jitter; results/h200x2-580.159.04 at d9c5274). The warm-up sample sets
// the iteration count so every timed sample lasts about this long.
const Target = 20 * time.Millisecond

// MaxScale bounds how far Iters multiplies a base count.
const MaxScale = 1 << 16

// Iters is the iteration count that makes a launch which took el with base
// iterations last about target: base times ceil(target/el), at most
// base*MaxScale. A launch already that long, or a zero target or elapsed
// time, keeps base.
func Iters(base uint64, el, target time.Duration) uint64 {
	if target <= 0 || el <= 0 || el >= target {
		return base
	}
	m := uint64((target + el - 1) / el)
	return base * min(m, MaxScale)
}

// Placements is how many places in a 2 MiB buffer one ping-pong sample
// puts its flags in turn. A round trip on one H200 depends on which L2
// slice holds the flags' line: the same case read 0.92, 1.00 and 1.13 µs
// in different worlds (a fresh world's allocations land on the same
// physical pages, so it read 1.13 four times out of four) and the
// reference 0.82-0.84 on its own allocations. A sample that averages 16
// placements measures the path, not the page.
const Placements = 16

// PlacementSpan is the buffer size the placements need (the flags take the
// first 128 bytes at each offset).
const PlacementSpan = 2 << 20

// FlagOffset is placement p's byte offset: 32 pages and 3 lines apart, so
// each placement is a different 4 KiB page and a different 128-byte line
// position within its page.
func FlagOffset(p int) uint64 { return uint64(p) * (32*4096 + 3*128) }
