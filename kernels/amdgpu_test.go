package kernels

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// AMD checks: the ELF header names the target, the symbol table has every
// manifest kernel (name and name.kd), each kernel descriptor says "no hidden
// arguments, no scratch, no LDS", and the disassembly (llvm-objdump-19) shows
// the scope the kernel's name promises, per target, from LLVM's AMDGPUUsage
// memory model for clang-19:
//
//	gfx90a            scope is not encoded in atomics; system-scope release
//	                  writes L2 back (buffer_wbl2), system-scope acquire
//	                  invalidates L2 (buffer_invl2); agent scope does neither.
//	                  Relaxed system and agent atomics compile identically.
//	gfx942            system-scope atomics carry sc1, agent-scope ones don't;
//	                  release/acquire cache ops are "sc0 sc1" (system) vs "sc1"
//	                  (agent); loads/stores with both sc0 and sc1 are system scope.
//	gfx1030/gfx110x   system and agent scope compile identically (L2 is the
//	                  coherence point for both): the two bodies are asserted
//	                  identical, except for min/max below.
//	gfx120x           every atomic and cache op carries scope:SCOPE_SYS or
//	                  scope:SCOPE_DEV.
//
// On every target clang-19 expands system-scope atomic min/max into a
// compare-and-swap loop (PCIe has no min/max atomics); agent-scope min/max
// stay native. That is asserted too, with the native signedness.

// EF_AMDGPU_MACH values (LLVM include/llvm/BinaryFormat/ELF.h).
var amdgpuMach = map[string]uint32{
	"gfx90a": 0x03f, "gfx942": 0x04c, "gfx1030": 0x036, "gfx1100": 0x041,
	"gfx1101": 0x046, "gfx1200": 0x048, "gfx1201": 0x04e,
}

const (
	efAMDGPUMach        = 0x0ff
	efAMDGPUXnack       = 0x300 // v4+ feature field: 0x100 any, 0x200 off, 0x300 on
	efAMDGPUSramecc     = 0xc00 // 0x400 any, 0x800 off, 0xc00 on
	efAMDGPUFeatureAny4 = 0x100
	efAMDGPUSrameccAny4 = 0x400
	emAMDGPU            = 224
	elfOSABIAMDGPUHSA   = 64
)

// hasFeatures: targets whose code objects carry xnack/sramecc bits.
var hasFeatures = map[string]bool{"gfx90a": true, "gfx942": true}

func gfxTargets() []string {
	var out []string
	for _, t := range Shipped() {
		if strings.HasPrefix(t, "gfx") {
			out = append(out, t)
		}
	}
	return out
}

func TestAMDGPUELF(t *testing.T) {
	targets := gfxTargets()
	if len(targets) != len(amdgpuMach) {
		t.Errorf("shipped AMD targets %v, want %d (one per entry of amdgpuMach)", targets, len(amdgpuMach))
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			o, err := ForArch(target)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range checkAMDGPUELF(target, o.Data) {
				t.Error(e)
			}
		})
	}
}

func checkAMDGPUELF(target string, data []byte) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return []string{"not an ELF: " + err.Error()}
	}
	if f.Machine != emAMDGPU || f.OSABI != elfOSABIAMDGPUHSA || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_DYN {
		bad("header: machine %d osabi %d class %v type %v, want 224/64/ELF64/DYN", f.Machine, f.OSABI, f.Class, f.Type)
	}
	if f.ABIVersion != 3 {
		bad("EI_ABIVERSION %d, want 3 (code object v5)", f.ABIVersion)
	}
	eflags := binary.LittleEndian.Uint32(data[0x30:0x34]) // e_flags in the ELF64 header
	if want, ok := amdgpuMach[target]; !ok || eflags&efAMDGPUMach != want {
		bad("e_flags 0x%x: EF_AMDGPU_MACH 0x%03x, file claims %s (0x%03x)", eflags, eflags&efAMDGPUMach, target, want)
	}
	if hasFeatures[target] && (eflags&efAMDGPUXnack != efAMDGPUFeatureAny4 || eflags&efAMDGPUSramecc != efAMDGPUSrameccAny4) {
		bad("e_flags 0x%x: xnack/sramecc must be \"any\" (0x100/0x400) so one object serves every mode", eflags)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return append(errs, "dynamic symbols: "+err.Error())
	}
	funcs := map[string]elf.Symbol{}
	kds := map[string]elf.Symbol{}
	for _, s := range syms {
		switch {
		case elf.ST_TYPE(s.Info) == elf.STT_FUNC:
			funcs[s.Name] = s
		case elf.ST_TYPE(s.Info) == elf.STT_OBJECT && strings.HasSuffix(s.Name, ".kd"):
			kds[strings.TrimSuffix(s.Name, ".kd")] = s
		case s.Name == "__hip_cuid_": // clang's fixed compilation-unit marker (-fuse-cuid=none)
		default:
			bad("unexpected symbol %q", s.Name)
		}
	}
	for n := range funcs {
		if _, ok := Lookup(n); !ok {
			bad("%s: kernel not in the manifest", n)
		}
	}
	for n := range kds {
		if _, ok := funcs[n]; !ok {
			bad("%s.kd without a function", n)
		}
	}
	for _, k := range All() {
		if _, ok := funcs[k.Name]; !ok {
			bad("%s: missing from the symbol table", k.Name)
		}
		kd, ok := kds[k.Name]
		if !ok {
			bad("%s.kd: missing", k.Name)
			continue
		}
		desc, err := symbolBytes(f, kd)
		if err != nil || len(desc) != 64 {
			bad("%s.kd: %v (size %d, want 64)", k.Name, err, len(desc))
			continue
		}
		// amd_kernel_code_t v3+ descriptor: group_segment_fixed_size @0,
		// private_segment_fixed_size @4, kernarg_size @8.
		group := binary.LittleEndian.Uint32(desc[0:])
		private := binary.LittleEndian.Uint32(desc[4:])
		kernarg := binary.LittleEndian.Uint32(desc[8:])
		if kernarg != uint32(8*len(k.Args)) {
			bad("%s.kd: kernarg_size %d, want %d (8 per manifest argument, no hidden arguments)", k.Name, kernarg, 8*len(k.Args))
		}
		if private != 0 || group != 0 {
			bad("%s.kd: private (scratch) %d and group (LDS) %d bytes, want 0 and 0", k.Name, private, group)
		}
	}
	return errs
}

func symbolBytes(f *elf.File, s elf.Symbol) ([]byte, error) {
	for _, sec := range f.Sections {
		if sec.Type == elf.SHT_NOBITS || s.Value < sec.Addr || s.Value+s.Size > sec.Addr+sec.Size {
			continue
		}
		b, err := sec.Data()
		if err != nil {
			return nil, err
		}
		off := s.Value - sec.Addr
		return b[off : off+s.Size], nil
	}
	return nil, fmt.Errorf("no section holds 0x%x", s.Value)
}

// disassemble runs llvm-objdump-19 and returns each function's instructions
// (text before the // comment, whitespace collapsed).
func disassemble(t *testing.T, target string, data []byte) map[string][]string {
	t.Helper()
	objdump := needTool(t, "llvm-objdump-19")
	f, err := os.CreateTemp(t.TempDir(), "*."+target+".hsaco")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(objdump, "-d", "--mcpu="+target, f.Name()).Output()
	if err != nil {
		t.Fatalf("llvm-objdump-19 -d --mcpu=%s: %v", target, err)
	}
	return parseDisasm(string(out))
}

var disasmFuncRe = regexp.MustCompile(`^[0-9a-f]+ <([^>]+)>:$`)

func parseDisasm(text string) map[string][]string {
	fns := map[string][]string{}
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		if m := disasmFuncRe.FindStringSubmatch(l); m != nil {
			cur = m[1]
			fns[cur] = nil
			continue
		}
		if cur == "" || !strings.HasPrefix(l, "\t") {
			continue
		}
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		l = strings.Join(strings.Fields(l), " ")
		if l != "" {
			fns[cur] = append(fns[cur], l)
		}
	}
	return fns
}

type amdInsn struct {
	text, mnem string
	fields     map[string]bool
}

func amdInsns(body []string) []amdInsn {
	out := make([]amdInsn, 0, len(body))
	for _, l := range body {
		fs := strings.Fields(strings.ReplaceAll(l, ",", " "))
		in := amdInsn{text: l, mnem: fs[0], fields: map[string]bool{}}
		for _, f := range fs[1:] {
			in.fields[f] = true
		}
		out = append(out, in)
	}
	return out
}

func (i amdInsn) isAtomic() bool {
	return strings.Contains(i.mnem, "_atomic_")
}

// isCacheOp: cache write-back / invalidate instructions the memory model emits.
func (i amdInsn) isCacheOp() bool {
	switch i.mnem {
	case "buffer_wbl2", "buffer_inv", "buffer_invl2", "buffer_wbinvl1_vol", "buffer_gl0_inv", "buffer_gl1_inv",
		"global_wb", "global_inv", "global_wbinv":
		return true
	}
	return false
}

// isLoad: a global or flat load (not an atomic, which returns through
// _atomic_ mnemonics).
func isLoad(i amdInsn) bool {
	return !i.isAtomic() && (strings.HasPrefix(i.mnem, "global_load") || strings.HasPrefix(i.mnem, "flat_load"))
}

// sysStoreSites counts the p2p_st_*_sys calls in each polling kernel's
// source (kernels/src/kernels.cu): mp stores x, the flag and, on a
// timeout, out[2] and out[3]; sb its own word; iriw a writer's word;
// pingpong the other side's flag; wait none (out[] is written plainly).
// Every such store is an atomic store at system scope and must compile to
// a system-scoped global store; the out[] results are plain stores.
var sysStoreSites = map[Op]int{OpMP: 4, OpSB: 1, OpIRIW: 1, OpPingPong: 1, OpWait: 0}

// isStore: a global or flat store (not an atomic RMW).
func isStore(i amdInsn) bool {
	return !i.isAtomic() && (strings.HasPrefix(i.mnem, "global_store") || strings.HasPrefix(i.mnem, "flat_store"))
}

// polls: the ops whose kernels spin on or read back a flag written by
// another agent with atomic loads (litmus tests, ping-pong, wait).
func polls(k Kernel) bool {
	switch k.Op {
	case OpMP, OpSB, OpIRIW, OpPingPong, OpWait:
		return k.Order != Plain
	}
	return false
}

func (i amdInsn) isMem() bool {
	return strings.HasPrefix(i.mnem, "global_") || strings.HasPrefix(i.mnem, "flat_") ||
		strings.HasPrefix(i.mnem, "buffer_") || strings.HasPrefix(i.mnem, "scratch_")
}

// Acquire / release evidence per target: a mnemonic that appears only when
// an acquire (invalidate) or release (write-back) is emitted, at each scope;
// "" where that scope needs no instruction (only waits).
type amdRule struct {
	acqSys, acqDev, relSys, relDev string
	sameBodies                     func(k Kernel) bool // sys and dev bodies must be identical
}

func notMinMax(k Kernel) bool { return k.Op != OpMin && k.Op != OpMax }

var amdRules = map[string]amdRule{
	"gfx90a": {acqSys: "buffer_invl2", acqDev: "buffer_wbinvl1_vol", relSys: "buffer_wbl2", relDev: "",
		sameBodies: func(k Kernel) bool { return notMinMax(k) && k.Order == Relaxed }},
	"gfx942":  {acqSys: "buffer_inv", acqDev: "buffer_inv", relSys: "buffer_wbl2", relDev: "buffer_wbl2"},
	"gfx1030": {acqSys: "buffer_gl0_inv", acqDev: "buffer_gl0_inv", sameBodies: notMinMax},
	"gfx1100": {acqSys: "buffer_gl0_inv", acqDev: "buffer_gl0_inv", sameBodies: notMinMax},
	"gfx1101": {acqSys: "buffer_gl0_inv", acqDev: "buffer_gl0_inv", sameBodies: notMinMax},
	"gfx1200": {acqSys: "global_inv", acqDev: "global_inv", relSys: "global_wb", relDev: "global_wb"},
	"gfx1201": {acqSys: "global_inv", acqDev: "global_inv", relSys: "global_wb", relDev: "global_wb"},
}

// checkAMDGPUKernel checks one kernel body on one target, in steps: each
// instruction against the target's scope encoding, the acquire/release
// cache ops the order needs, min/max's operation, and the counts of
// atomics and system-scoped accesses the kernel's source implies.
func checkAMDGPUKernel(target string, k Kernel, body []string) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, k.Name+" ["+target+"]: "+fmt.Sprintf(f, a...)) }
	rule, ok := amdRules[target]
	if !ok {
		return []string{"no rule for target " + target}
	}
	ins := amdInsns(body)
	sys := k.Scope == Sys
	n := amdCount(ins, bad)
	if scope := amdScopeRules[target]; scope != nil {
		for _, i := range ins {
			scope(k, i, sys, bad)
		}
	}
	checkAMDOrder(k, rule, ins, bad)
	if k.Op == OpMin || k.Op == OpMax {
		checkAMDMinMax(k, ins, bad)
	}
	checkAMDCounts(target, k, body, n, bad)
	return errs
}

// badf records one failure of a check.
type badf func(format string, a ...any)

// amdCounts are the instruction counts the later checks compare with the
// kernel's source.
type amdCounts struct {
	atomics   int
	sysLoads  int // system-scoped (non-RMW) loads: the polls of a litmus kernel
	sysStores int // system-scoped stores: its flags and published data
}

// amdCount counts atomics and system-scoped loads and stores, and fails any
// scratch access (a spilled kernel).
func amdCount(ins []amdInsn, bad badf) amdCounts {
	var n amdCounts
	for _, i := range ins {
		sysScoped := i.fields["sc0"] && i.fields["sc1"] || i.fields["scope:SCOPE_SYS"]
		if isLoad(i) && sysScoped {
			n.sysLoads++
		}
		if isStore(i) && sysScoped {
			n.sysStores++
		}
		if strings.HasPrefix(i.mnem, "scratch_") {
			bad("uses scratch: %s", i.text)
		}
		if i.isAtomic() {
			n.atomics++
		}
	}
	return n
}

// amdScopeRules check one instruction's scope bits, per target family that
// encodes scope in the instruction.
var amdScopeRules = map[string]func(k Kernel, i amdInsn, sys bool, bad badf){
	"gfx942":  gfx942Scope,
	"gfx1200": gfx12Scope,
	"gfx1201": gfx12Scope,
	"gfx90a": func(k Kernel, i amdInsn, sys bool, bad badf) {
		if !sys && (i.mnem == "buffer_wbl2" || i.mnem == "buffer_invl2") {
			bad("device-scope kernel writes back / invalidates L2 (system-scope release/acquire): %s", i.text)
		}
	},
}

func gfx942Scope(k Kernel, i amdInsn, sys bool, bad badf) {
	both := i.fields["sc0"] && i.fields["sc1"]
	switch {
	case i.isAtomic() && sys && !i.fields["sc1"]:
		bad("system-scope atomic without sc1: %s", i.text)
	case i.isAtomic() && !sys && i.fields["sc1"]:
		bad("device-scope kernel has a system-scope (sc1) atomic: %s", i.text)
	case i.isCacheOp() && sys && !both:
		bad("system-scope kernel has a non-system cache op: %s", i.text)
	case !i.isAtomic() && i.isMem() && !sys && both:
		bad("device-scope kernel has a system-scope (sc0 sc1) access: %s", i.text)
	case !i.isAtomic() && !i.isCacheOp() && i.isMem() && sys && i.fields["sc1"] && !i.fields["sc0"]:
		// sc1 alone on a load or store is an agent-scope atomic
		// access (LLVM's GFX940 memory model): a poll or flag store
		// that other GPUs' writes need not reach.
		bad("system-scope kernel has an agent-scope (sc1) load or store: %s", i.text)
	case isStore(i) && sys && polls(k) && i.fields["sc0"] && !i.fields["sc1"]:
		// sc0 alone is a workgroup-scope atomic store (LLVM's
		// GFX940 memory model); a plain store has no bits, an
		// atomic store at system scope both (issue 30, N4).
		bad("system-scope %s kernel has a workgroup-scope (sc0) store: %s", k.Op, i.text)
	}
}

func gfx12Scope(k Kernel, i amdInsn, sys bool, bad badf) {
	hasSys, hasDev := i.fields["scope:SCOPE_SYS"], i.fields["scope:SCOPE_DEV"]
	narrow := i.fields["scope:SCOPE_SE"] || i.fields["scope:SCOPE_CU"]
	switch {
	case !sys && hasSys:
		bad("device-scope kernel has a system-scope access: %s", i.text)
	case sys && i.isAtomic() && !hasSys:
		bad("system-scope atomic without scope:SCOPE_SYS: %s", i.text)
	case sys && !i.isCacheOp() && i.isMem() && hasDev:
		bad("system-scope kernel has a device-scope (SCOPE_DEV) load or store: %s", i.text)
	case sys && polls(k) && isStore(i) && narrow:
		// SCOPE_SE or SCOPE_CU on a polling kernel's flag or data
		// store: other GPUs need not see it (issue 30, N4).
		bad("system-scope %s kernel has a store below system scope: %s", k.Op, i.text)
	case !sys && i.isAtomic() && !hasDev:
		bad("device-scope atomic without scope:SCOPE_DEV: %s", i.text)
	case i.isCacheOp() && narrow && k.Op != OpRacy: // racy's block barrier is workgroup scope
		bad("unexpected workgroup-scope cache op: %s", i.text)
	case i.isCacheOp() && !narrow && sys && !hasSys:
		bad("system-scope kernel has a non-system cache op: %s", i.text)
	}
}

// checkAMDOrder is the order's evidence: acquire invalidates after, release
// writes back before, and a relaxed kernel has no cache op.
func checkAMDOrder(k Kernel, rule amdRule, ins []amdInsn, bad badf) {
	has := func(m string) bool {
		for _, i := range ins {
			if i.mnem == m {
				return true
			}
		}
		return false
	}
	acq, rel := rule.acqDev, rule.relDev
	if k.Scope == Sys {
		acq, rel = rule.acqSys, rule.relSys
	}
	wantAcq := k.Order == Acquire || k.Order == AcqRel || k.Order == SeqCst
	wantRel := k.Order == Release || k.Order == AcqRel || k.Order == SeqCst
	if k.Op == OpMP && k.Order == AcqRel {
		wantAcq, wantRel = true, true
	}
	if k.Op == OpP22W {
		// 2+2W only stores: a seq_cst store is a release (LLVM's AMDGPU
		// memory model), with nothing to acquire.
		wantAcq = false
	}
	if k.Order == Plain {
		return
	}
	if wantAcq && acq != "" && !has(acq) {
		bad("order %s at this scope needs %s (acquire)", k.Order, acq)
	}
	if wantRel && rel != "" && !has(rel) {
		bad("order %s at this scope needs %s (release)", k.Order, rel)
	}
	if !wantAcq && !wantRel {
		for _, i := range ins {
			if i.isCacheOp() {
				bad("relaxed kernel has a cache op: %s", i.text)
			}
		}
	}
}

// checkAMDMinMax: min/max's operation and signedness; system-scope min/max
// become CAS loops.
func checkAMDMinMax(k Kernel, ins []amdInsn, bad badf) {
	sys := k.Scope == Sys
	native := 0
	for _, i := range ins {
		if !i.isAtomic() {
			continue
		}
		if strings.Contains(i.mnem, "cmpswap") {
			if !sys {
				bad("device-scope %s should be a native atomic, not a CAS loop: %s", k.Op, i.text)
			}
			continue
		}
		native++
		signed := strings.Contains(i.mnem, "_s"+string(k.Op)) || strings.Contains(i.mnem, string(k.Op)+"_i")
		unsigned := strings.Contains(i.mnem, "_u"+string(k.Op)) || strings.Contains(i.mnem, string(k.Op)+"_u")
		if !strings.Contains(i.mnem, string(k.Op)) || signed != k.Type.Signed() || unsigned == k.Type.Signed() {
			bad("atomic %s has the wrong operation or signedness for %s: %s", i.mnem, k.Type, i.text)
		}
	}
	if sys && native != 0 {
		bad("clang-19 expands system-scope %s into a CAS loop; a native one appeared", k.Op)
	}
}

// checkAMDCounts compares the counts with what the kernel's source implies.
func checkAMDCounts(target string, k Kernel, body []string, n amdCounts, bad badf) {
	sys := k.Scope == Sys
	if isRMW(k) && n.atomics == 0 {
		bad("no atomic instruction")
	}
	// A polling kernel's atomic loads are its evidence: at system scope at
	// least one must be system-scoped on the targets that encode scope in
	// the instruction (gfx940's sc0 sc1, gfx12's scope:SCOPE_SYS).
	scoped := target == "gfx942" || target == "gfx1200" || target == "gfx1201"
	if sys && polls(k) && scoped && n.sysLoads == 0 {
		bad("system-scope %s kernel has no system-scoped load (its polls would be agent-scope)", k.Op)
	}
	// Its atomic stores likewise: a store demoted to no scope bits looks
	// like the plain out[] writes beside it, so the count of system-scoped
	// stores must reach the source's system-scope atomic store sites
	// (sysStoreSites); one fewer is a flag or datum other GPUs need not see.
	if want, ok := sysStoreSites[k.Op]; ok && sys && polls(k) && scoped && n.sysStores < want {
		bad("system-scope %s kernel has %d system-scoped stores; its source has %d system-scope atomic stores (one was demoted in scope)", k.Op, n.sysStores, want)
	}
	// Issue 50, Q1: the round barriers of the planted racy counter and of
	// the litmus environments join ranks on two GPUs on one rank's memory;
	// on AMD they are store barriers, because P2P read-modify-writes fault
	// on the coarse-grained paths (and PCIe may not route them, Q3). So
	// these kernels hold no atomic at all: the counter stays a plain load
	// and store, the litmus shapes only load and store.
	if (k.Op == OpRacy || slices.Equal(k.Args, LitmusEnvArgs)) && n.atomics != 0 {
		bad("want no atomic (a store barrier: P2P read-modify-writes fault on coarse AMD memory), have %d", n.atomics)
	}
	if k.Op == OpCopy && !(strings.Contains(strings.Join(body, "\n"), "x4 ") || strings.Contains(strings.Join(body, "\n"), "_b128 ")) {
		bad("copy must move 16 bytes per access (dwordx4 / b128)")
	}
}

// checkAMDGPU checks every manifest kernel of one disassembled object.
func checkAMDGPU(target string, fns map[string][]string) []string {
	var errs []string
	for n := range fns {
		if _, ok := Lookup(n); !ok {
			errs = append(errs, fmt.Sprintf("[%s] function %s not in the manifest", target, n))
		}
	}
	rule := amdRules[target]
	for _, k := range All() {
		body, ok := fns[k.Name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s [%s]: not in the disassembly", k.Name, target))
			continue
		}
		errs = append(errs, checkAMDGPUKernel(target, k, body)...)
		// Where the target does not encode scope, the device-scope twin must
		// compile to exactly the same code: that is the claim, asserted.
		if k.Scope == Sys && rule.sameBodies != nil && rule.sameBodies(k) {
			twin := strings.TrimSuffix(k.Name, "_sys") + "_dev"
			if _, ok := Lookup(twin); !ok {
				continue
			}
			if a, b := strings.Join(body, "\n"), strings.Join(fns[twin], "\n"); a != b {
				errs = append(errs, fmt.Sprintf("%s [%s]: system and device scope compile identically on this target, but %s differs", k.Name, target, twin))
			}
		}
	}
	return errs
}

func TestAMDGPUDisassembly(t *testing.T) {
	for _, target := range gfxTargets() {
		t.Run(target, func(t *testing.T) {
			o, err := ForArch(target)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range checkAMDGPU(target, disassemble(t, target, o.Data)) {
				t.Error(e)
			}
		})
	}
}

func TestAMDGPUCheckerRejects(t *testing.T) {
	cases := []struct {
		target, kernel string
		body           []string
		want           string
	}{
		{"gfx942", "add_u64_relaxed_sys", []string{"global_atomic_add_x2 v2, v[0:1], s[0:1]"}, "without sc1"},
		{"gfx942", "add_u64_relaxed_dev", []string{"global_atomic_add_x2 v2, v[0:1], s[0:1] sc1"}, "system-scope (sc1)"},
		{"gfx942", "add_u32_release_sys", []string{"buffer_wbl2 sc1", "global_atomic_add v0, v1, s[0:1] sc1"}, "non-system cache op"},
		{"gfx1200", "add_u32_relaxed_sys", []string{"global_atomic_add_u32 v0, v1, s[0:1] scope:SCOPE_DEV"}, "without scope:SCOPE_SYS"},
		{"gfx90a", "add_u32_release_sys", []string{"global_atomic_add v0, v1, s[4:5]"}, "needs buffer_wbl2"},
		{"gfx90a", "add_u32_acquire_dev", []string{"global_atomic_add v0, v1, s[4:5]", "buffer_invl2", "buffer_wbinvl1_vol"}, "invalidates L2"},
		{"gfx1100", "max_u32_relaxed_dev", []string{"global_atomic_max_i32 v0, v1, s[0:1]"}, "signedness"},
		// Issue 17, defect 4: agent-scope polls in system-scope kernels.
		{"gfx942", "wait_u32_acquire_sys", []string{"global_load_dword v1, v0, s[0:1] sc1", "buffer_inv sc0 sc1"}, "agent-scope (sc1) load"},
		{"gfx942", "wait_u32_acquire_sys", []string{"global_load_dword v1, v0, s[0:1]", "buffer_inv sc0 sc1"}, "no system-scoped load"},
		{"gfx1201", "wait_u32_acquire_sys", []string{"global_load_b32 v1, v0, s[0:1] scope:SCOPE_DEV", "global_inv scope:SCOPE_SYS"}, "device-scope (SCOPE_DEV) load"},
		{"gfx1201", "wait_u32_acquire_sys", []string{"global_load_b32 v1, v0, s[0:1]", "global_inv scope:SCOPE_SYS"}, "no system-scoped load"},
		// Issue 30, N4: a sys polling kernel's flag store demoted in scope.
		{"gfx942", "mp_u32_acqrel_sys", []string{"global_load_dword v10, v[6:7], off sc0 sc1", "buffer_inv sc0 sc1", "buffer_wbl2 sc0 sc1", "global_store_dword v[8:9], v4, off sc0"}, "workgroup-scope (sc0) store"},
		{"gfx942", "mp_u32_acqrel_sys", []string{"global_load_dword v10, v[6:7], off sc0 sc1", "buffer_inv sc0 sc1", "buffer_wbl2 sc0 sc1", "global_store_dword v[8:9], v4, off"}, "one was demoted"},
		{"gfx1201", "mp_u32_acqrel_sys", []string{"global_load_b32 v12, v[7:8], off scope:SCOPE_SYS", "global_inv scope:SCOPE_SYS", "global_wb scope:SCOPE_SYS", "global_store_b32 v[10:11], v3, off scope:SCOPE_SE"}, "store below system scope"},
		{"gfx1201", "mp_u32_acqrel_sys", []string{"global_load_b32 v12, v[7:8], off scope:SCOPE_SYS", "global_inv scope:SCOPE_SYS", "global_wb scope:SCOPE_SYS", "global_store_b32 v[10:11], v3, off"}, "one was demoted"},
		// Issue 50, Q1: the round barrier as a P2P read-modify-write.
		{"gfx942", "racy_u64_plain_sys", []string{"global_atomic_add_x2 v0, v[2:3], s[10:11] sc1"}, "want no atomic"},
		{"gfx942", "pmp_u32_acqrel_sys", []string{"global_atomic_add v0, v1, s[0:1] sc1", "buffer_inv sc0 sc1", "buffer_wbl2 sc0 sc1"}, "want no atomic"},
	}
	for _, c := range cases {
		errs := checkAMDGPUKernel(c.target, MustLookup(c.kernel), c.body)
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s %s: want an error containing %q, got %q", c.target, c.kernel, c.want, errs)
		}
	}
	// gfx10/gfx11: a sys/dev pair that differs is rejected.
	fns := map[string][]string{}
	for _, k := range All() {
		fns[k.Name] = []string{"s_endpgm"}
	}
	fns["add_u32_relaxed_dev"] = []string{"global_atomic_add_u32 v0, v1, s[0:1] glc", "s_endpgm"}
	if errs := strings.Join(checkAMDGPU("gfx1100", fns), "\n"); !strings.Contains(errs, "add_u32_relaxed_sys [gfx1100]: system and device scope compile identically") {
		t.Errorf("gfx1100 differing twin not rejected: %s", errs)
	}
}

// TestDemotedFlagStoreIsRejected (issue 30, N4/D4): the real
// mp_u32_acqrel_sys bodies with the release flag store (the last
// system-scoped store) demoted in scope: to sc0 or no bits on gfx942, to
// SCOPE_SE or no scope on gfx1201. a44624c's checker accepted all four.
func TestDemotedFlagStoreIsRejected(t *testing.T) {
	for _, c := range []struct{ target, from, to string }{
		{"gfx942", " sc0 sc1", " sc0"}, {"gfx942", " sc0 sc1", ""},
		{"gfx1201", " scope:SCOPE_SYS", " scope:SCOPE_SE"}, {"gfx1201", " scope:SCOPE_SYS", ""},
	} {
		o, err := ForArch(c.target)
		if err != nil {
			t.Fatal(err)
		}
		k := MustLookup("mp_u32_acqrel_sys")
		body := append([]string(nil), disassemble(t, c.target, o.Data)[k.Name]...)
		if errs := checkAMDGPUKernel(c.target, k, body); len(errs) != 0 {
			t.Fatalf("%s: the real body is rejected: %v", c.target, errs)
		}
		last := -1
		for i, l := range body {
			if strings.Contains(l, "_store_") && strings.Contains(l, c.from) {
				last = i
			}
		}
		if last < 0 {
			t.Fatalf("%s: no system-scoped store in mp_u32_acqrel_sys", c.target)
		}
		body[last] = strings.Replace(body[last], c.from, c.to, 1)
		if errs := checkAMDGPUKernel(c.target, k, body); len(errs) == 0 {
			t.Errorf("%s: flag store demoted to %q accepted: %s", c.target, c.to, body[last])
		}
	}
}
