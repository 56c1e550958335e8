package specs

import (
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// The labels a case may carry besides those that follow from it: its
// identity (backend, kind and spec, which add prepends), its kernel's facets
// (op, type, order, scope, and a litmus kernel's shape), and the pair=S-D
// and needs=<cap> forms. Each is declared in one statement that also adds
// it to the validated set, report.ValidLabels (as the Kubernetes e2e
// framework's ValidFeatures.Add): TestLabelsAreDeclared fails on a
// catalogue case carrying any other, so a misspelt label ("pref") is caught
// before a --label-filter silently selects nothing.
var (
	LabelAll       = report.ValidLabels.Add("all")       // every rank at once (alltoall, allreduce)
	LabelAtomics   = report.LabelAtomics                 // the case's verdict is about atomicity (declared in report: the suite's --atomics asks it)
	LabelBandwidth = report.ValidLabels.Add("bandwidth") // a copy or kernel bandwidth measurement
	LabelBidir     = report.ValidLabels.Add("bidir")     // copies both ways at once
	LabelCE        = report.ValidLabels.Add("ce")        // copies by the copy engines
	LabelContended = report.ValidLabels.Add("contended") // ranks contend on one word
	LabelControl   = report.ValidLabels.Add("control")   // a negative or positive control
	LabelCPU       = report.ValidLabels.Add("cpu")       // the CPU takes part
	LabelFD        = report.ValidLabels.Add("fd")        // about the exported file descriptor
	LabelInfo      = report.ValidLabels.Add("info")      // informational: reported, never a verdict
	LabelKernel    = report.ValidLabels.Add("kernel")    // copies by a kernel's loads and stores
	LabelLarge     = report.ValidLabels.Add("large")     // a mapping past 4 GiB
	LabelLatency   = report.ValidLabels.Add("latency")   // a round-trip latency measurement
	LabelLocal     = report.ValidLabels.Add("local")     // within one rank
	LabelManual    = report.ValidLabels.Add("manual")    // the suite's own canaries, run only when asked for
	LabelMutation  = report.ValidLabels.Add("mutation")  // weakened kernels must show their weak outcome
	LabelPairs     = report.ValidLabels.Add("pairs")     // every ordered pair of ranks
	LabelPeer      = report.ValidLabels.Add("peer")      // a rank reaches a peer's memory
	// LabelPerf: a performance case. add sets Case.Clocks from it: its
	// launches and copies sample the device clock, so that a slow result
	// can be told from a throttled GPU.
	LabelPerf    = report.LabelPerf
	LabelPlanted = report.ValidLabels.Add("planted") // a planted fault the case must find
	LabelRead    = report.ValidLabels.Add("read")    // reads of peer memory
	LabelSpeed   = report.ValidLabels.Add("speed")   // a rate, not a verdict
	LabelStress  = report.ValidLabels.Add("stress")  // long or large, to shake out rare failures
	LabelWrite   = report.ValidLabels.Add("write")   // writes to peer memory
)

// facet is the label of what a case's kernel is (its op, type, order or
// scope, a litmus kernel's shape) or of another kind the case uses: it
// follows from the case, so it is not declared (report.Facet).
func facet[T ~string](v T) report.Label { return report.Facet(string(v)) }

// facets are kernel k's op, type, order and scope labels.
func facets(k kernels.Kernel) []report.Label {
	return []report.Label{facet(k.Op), facet(k.Type), facet(k.Order), facet(k.Scope)}
}
