package harness

import "p2patomics/harness/report"

// Identity is the case's typed identity for its result (report.Case): the
// parts its id was made of (report.CaseID), and its ordered pair (Pair,
// declared with the case). A Case built without its spec and variant (a test's
// or a hand-made case, which sets only ID) is identified by its id, read
// by report's one id parser.
func (c *Case) Identity() report.Case {
	if c.Spec == "" {
		return report.ParseCase(c.ID, c.Labels)
	}
	return report.Case{Backend: c.Backend, Kind: c.Kind, Spec: c.Spec, Variant: c.Variant, Ranks: c.Ranks, Pair: c.Pair}
}
