package specs

import (
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/power"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
)

// todayTimed is the timed samples every GPU perf case took before its
// count was sized from power, and still takes without a baseline: a
// recording run (--update-expectations, --perf-runs) takes it, so every
// perf.txt band is a spread of medians of this many samples.
const todayTimed = 5

// samplePlan is when a perf case may stop taking timed samples: after
// todayTimed, or in a run gated on a perf baseline once its samples are
// enough for every line of the metric (power.Enough: perf.MinSamples at
// least, and their own noise small against the line's tolerance, or within
// --power's perf target), so a quiet machine takes fewer (issue 52 item 2).
// The line is the one of the baseline a run on the case's GPUs is judged
// by (expect.Set.PerfFor: a folder may hold one per card).
type samplePlan struct {
	id     string
	gate   *expect.Set // the run's gate (nil: today's count)
	allow  bool        // --allow-stack-mismatch: the folder's perf.txt when none matches
	target float64     // --power's perf target (0: none)
}

// samplePlan is the plan of the perf case variant.
func (b *builder) samplePlan(variant string) samplePlan {
	return samplePlan{id: b.fullID("perf", variant, b.o.Ranks), gate: gatedPerf(b.o), allow: b.o.AllowStackMismatch, target: b.o.PowerTarget().Perf}
}

// done says whether got, the timed samples of metric so far, end the
// case's sampling in c's world.
func (p samplePlan) done(c *harness.Ctx, metric string, got []float64) bool {
	var env report.Environment
	if p.gate != nil {
		env = worldEnv(c)
	}
	return stopped(p.linesFor(env), p.target, metric, got)
}

// linesFor is the case's lines in the baseline a run on env's GPUs is
// judged by; none when the gate has no perf baseline for them (unless
// allow: its perf.txt, as the gate itself then judges).
func (p samplePlan) linesFor(env report.Environment) []perf.Line {
	if p.gate == nil {
		return nil
	}
	f := p.gate.Perf
	if b, err := p.gate.PerfFor(env); err == nil {
		f = b.File
	} else if !p.allow {
		return nil
	}
	if f == nil {
		return nil
	}
	var out []perf.Line
	for _, l := range f.Lines {
		if l.ID == p.id {
			out = append(out, l)
		}
	}
	return out
}

// stopped says whether got, the timed samples of metric so far, are
// enough: todayTimed of them, or power.Enough for every line of the metric
// (at least one).
func stopped(lines []perf.Line, target float64, metric string, got []float64) bool {
	if len(got) >= todayTimed {
		return true
	}
	seen := false
	for _, l := range lines {
		if l.Metric != metric {
			continue
		}
		if !power.Enough(l, got, target) {
			return false
		}
		seen = true
	}
	return seen
}

// worldEnv is the GPUs of c's world as a run's environment names them
// (one entry a device), for choosing the perf baseline of a card.
func worldEnv(c *harness.Ctx) report.Environment {
	var env report.Environment
	seen := map[string]bool{}
	for r := 0; r < c.N() && r < len(c.W.Infos); r++ {
		if k := c.W.DeviceKey(r); !seen[k] {
			seen[k] = true
			env.GPUs = append(env.GPUs, report.GPU{Info: c.W.Infos[r]})
		}
	}
	return env
}

// perfGateCache holds each expectation list's loaded gate, read once for
// the catalogue of every backend and kind.
var perfGateCache struct {
	sync.Mutex
	by map[string]*expect.Set
}

// gatedPerf is the run's gate when it holds a perf baseline: nil when the
// run is not gated (no --expectations), records a baseline
// (--update-expectations: its samples must be today's, as every band's
// were) or is an A/B run (--ab: B is judged against A block by block, by
// the pairs' own noise, not a line's tolerance), or when the gate has no
// perf baseline. A gate that does not load is refused by the plan before
// any case runs (harness/suite); here it sizes nothing.
func gatedPerf(o *suite.Options) *expect.Set {
	if o == nil || o.Expectations == "" || o.UpdateExpectations || o.AB != "" {
		return nil
	}
	perfGateCache.Lock()
	defer perfGateCache.Unlock()
	if s, ok := perfGateCache.by[o.Expectations]; ok {
		return s
	}
	s, err := expect.LoadList(o.Expectations)
	if err != nil || s == nil || len(s.PerfFiles) == 0 {
		s = nil
	}
	if perfGateCache.by == nil {
		perfGateCache.by = map[string]*expect.Set{}
	}
	perfGateCache.by[o.Expectations] = s
	return s
}
