package report

import "slices"

// LabelSet is a validated set of case labels, filled as each label is
// declared: one statement declares a label's name, adds it to the set and
// gives the name to use (the Kubernetes e2e framework's
// `framework.WithFeature(framework.ValidFeatures.Add("X"))`), so there is no
// second list to drift from the declarations.
type LabelSet struct {
	names []string
	twice []string
}

// Add declares name in s and returns it. A name declared twice is kept
// once and recorded (Twice), for the set's test to refuse.
func (s *LabelSet) Add(name string) string {
	if slices.Contains(s.names, name) {
		s.twice = append(s.twice, name)
		return name
	}
	s.names = append(s.names, name)
	return name
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

// LabelPerf marks a performance case. It is declared here, not with the
// catalogue's other labels in specs, because the offline tools (the perf
// gate's metric predicate, p2pcompare) ask it and must not import the
// catalogue.
var LabelPerf = ValidLabels.Add("perf")
