package expect

import (
	"fmt"
	"regexp"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// CapabilityLost says how a not-supported result contradicts what env
// advertised (verdict capability-lost), or "" when it does not. A result
// is not-supported when it skipped (not a gate's missing entry) or was
// judged not-run from a case that skipped. It contradicts the device when
// its skip is not the device's own "no" (the reason of a capability some
// GPU in env answered no, which NeedHostAtomics and NeedPeer put in the
// detail) and either:
//
//   - the case needs a capability (a needs= label) that every GPU in env
//     that answered it answered yes, and the refusal is not the kind's
//     allocation (an alloc a kind's own attributes refuse, such as
//     CUDA's HOST_NUMA VMM, is the kind's capability, not the label's); or
//   - the case's backend drives no GPU (host) and its capability table
//     (harness/backends) lists the case's kind: such a backend has no
//     device attribute that could withhold a listed kind, so a kind it
//     lists is supported wherever it opens.
//
// The sentence names the capability, the device's answer and what the
// call said (the result's detail).
func CapabilityLost(r report.Result, env report.Environment) string {
	if !notSupported(r) || deviceSaidNo(r.Detail, env) {
		return ""
	}
	said := r.Detail
	if said == "" {
		said = "(no detail)"
	}
	if !allocRefused.MatchString(r.Detail) {
		for _, l := range r.Labels {
			name, ok := strings.CutPrefix(l, report.NeedsPrefix)
			if !ok {
				continue
			}
			if dev, yes, ok := advertised(env.GPUs, name); ok {
				return fmt.Sprintf("capability lost: device %d advertises %s (%s), but the case was not supported: %s", dev, name, yes.Reason, said)
			}
		}
	}
	if b := backends.Lookup(r.Backend); b != nil && !b.GPU && b.Kind(r.Kind) != nil {
		return fmt.Sprintf("capability lost: the %s backend's capability table lists kind %s, which needs no device attribute, but the case was not supported: %s", b.Name, r.Kind, said)
	}
	return ""
}

// allocRefused matches a rank's not-supported reply to the kind's alloc
// request (harness.RemoteError's "rank N alloc: …").
var allocRefused = regexp.MustCompile(`\brank [0-9]+ alloc: `)

func notSupported(r report.Result) bool {
	switch r.Outcome {
	case report.Skip:
		return r.Verdict != report.Missing
	case report.NotRunOutcome:
		return r.JudgedFrom != nil && r.JudgedFrom.Outcome == report.Skip
	}
	return false
}

// deviceSaidNo: the detail carries the reason of a capability some GPU in
// env answered no (host atomics, MPS, peer access or atomics): the skip is
// the device's own answer.
func deviceSaidNo(detail string, env report.Environment) bool {
	no := func(c device.Cap) bool { return c.Known() && !c.OK && strings.Contains(detail, c.Reason) }
	for _, g := range env.GPUs {
		for _, name := range device.CapNames() {
			if c, ok := g.Caps.Named(name); ok && no(c) {
				return true
			}
		}
		for _, p := range g.Caps.Peers {
			if no(p.Access) || no(p.Atomics) {
				return true
			}
		}
	}
	return false
}

// advertised is the first GPU that answered capability name yes, when
// every GPU that answered it did (a GPU that did not answer says nothing
// either way; one no anywhere explains a skip).
func advertised(gpus []report.GPU, name string) (int, device.Cap, bool) {
	var first *report.GPU
	var yes device.Cap
	for i, g := range gpus {
		c, ok := g.Caps.Named(name)
		if !ok || !c.Known() {
			continue
		}
		if !c.OK {
			return 0, device.Cap{}, false
		}
		if first == nil {
			first, yes = &gpus[i], c
		}
	}
	if first == nil {
		return 0, device.Cap{}, false
	}
	return first.Ordinal, yes, true
}
