package specs

// The labels a case may carry besides those that follow from it: its
// identity (backend, kind and spec, which add prepends), its kernel's facets
// (op, type, order, scope, and a litmus kernel's shape), and the pair=S-D
// and needs=<cap> forms. Each is declared once here and listed in
// declaredLabels, the validated set (as the Kubernetes e2e framework's
// ValidFeatures): TestLabelsAreDeclared fails on a catalogue case carrying
// any other, so a misspelt label ("pref") is caught before a
// --label-filter silently selects nothing.
const (
	LabelAll       = "all"       // every rank at once (alltoall, allreduce)
	LabelAtomics   = "atomics"   // the case's verdict is about atomicity
	LabelBandwidth = "bandwidth" // a copy or kernel bandwidth measurement
	LabelBidir     = "bidir"     // copies both ways at once
	LabelCE        = "ce"        // copies by the copy engines
	LabelContended = "contended" // ranks contend on one word
	LabelControl   = "control"   // a negative or positive control
	LabelCPU       = "cpu"       // the CPU takes part
	LabelFD        = "fd"        // about the exported file descriptor
	LabelInfo      = "info"      // informational: reported, never a verdict
	LabelKernel    = "kernel"    // copies by a kernel's loads and stores
	LabelLarge     = "large"     // a mapping past 4 GiB
	LabelLatency   = "latency"   // a round-trip latency measurement
	LabelLocal     = "local"     // within one rank
	LabelManual    = "manual"    // the suite's own canaries, run only when asked for
	LabelMutation  = "mutation"  // weakened kernels must show their weak outcome
	LabelPairs     = "pairs"     // every ordered pair of ranks
	LabelPeer      = "peer"      // a rank reaches a peer's memory
	// LabelPerf: a performance case. add sets Case.Clocks from it: its
	// launches and copies sample the device clock, so that a slow result
	// can be told from a throttled GPU.
	LabelPerf    = "perf"
	LabelPlanted = "planted" // a planted fault the case must find
	LabelRead    = "read"    // reads of peer memory
	LabelSpeed   = "speed"   // a rate, not a verdict
	LabelStress  = "stress"  // long or large, to shake out rare failures
	LabelWrite   = "write"   // writes to peer memory
)

// declaredLabels is the validated set: every constant above, once.
var declaredLabels = []string{
	LabelAll, LabelAtomics, LabelBandwidth, LabelBidir, LabelCE, LabelContended, LabelControl,
	LabelCPU, LabelFD, LabelInfo, LabelKernel, LabelLarge, LabelLatency, LabelLocal, LabelManual, LabelMutation,
	LabelPairs, LabelPeer, LabelPerf, LabelPlanted, LabelRead, LabelSpeed, LabelStress, LabelWrite,
}
