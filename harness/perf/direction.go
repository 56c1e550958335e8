// Package perf holds the performance gate: which way every metric is
// better (Direction, declared here once for every tool), the perf.txt
// baseline (a limit per metric recorded from several runs in fresh
// worlds, Record, Parse, Format), and the decision that judges a run's
// medians against it (Judge). docs/GATING.md ("The perf gate") is its
// user's view.
package perf

import "strings"

// Direction says which way a metric of this unit is better: +1 higher
// (rates: GB/s, Mops/s, anything "/s", Hz), -1 lower (times: s, ms, us,
// µs, ns, ps, cycles, anything per op or per round trip), 0 unknown
// (counts, ratios: never gated). It is the one rule; the pair tables,
// p2pcompare, p2pfleet and the perf gate all ask it.
func Direction(unit string) int {
	u := strings.ToLower(strings.TrimSpace(unit))
	switch {
	case strings.Contains(u, "/s") || strings.HasSuffix(u, "ps") && u != "ps" || u == "hz":
		return +1
	case u == "s" || u == "ms" || u == "us" || u == "µs" || u == "μs" || u == "ns" || u == "ps" || u == "cycles" || strings.HasSuffix(u, "/op") || strings.HasSuffix(u, "/rt"):
		return -1
	}
	return 0
}

// Better is Direction in words: "higher", "lower" or "unknown".
func Better(unit string) string {
	switch Direction(unit) {
	case +1:
		return "higher"
	case -1:
		return "lower"
	}
	return "unknown"
}
