package ab

import (
	"hash/fnv"
	"sort"
	"strconv"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// DefaultBlocks is how many blocks an A/B run has by default: each case
// runs this many times on each side. Two give an interval; three give one
// that a single odd block cannot make look tight.
const DefaultBlocks = 3

// BFirst says whether block (0-based) of case id runs B before A: the
// order is drawn per block from the run's seed, so a drift over the run
// (clocks, temperature, a neighbour) falls on both sides alike and the
// order itself is reproducible.
func BFirst(seed int64, id string, block int) bool {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(seed, 10) + "\x00" + id + "\x00" + strconv.Itoa(block)))
	return h.Sum64()&1 == 1
}

// Case is one case's runs on both sides: A[i] and B[i] are block i's.
type Case struct {
	ID    string
	Repro string
	A, B  []report.Result
}

// Judge pairs every case's blocks and judges B against A: outcome changes
// and paired metrics. a and b are the two stacks as the run knows them.
func Judge(spec string, blocks int, a, b report.ABStack, cases []Case) *report.AB {
	out := &report.AB{Spec: spec, Blocks: blocks, A: a, B: b, Pairs: []report.ABPair{}}
	for _, c := range cases {
		p := report.ABPair{ID: c.ID, A: side(c.A), B: side(c.B), Repro: c.Repro}
		p.Change = change(c)
		switch p.Change {
		case report.ABRegression:
			out.Regressions++
		case report.ABImprovement:
			out.Improvements++
		}
		p.Metrics = metrics(c)
		for _, m := range p.Metrics {
			switch m.Verdict {
			case report.ABPerfRegression:
				out.PerfRegressions++
			case report.ABPerfImprovement:
				out.PerfImprovements++
			}
		}
		out.Pairs = append(out.Pairs, p)
	}
	return out
}

// Worst is the side's one result over its blocks, as a soak's is: the
// first that did not meet its expected outcome, unless a later one is
// worse (a not-supported skip, the mildest, never hides a crash).
func Worst(rs []report.Result) report.Result {
	var w report.Result
	for i, r := range rs {
		if i == 0 || (!r.OutcomeIs(r.Expected) && (w.OutcomeIs(w.Expected) || worse(r, w))) {
			w = r
		}
	}
	return w
}

func worse(a, b report.Result) bool {
	if (a.Outcome == report.Skip) != (b.Outcome == report.Skip) {
		return b.Outcome == report.Skip
	}
	return a.Outcome.Severity() > b.Outcome.Severity()
}

func side(rs []report.Result) report.ABSide {
	s := report.ABSide{Outcomes: []report.Outcome{}}
	for _, r := range rs {
		s.Outcomes = append(s.Outcomes, r.Outcome)
	}
	if len(rs) > 0 {
		w := Worst(rs)
		s.Outcome, s.NotSupported = w.Outcome, w.NotSupported
		if !w.OutcomeIs(w.Expected) {
			s.Detail = w.Detail
		}
	}
	return s
}

// change is B's outcome against A's: B missing its expected outcome where
// A met it is a regression (a failure, a crash, a timeout, a not-supported
// skip where A ran), the reverse an improvement; where both missed it, the
// more severe side is the worse.
func change(c Case) string {
	if len(c.A) == 0 || len(c.B) == 0 {
		return report.ABSame
	}
	a, b := Worst(c.A), Worst(c.B)
	metA, metB := a.OutcomeIs(a.Expected), b.OutcomeIs(b.Expected)
	switch {
	case metA && !metB:
		return report.ABRegression
	case !metA && metB:
		return report.ABImprovement
	case metA || a.Outcome == b.Outcome:
		return report.ABSame
	case worse(b, a):
		return report.ABRegression
	case worse(a, b):
		return report.ABImprovement
	}
	return report.ABSame
}

// metrics pairs each metric A and B both measured with a declared
// direction and at least perf.MinSamples samples, block by block, and
// judges it against its family's tolerance (the perf gate's floor) where
// the perf gate would gate it (perf.Gated: a perf case of a GPU backend).
// On a shared CPU the host's metrics move by tens of percent between
// blocks: judged, an A/A run there reads "improvements" by chance.
func metrics(c Case) []report.ABMetric {
	names := map[string]bool{}
	gated := map[string]bool{}
	for _, r := range c.A {
		for n, m := range r.Metrics {
			if m.Direction().Sign() != 0 && m.N >= perf.MinSamples {
				names[n] = true
				// Judged where the perf gate would gate it (a perf case of
				// a GPU backend): elsewhere (the host) the pair is shown
				// with its interval but gates nothing, as perf.txt does not.
				gated[n] = gated[n] || perf.Gated(r, m)
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []report.ABMetric
	for _, n := range sorted {
		m := report.ABMetric{Name: n, A: []float64{}, B: []float64{}, Ratios: []float64{}, Level: Level}
		for i := 0; i < len(c.A) && i < len(c.B); i++ {
			ma, okA := c.A[i].Metrics[n]
			mb, okB := c.B[i].Metrics[n]
			if !okA || !okB || ma.Median <= 0 || mb.Median <= 0 {
				continue
			}
			m.Unit, m.Better = ma.Unit, ma.Direction()
			m.A = append(m.A, ma.Median)
			m.B = append(m.B, mb.Median)
			m.Ratios = append(m.Ratios, mb.Median/ma.Median)
		}
		fam := perf.Classify(c.ID, n)
		m.Family, m.Tolerance = fam.Name, fam.PairedFloor() // a shift of the whole machine hits A and B alike
		change, low, high, ok := Paired(m.Ratios)
		if !ok {
			m.Verdict = report.ABUnjudged
			if len(m.Ratios) == 0 {
				// B never measured it: its outcome says why.
				continue
			}
		} else {
			m.Change, m.Low, m.High = round(change), round(low), round(high)
			m.Verdict = report.ABNotGated
			if gated[n] {
				m.Verdict = Decide(low, high, m.Tolerance, m.Better.Sign())
			}
		}
		out = append(out, m)
	}
	return out
}

func round(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}
