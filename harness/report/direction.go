package report

import "strings"

// Direction is which way a metric is better. It is declared once, with
// the metric (a MetricKind at the Ctx.Metric call), carried on Metric as
// Better and written into results.json as "better"; every judge (the
// perf gate, p2pcompare, p2pfleet, the pair heat maps) reads it there.
// The zero value is undeclared: a count or a ratio, never judged for
// speed.
type Direction string

const (
	Higher Direction = "higher" // rates: GB/s, Mops/s
	Lower  Direction = "lower"  // times: us, ms, cycles per op
)

// Sign is +1 for Higher, -1 for Lower, 0 for undeclared: a judge
// multiplies a change by it, so a drop of a rate and a rise of a time are
// both negative (worse).
func (d Direction) Sign() int {
	switch d {
	case Higher:
		return +1
	case Lower:
		return -1
	}
	return 0
}

// Words is "higher", "lower" or "unknown" (the tools' "better" column).
func (d Direction) Words() string {
	if d.Sign() == 0 {
		return "unknown"
	}
	return string(d)
}

// MetricKind is a metric's declaration: its name, its unit and which way
// it is better. A spec declares each once (specs/perf.go's kinds) and
// passes it to Ctx.Metric; nothing downstream reads a direction from the
// unit. A rate or a time must name Better: TestEveryDeclaredMetricHasADirection
// parses every MetricKind literal of the module and fails on one that
// does not (counts and ratios, never judged for speed, need none).
type MetricKind struct {
	Name   string
	Unit   string
	Better Direction
}

// Direction is the metric's declared direction. A metric recorded before
// directions were declared (results.json without "better": every
// committed run under results/) falls back to unitDirection, the only
// place a unit is read for a direction, so old runs judge as they did.
func (m Metric) Direction() Direction {
	if m.Better != "" {
		return m.Better
	}
	return unitDirection(m.Unit)
}

// unitDirection is the rule every tool used before a metric declared its
// direction: rates (anything "/s", Hz) higher, times (s, ms, us, µs, ns,
// ps, cycles, per op, per round trip) lower, anything else (counts,
// ratios) undeclared. Only old results reach it.
func unitDirection(unit string) Direction {
	u := strings.ToLower(strings.TrimSpace(unit))
	switch {
	case strings.Contains(u, "/s") || strings.HasSuffix(u, "ps") && u != "ps" || u == "hz":
		return Higher
	case u == "s" || u == "ms" || u == "us" || u == "µs" || u == "μs" || u == "ns" || u == "ps" || u == "cycles" || strings.HasSuffix(u, "/op") || strings.HasSuffix(u, "/rt"):
		return Lower
	}
	return ""
}
