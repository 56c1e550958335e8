package specs

import (
	"sync"

	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/power"
	"p2patomics/harness/suite"
)

// todayTimed is the timed samples every GPU perf case took before its
// count was sized from power, and still takes without a baseline: a
// recording run (--update-expectations, --perf-runs) takes it, so every
// perf.txt band is a spread of medians of this many samples.
const todayTimed = 5

// timedSamples is the timed samples of the perf case variant in a run
// gated on a perf.txt (issue 52 item 2): the most any of its lines needs
// (power.Samples: from the noise the line's band recorded, for the run's
// --power perf target or, without one, for the line's own tolerance), at
// most todayTimed. 0, today's count, when the run has no perf baseline or
// the case no line (an ungated metric, another machine's baseline).
func (b *builder) timedSamples(variant string) int {
	lines := b.perfLines[b.fullID("perf", variant, b.o.Ranks)]
	n := 0
	for _, l := range lines {
		n = max(n, power.Samples(l, todayTimed, b.o.PowerTarget().Perf))
	}
	return n
}

// perfLineCache holds each expectation list's perf.txt lines by case id,
// read once for the catalogue of every backend and kind.
var perfLineCache struct {
	sync.Mutex
	by map[string]map[string][]perf.Line
}

// gatedPerfLines is the perf.txt lines of the run's gate by case id: nil
// when the run is not gated (no --expectations) or records a baseline
// (--update-expectations: its samples must be today's, as every band's
// were), or when the gate has no perf.txt. A gate that does not load is
// refused by the plan before any case runs (harness/suite); here it sizes
// nothing.
func gatedPerfLines(o *suite.Options) map[string][]perf.Line {
	if o == nil || o.Expectations == "" || o.UpdateExpectations {
		return nil
	}
	perfLineCache.Lock()
	defer perfLineCache.Unlock()
	if m, ok := perfLineCache.by[o.Expectations]; ok {
		return m
	}
	var m map[string][]perf.Line
	if s, err := expect.LoadList(o.Expectations); err == nil && s != nil && s.Perf != nil {
		m = map[string][]perf.Line{}
		for _, l := range s.Perf.Lines {
			m[l.ID] = append(m[l.ID], l)
		}
	}
	if perfLineCache.by == nil {
		perfLineCache.by = map[string]map[string][]perf.Line{}
	}
	perfLineCache.by[o.Expectations] = m
	return m
}
