// Package sampling holds how the perf cases lay out their samples: how long
// an atomic-throughput sample runs and where a ping-pong puts its flags.
// The reference program (scripts/ref/p2pref.cu) repeats both, so the two
// measure the same thing.
package sampling

import (
	"math"
	"time"
)

// Target is how long one timed atomic-throughput sample should last on a
// GPU. A fixed 6.8 M operations took 50 µs to 3 ms depending on the path,
// and samples that short spread by 4-24% on 2xH200 (launch and clock-ramp
// jitter; results/h200x2-580.159.04 at d9c5274). The warm-up sample sets
// the iteration count so every timed sample lasts about this long.
//
// It is sized from power (issue 52 item 2), not fixed: TargetFor the
// tightest atomic family floor and the samples a case takes, from the
// within-run noise recorded at 20 ms samples (10 ms; it was 20 ms).
var Target = TargetFor(AtomicFloor, AtomicSamples)

// The recorded within-run noise of a timed atomic sample: every gated
// atomic family's within-run CV was at most 1.2 % with 20 ms samples on
// 1xH200 (docs/GATING.md, "Run-to-run noise"; the perf gate's noise data).
// A sample's jitter (launch, clock ramp) averages out as 1/√length.
const (
	RecordedCV = 0.012
	RecordedAt = 20 * time.Millisecond
	// MinTarget: below it a launch's own jitter dominates (the 4-24 %
	// spread of 50 µs-3 ms samples).
	MinTarget = 10 * time.Millisecond
	// AtomicFloor is the tightest gated atomic family's tolerance
	// (harness/perf's AtomicContended, 8 %) and AtomicSamples the timed
	// samples an atomic case takes (its warm-up aside).
	AtomicFloor   = 0.08
	AtomicSamples = 5
	// NoiseShare is how much of the floor the within-run noise may add to
	// the smallest regression the gate flags with 95 % power (1.645
	// standard errors of the median, 1.2533 σ/√n): a quarter.
	NoiseShare = 0.25
)

// TargetFor is the shortest sample length (at least MinTarget) whose
// within-run noise adds at most NoiseShare of floor to the 95 %-power
// regression a median of n samples flags: the CV that allows, and the
// length at which the recorded CV shrinks to it.
func TargetFor(floor float64, n int) time.Duration {
	if n < 1 || !(floor > 0) {
		return RecordedAt
	}
	cv := NoiseShare * floor * math.Sqrt(float64(n)) / (1.645 * 1.2533)
	t := time.Duration(float64(RecordedAt) * (RecordedCV / cv) * (RecordedCV / cv))
	// Up to the next millisecond: never shorter than the bound allows.
	return max(MinTarget, (t+time.Millisecond-1)/time.Millisecond*time.Millisecond)
}

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
