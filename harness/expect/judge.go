package expect

import "p2patomics/harness/report"

// JudgeOne gives one finished case its verdict the way the whole run is
// judged (JudgeRun), so Ginkgo's pass/fail of its spec agrees with the
// run's verdict. s is nil when ungated. A result that already carries a
// verdict (set after a rerun) keeps it.
func JudgeOne(r report.Result, s *Set, env map[string]any) report.Result {
	r.NotSupported = report.NotSupportedReason(r, env)
	if s != nil {
		if b := s.Baseline(r); b != r.Expected {
			r.Baseline = b
		}
	}
	if r.Verdict != "" {
		return r
	}
	if s == nil && r.NotSupported != "" {
		// Ungated, a capability the device lacks is never a failure by
		// itself (deqp-runner's NotSupported); gated, the baseline decides,
		// so a case that passed there and is not supported now regresses.
		if r.Met() {
			r.Verdict = report.Expected
		} else {
			r.Verdict = report.ExpectedFail
		}
		return r
	}
	r.Verdict = Judge(r, s, nil)
	return r
}

// JudgeRun is the one verdict function: it judges every result (JudgeOne)
// and, gated, adds the baseline's missing cases (Gate), then tells the
// verdict as a Summary. gate names the expectation paths ("" ungated);
// out is the --out folder the summary's case folders are under.
// The returned Gate is nil when ungated.
func JudgeRun(results []report.Result, s *Set, env map[string]any, selected func(id string) bool, gate, out string) ([]report.Result, *report.Gate, report.Summary) {
	judged := make([]report.Result, 0, len(results))
	for _, r := range results {
		judged = append(judged, JudgeOne(r, s, env))
	}
	var g *report.Gate
	if s != nil {
		var gg report.Gate
		judged, gg = Gate(judged, s, selected)
		g = &gg
	}
	sum := report.Summarize(judged, gate, out)
	sum.MarkInjected(report.InjectRules(env))
	return judged, g, sum
}
