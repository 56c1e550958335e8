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

// Placements is how many places one ping-pong sample puts its flags in
// turn, inside one launch (the kernel's places/stride arguments). A round
// trip on one H200 depends on which L2 slice holds the flags' line: 16
// placements of one 2 MiB page read 0.82 to 1.08 µs in the reference
// program, and the same case read 0.92, 1.00 and 1.13 µs in different
// worlds before (a fresh world's allocations land on the same physical
// pages, so it read 1.13 four times out of four). An average over 64
// placements on four 2 MiB pages measures the path, not the page.
const Placements = 64

// Stride is the distance between placements: 32 pages and 3 lines, so each
// placement is a different 4 KiB page and the line within the page moves
// (32 positions, then they repeat on other pages).
const Stride = 32*4096 + 3*128

// PlacementSpan is the buffer size the placements need (the flags take the
// first 128 bytes at each offset), a multiple of 2 MiB.
const PlacementSpan = ((Placements-1)*Stride + 128 + (2<<20 - 1)) / (2 << 20) * (2 << 20)

// FlagOffset is placement p's byte offset.
func FlagOffset(p int) uint64 { return uint64(p) * Stride }
