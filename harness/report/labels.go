package report

import "slices"

// Label is a case label as the catalogue writes it. It is a struct, not a
// string, so that a bare literal does not compile as one: a label is either
// declared (LabelSet.Add, which registers it as it names it) or names a part
// of the case itself (Facet). A result keeps its labels as strings
// (Result.Labels); String is the one spelling.
type Label struct{ name string }

// String is the label as written to results.json and matched by
// --label-filter.
func (l Label) String() string { return l.name }

// In says whether labels (a case's or a result's) carry l.
func (l Label) In(labels []string) bool { return slices.Contains(labels, l.name) }

// Facet is the label that names something the case already is, so it is
// not declared: a part of its identity (its spec, another kind it uses) or
// of its kernel's (op, type, order, scope, a litmus kernel's shape). The
// catalogue's test checks that each such label follows from its case.
func Facet(name string) Label { return Label{name} }

// LabelNames are ls's strings, in order.
func LabelNames(ls []Label) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.name
	}
	return out
}

// LabelSet is a validated set of case labels, filled as each label is
// declared: one statement declares a label's name, adds it to the set and
// gives the label to use (the Kubernetes e2e framework's
// `framework.WithFeature(framework.ValidFeatures.Add("X"))`), so there is no
// second list to drift from the declarations.
type LabelSet struct {
	names []string
	twice []string
}

// Add declares name in s and returns its label. A name declared twice is
// kept once and recorded (Twice), for the set's test to refuse.
func (s *LabelSet) Add(name string) Label {
	if slices.Contains(s.names, name) {
		s.twice = append(s.twice, name)
		return Label{name}
	}
	s.names = append(s.names, name)
	return Label{name}
}

// Has says whether name was declared in s.
func (s *LabelSet) Has(name string) bool { return slices.Contains(s.names, name) }

// Names are the declared names, in declaration order.
func (s *LabelSet) Names() []string { return slices.Clone(s.names) }

// Twice are the names declared more than once.
func (s *LabelSet) Twice() []string { return slices.Clone(s.twice) }

// ValidLabels is the catalogue's validated set of labels beyond those that
// follow from a case (its identity, its kernel's facets, pair= and needs=):
// specs declares its vocabulary into it, and a case carrying a label
// outside it fails the catalogue's test (a misspelt "pref" would make a
// --label-filter silently select nothing).
var ValidLabels LabelSet

// The labels declared here, not with the catalogue's others in specs,
// because code that must not import the catalogue asks them: the perf
// gate's metric predicate and p2pcompare (LabelPerf), the suite's --perf
// and --atomics filters (both).
var (
	LabelPerf    = ValidLabels.Add("perf")    // a performance case
	LabelAtomics = ValidLabels.Add("atomics") // the case's verdict is about atomicity
)
