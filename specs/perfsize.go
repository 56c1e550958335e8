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

// samplePlan is when a perf case may stop taking timed samples: after
// todayTimed, or in a run gated on a perf.txt once its samples are enough
// for every line of the metric (power.Enough: perf.MinSamples at least, and
// their own noise small against the line's tolerance, or within --power's
// perf target), so a quiet machine takes fewer (issue 52 item 2).
type samplePlan struct {
	lines  []perf.Line // the case's perf.txt lines (none: today's count)
	target float64     // --power's perf target (0: none)
}

// samplePlan is the plan of the perf case variant.
func (b *builder) samplePlan(variant string) samplePlan {
	return samplePlan{lines: b.perfLines[b.fullID("perf", variant, b.o.Ranks)], target: b.o.PowerTarget().Perf}
}

// done says whether got, the timed samples of metric so far, end the
// case's sampling.
func (p samplePlan) done(metric string, got []float64) bool {
	if len(got) >= todayTimed {
		return true
	}
	seen := false
	for _, l := range p.lines {
		if l.Metric != metric {
			continue
		}
		if !power.Enough(l, got, p.target) {
			return false
		}
		seen = true
	}
	return seen
}

// perfLineCache holds each expectation list's perf.txt lines by case id,
// read once for the catalogue of every backend and kind.
var perfLineCache struct {
	sync.Mutex
	by map[string]map[string][]perf.Line
}

// gatedPerfLines is the perf.txt lines of the run's gate by case id: nil
// when the run is not gated (no --expectations), records a baseline
// (--update-expectations: its samples must be today's, as every band's
// were) or is an A/B run (--ab: B is judged against A block by block, by
// the pairs' own noise, not a line's tolerance), or when the gate has no
// perf.txt. A gate that does not load is refused by the plan before any
// case runs (harness/suite); here it sizes nothing.
func gatedPerfLines(o *suite.Options) map[string][]perf.Line {
	if o == nil || o.Expectations == "" || o.UpdateExpectations || o.AB != "" {
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
