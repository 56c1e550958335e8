// Package amdreported is the one table of what a first run on an MI300X
// (gfx942, XGMI hive) is expected to show, per the field reports behind this
// project: no AMD GPU has run it yet. expectations/amd-gfx942-reported/
// fails.txt and flakes.txt, its rocm6/skips.txt, the README's AMD lines and
// docs/AMD.md are generated from it (TestInSync checks them;
// P2PAT_UPDATE=1 go test ./internal/amdreported rewrites them).
package amdreported

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Row is what one allocation path (backend.kind) is expected to do with
// P2P atomics on gfx942.
type Row struct {
	Stack   string // backend.kind, the case ids' first two words (or a longer id prefix: hip.pinned.hsavmem)
	Outcome string // the outcome of its P2P-atomic cases: "crash" or "pass"
	Summary string // the README/docs line (markdown)
	Reason  string // the fails.txt comment: the report behind it (empty for pass)
	// Doubt, when set, says why the row's outcome may be wrong on hardware:
	// its P2P-atomic ids are listed in flakes.txt under it too, so the
	// first run reports them (known-flake) without gating either way.
	Doubt string
	// SkipOn names the runtime line (a folder under the baseline, e.g.
	// "rocm6") on which every case of the stack skips; the first-run
	// script adds that folder's skips.txt to the gate on that runtime.
	SkipOn, SkipReason string
}

// Table is the reported gfx942 behaviour, one row per AMD stack.
var Table = []Row{
	{Stack: "hsa.fine", Outcome: "pass",
		Summary: "`hsa.fine` system-scope atomics pass across GPUs (the FINE_GRAINED VRAM pool of an XGMI hive)"},
	{Stack: "hsa.coarse", Outcome: "crash",
		Summary: "`hsa.coarse` P2P atomics end in a GPU-fault `crash`: the negative control, on the pool HIP VMem uses (by analogy with `hip.pinned`, not reported; the integer ops generalised, marked so in fails.txt). **Doubted**: upstream amdgpu maps fine and coarse VRAM of a gfx942 dGPU with the same MTYPE, so they may pass; flakes.txt lists them, reported (known-flake) but not gated either way, and the first run decides",
		Reason: "HSA coarse-grained VRAM (the negative control): the same pool HIP VMem takes; P2P atomics on it\n" +
			"page-fault the GPU like hip.pinned's. Reported, not measured: the first run decides.",
		Doubt: "DOUBTED: upstream amdgpu maps fine and coarse VRAM of a gfx942 dGPU with the same MTYPE\n" +
			"(gmc_v9_0_get_coherence_flags, GC 9.4.3 dGPU branch: local RW, remote NC, COHERENT never read),\n" +
			"so hsa.coarse P2P atomics may pass. fails.txt's crash is by analogy with hip.pinned, not reported:\n" +
			"these ids are not gated either way (known-flake); the first run's outcome replaces both lines."},
	{Stack: "hip.pinned", Outcome: "crash",
		Summary: "`hip.pinned` P2P atomics end in a GPU-fault `crash` (\"Memory access fault by GPU node-N … Reason: …\", parsed into `fault`): `hipMemCreate` always takes the coarse-grained pool (reported for f32 adds, the seed's kernel; the integer ops are generalised, marked so in fails.txt)",
		Reason: "HIP VMem (hipMemCreate Pinned) always takes the coarse-grained VRAM pool in CLR (rocdevice.cpp\n" +
			"deviceVmemAlloc uses gpuvm_segment_); P2P atomics on it page-fault the GPU (\"Memory access fault\n" +
			"by GPU node-N ... Reason: ...\"), for agent and system scope alike. ROCm/iris issue #418;\n" +
			"IRIS-FIX csrc/standalone/p2p_atomics_hip.cpp and README."},
	// The one case that launches through HIP on HSA memory: its id sits
	// under hip.pinned, but its memory is HSA fine-grained vmem, so
	// P2PAtomic (below) leaves its spec word out of hip.pinned's crash lines.
	{Stack: "hip.pinned.hsavmem", Outcome: "pass",
		Summary: "`hip.pinned.hsavmem.add_f32_acqrel_sys`, the seed's exact path (HSA fine-grained vmem exported as a dma-buf, the system-scope f32 add at acq_rel launched on it through `hipModuleLaunchKernel` by both GPUs), passes: the seed reports it working; on coarse-grained HIP VMem the same kernel faults (above)"},
	{Stack: "hip.uncached", Outcome: "crash",
		Summary: "`hip.uncached` (0x40000000) P2P atomics crash the same way: Uncached is honoured only on gfx12.0 by late-2026 ROCr (on ROCm 6.x `hipMemCreate` rejects it: a skip, gated by `rocm6/skips.txt`, which the first-run script adds on ROCm 6)",
		SkipOn:  "rocm6",
		SkipReason: "ROCm 6.x: hipMemCreate rejects the Uncached allocation type (0x40000000), so every\n" +
			"hip.uncached case skips (rank/hip TestUncachedOnCLR6IsASkip). Only for ROCm 6.x runs:\n" +
			"scripts/amd-first-run.sh adds this file to the gate when the ranks report a HIP 6.x runtime.",
		Reason: "HIP VMem Uncached (0x40000000): honoured only on gfx12.0 by late-2026 ROCr, so on gfx942 it takes\n" +
			"the coarse-grained pool as Pinned does and P2P atomics fault the same way (ROCm 6.x rejects the\n" +
			"type in hipMemCreate: those runs skip). ROCm/iris issue #418."},
}

// P2PAtomic matches the case ids (after the stack) whose kernels run
// atomics on memory that GPUs share: the counters, the patterns over
// several GPUs, the atomic perf cases, and the contrast case (its plain
// accesses pass, then its f32 add faults, per the seed).
var P2PAtomic = regexp.MustCompile(`^(counter|allreduce|spread|pairs|alltoall|contrast)\.|^perf\.atomic_`)

// plainInFamily matches the members of those families that are not
// expected to fault: the one that runs no atomic (the all-to-all kernel
// copy: plain peer accesses work on coarse memory), and the local atomic
// perf cases, rank 0's atomics on its own buffer (specs/perf.go): no peer
// is involved, and atomics on a GPU's own coarse VRAM work.
//
// pairs.racy_pair_in_round is not plain (issue 50, Q1): its planted pair
// runs the racy kernel, but its round's other direction runs the counter
// add from one GPU on the other's memory. The cases outside these families
// whose round barrier once was a P2P atomic (planted.racy_u64_plain_sys,
// the litmus environments, litmus.planted-nofence) stay plain: on AMD
// their barriers store (kernels.cu; kernels' TestAMDGPUDisassembly holds
// every AMD object to no atomic in them).
var plainInFamily = regexp.MustCompile(`^(alltoall\.copy_|perf\.atomic_[a-z]+_local_)`)

const failsHeader = `# stack: vendor=amd arch=gfx942
# REPORTED, NOT MEASURED HERE: no AMD GPU has run this project yet. These lines
# encode what the field reports say a first run on MI300X (gfx942) will show,
# so that run is gated against them; replace them with --update-expectations
# once it has run. Generated from internal/amdreported (the one table the
# README and docs/AMD.md are generated from too): edit the table, then
# P2PAT_UPDATE=1 go test ./internal/amdreported.
`

// seedOp matches the case ids whose kernel is an f32 add: the only op the
// field reports (IRIS-FIX's standalone reproducers) ran. Every other RMW op
// and pattern on a crashing path is the report generalised: it is expected
// to crash the same way, marked so in fails.txt, and the first run decides.
var seedOp = regexp.MustCompile(`\.add_f32_`)

// generalised is the comment above a row's generalised lines.
const generalised = "GENERALISED from the f32-add reports above to every other atomic op and pattern on this\n" +
	"path (integer adds, sub, xchg, cas, and/or/xor, min/max, inc, spread, allreduce, pairs,\n" +
	"alltoall): no report ran them. Expected to fault the same way; the first run decides."

// Fails renders fails.txt from the table and the baseline's case ids: per
// crashing row its f32-add lines (what was reported) under the row's
// reason, then the rest under the "generalised" note.
func Fails(cases []string) string {
	var b strings.Builder
	b.WriteString(failsHeader)
	for _, r := range Table {
		if r.Outcome == "pass" {
			continue
		}
		var seen, gen []string
		for _, id := range r.atomicIDs(cases) {
			if seedOp.MatchString(id) {
				seen = append(seen, id)
			} else {
				gen = append(gen, id)
			}
		}
		for i, ids := range [][]string{seen, gen} {
			if len(ids) == 0 {
				continue
			}
			sort.Strings(ids)
			b.WriteString("\n")
			comment := r.Reason + " Reported for f32 adds."
			if i == 1 {
				comment = generalised
			}
			for _, l := range strings.Split(comment, "\n") {
				b.WriteString("# " + l + "\n")
			}
			for _, id := range ids {
				fmt.Fprintf(&b, "%s,%s\n", id, r.Outcome)
			}
		}
	}
	return b.String()
}

// atomicIDs are the row's case ids whose P2P atomics the row's outcome is
// about.
func (r Row) atomicIDs(cases []string) []string {
	var ids []string
	for _, id := range cases {
		rest, ok := strings.CutPrefix(id, r.Stack+".")
		if ok && P2PAtomic.MatchString(rest) && !plainInFamily.MatchString(rest) {
			ids = append(ids, id)
		}
	}
	return ids
}

const flakesHeader = `# stack: vendor=amd arch=gfx942
# REPORTED, NOT MEASURED HERE (see fails.txt). Generated from internal/amdreported:
# the ids whose reported outcome is in doubt, reported but not gated either way.
`

// Flakes renders flakes.txt: each doubted row's P2P-atomic ids, one
// anchored id per line, under the row's doubt.
func Flakes(cases []string) string {
	var b strings.Builder
	b.WriteString(flakesHeader)
	for _, r := range Table {
		ids := r.atomicIDs(cases)
		if r.Doubt == "" || len(ids) == 0 {
			continue
		}
		sort.Strings(ids)
		b.WriteString("\n")
		for _, l := range strings.Split(r.Doubt, "\n") {
			b.WriteString("# " + l + "\n")
		}
		for _, id := range ids {
			b.WriteString(regexp.QuoteMeta(id) + "\n")
		}
	}
	return b.String()
}

// Skips renders the skips.txt of runtime line rt (a Row.SkipOn): one
// pattern per stack that skips there, under its reason.
func Skips(rt string) string {
	var b strings.Builder
	b.WriteString("# stack: vendor=amd arch=gfx942\n# Generated from internal/amdreported; edit the table there.\n")
	for _, r := range Table {
		if r.SkipOn != rt {
			continue
		}
		b.WriteString("\n")
		for _, l := range strings.Split(r.SkipReason, "\n") {
			b.WriteString("# " + l + "\n")
		}
		b.WriteString(regexp.QuoteMeta(r.Stack+".") + ".*\n")
	}
	return b.String()
}

// Runtimes are the runtime lines some row skips on, sorted.
func Runtimes() []string {
	var rts []string
	for _, r := range Table {
		if r.SkipOn != "" && !slices.Contains(rts, r.SkipOn) {
			rts = append(rts, r.SkipOn)
		}
	}
	sort.Strings(rts)
	return rts
}

// Begin and End delimit the generated block in README.md and docs/AMD.md.
const (
	Begin = "<!-- amd-reported: generated from internal/amdreported; edit the table there -->"
	End   = "<!-- amd-reported: end -->"
)

// Block is the markdown between Begin and End.
func Block() string {
	var b strings.Builder
	b.WriteString("- **MI300X (gfx942, XGMI hive)**, gated by `expectations/amd-gfx942-reported/`:\n")
	for _, r := range Table {
		fmt.Fprintf(&b, "  - %s.\n", r.Summary)
	}
	b.WriteString("  - The local atomic perf cases (`perf.atomic_*_local_*`: rank 0's atomics on its own buffer, no peer) pass on every stack: atomics on a GPU's own coarse VRAM work.\n")
	return b.String()
}

// Splice replaces the block between Begin and End in doc; an error names a
// missing or doubled marker.
func Splice(doc, block string) (string, error) {
	i, j := strings.Index(doc, Begin), strings.Index(doc, End)
	if i < 0 || j < i || strings.Count(doc, Begin) != 1 || strings.Count(doc, End) != 1 {
		return "", fmt.Errorf("want one %q line followed by one %q line", Begin, End)
	}
	return doc[:i+len(Begin)] + "\n" + block + doc[j:], nil
}
