package specs

import (
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// A per-pair case declares its pair (Spec.Pair) and its pair=<s>-<d> label
// is derived from it (report.PairLabel), so the runner's identity carries
// the declared pair and nothing re-reads it from the labels: for every
// case of every backend and kind, the declared pair and the label agree,
// and no file of the catalogue spells the label by hand.
func TestPairIsDeclaredNotSpelt(t *testing.T) {
	pairs := 0
	for _, c := range everyCase(t) {
		got, fromLabel := c.Identity().Pair, report.LabelPair(c.Labels)
		if (got == nil) != (fromLabel == nil) || got != nil && *got != *fromLabel {
			t.Errorf("%s: declared pair %v, label pair %v", c.ID, got, fromLabel)
		}
		if got != nil {
			pairs++
		}
	}
	if pairs == 0 {
		t.Fatal("no case declares a pair: the check above ran on nothing")
	}
	// From specsDir, not the working directory: the suite binary runs this
	// test from wherever it is started, where "*.go" would match nothing.
	for f, src := range specsSources(t) {
		if strings.Contains(src, `"`+report.PairPrefix) {
			t.Errorf("%s spells the %s label: declare Spec.Pair instead", f, report.PairPrefix)
		}
	}
}
