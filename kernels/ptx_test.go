package kernels

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// PTX checks: every manifest kernel is an .entry with one .u64 parameter per
// manifest argument, and every memory-model instruction in its body carries
// the scope and order its name promises. clang-19's NVPTX backend silently
// drops both for atomicrmw (docs/KERNELS.md), so kernels.cu spells every
// atomic as inline PTX and this test reads the PTX that ships.

type ptxEntry struct {
	name   string
	params []string // PTX types of the .param lines
	body   []string // instruction lines, trimmed
}

var (
	ptxEntryRe = regexp.MustCompile(`^\.visible \.entry (\w+)\($`)
	ptxParamRe = regexp.MustCompile(`^\s*\.param (\.\w+) \w+,?$`)
)

// parsePTX splits a PTX module into its entries. Device functions (.func)
// are ignored: kernels.cu inlines everything, and ptxFuncsAbsent checks it.
func parsePTX(text string) (header map[string]string, entries []ptxEntry, funcs []string) {
	header = map[string]string{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		for _, k := range []string{".version", ".target", ".address_size"} {
			if strings.HasPrefix(l, k+" ") {
				header[k] = strings.TrimSpace(strings.TrimPrefix(l, k))
			}
		}
		if strings.Contains(l, ".func ") && !strings.HasPrefix(strings.TrimSpace(l), "//") {
			funcs = append(funcs, strings.TrimSpace(l))
		}
		m := ptxEntryRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		e := ptxEntry{name: m[1]}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], ")"); i++ {
			if pm := ptxParamRe.FindStringSubmatch(lines[i]); pm != nil {
				e.params = append(e.params, pm[1])
			} else {
				e.params = append(e.params, "?"+strings.TrimSpace(lines[i]))
			}
		}
		for i++; i < len(lines) && lines[i] != "}"; i++ {
			s := strings.TrimSpace(lines[i])
			if s == "" || s == "{" || strings.HasPrefix(s, "//") {
				continue
			}
			e.body = append(e.body, s)
		}
		entries = append(entries, e)
	}
	return header, entries, funcs
}

// ptxMemOp is one memory-model instruction: atom/red/fence/membar, or ld/st
// with a .relaxed/.acquire/.release qualifier. Plain, .volatile and .param
// accesses are not memory-model operations and are not returned.
type ptxMemOp struct {
	text  string
	kind  string // atom red fence membar ld st
	sem   string // relaxed acquire release acq_rel sc ("" when absent)
	scope string // sys gpu cta cluster ("" when absent)
	op    string // atom: add exch cas and or xor min max inc ...
	typ   string // atom/ld/st: u32 b64 s32 f32 ...
}

func ptxMemOps(body []string) []ptxMemOp {
	var out []ptxMemOp
	for _, line := range body {
		ins := line
		if i := strings.IndexAny(ins, " \t"); i >= 0 {
			ins = ins[:i]
		}
		ins = strings.TrimSuffix(ins, ";")
		parts := strings.Split(ins, ".")
		kind := parts[0]
		switch kind {
		case "atom", "red", "fence", "membar", "ld", "st":
		default:
			continue
		}
		m := ptxMemOp{text: line, kind: kind}
		for _, p := range parts[1:] {
			switch p {
			case "relaxed", "acquire", "release", "acq_rel", "sc":
				m.sem = p
			case "sys", "gpu", "cta", "cluster", "gl":
				m.scope = p
			case "add", "exch", "cas", "and", "or", "xor", "min", "max", "inc", "dec":
				m.op = p
			case "u32", "u64", "s32", "s64", "b32", "b64", "f32", "f64":
				m.typ = p
			}
		}
		if (kind == "ld" || kind == "st") && m.sem == "" {
			continue // plain, volatile or param access
		}
		out = append(out, m)
	}
	return out
}

// ptxSem is the PTX .sem an RMW kernel of this order must use.
var ptxSem = map[Order]string{Relaxed: "relaxed", Acquire: "acquire", Release: "release", AcqRel: "acq_rel"}

// ptxAtomOp is the PTX atom operation and type for an RMW kernel.
func ptxAtomOp(k Kernel) (op, typ string) {
	w := fmt.Sprint(k.Type.Bits())
	switch k.Op {
	case OpAdd, OpSub: // PTX has no atom.sub: fetch_sub is atom.add of -v
		return "add", string(k.Type)
	case OpXchg:
		return "exch", "b" + w
	case OpCAS:
		return "cas", "b" + w
	case OpAnd, OpOr, OpXor:
		return string(k.Op), "b" + w
	case OpMin, OpMax:
		return string(k.Op), string(k.Type) // .u32/.u64 unsigned, .s32/.s64 signed
	case OpInc:
		return "inc", "u32"
	}
	return "", ""
}

func isRMW(k Kernel) bool { return k.Op.IsRMW() }

// checkPTX returns every disagreement between a PTX module and the manifest.
func checkPTX(text, wantTarget string) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	header, entries, funcs := parsePTX(text)
	if header[".target"] != wantTarget {
		bad(".target is %q, file claims %s", header[".target"], wantTarget)
	}
	if header[".address_size"] != "64" {
		bad(".address_size is %q", header[".address_size"])
	}
	for _, f := range funcs {
		bad("unexpected device function (kernels.cu inlines everything): %s", f)
	}
	seen := map[string]ptxEntry{}
	for _, e := range entries {
		if _, dup := seen[e.name]; dup {
			bad("%s: duplicate .entry", e.name)
		}
		seen[e.name] = e
		if _, ok := Lookup(e.name); !ok {
			bad("%s: .entry not in the manifest", e.name)
		}
	}
	for _, k := range All() {
		e, ok := seen[k.Name]
		if !ok {
			bad("%s: manifest kernel missing from the PTX", k.Name)
			continue
		}
		if len(e.params) != len(k.Args) {
			bad("%s: %d params, manifest has %d args", k.Name, len(e.params), len(k.Args))
		}
		for i, p := range e.params {
			if p != ".u64" {
				bad("%s: param %d is %s, want .u64", k.Name, i, p)
			}
		}
		errs = append(errs, checkPTXKernel(k, e.body)...)
	}
	return errs
}

// checkPTXKernel checks one kernel body against its name: every memory
// op's scope, then the ops and orders the kernel's family allows.
func checkPTXKernel(k Kernel, body []string) []string {
	c := newPTXCheck(k, body)
	switch {
	case isRMW(k) || (k.Op == OpAdd && k.Type == F32):
		c.atom()
	case IsLitmusEnv(k.Op):
		c.litmusEnv()
	case k.Op == OpTally:
		c.need("atom.relaxed", 1)
		c.only("atom.relaxed")
	case k.Op == OpSpread || k.Op == OpAllReduce || k.Op == OpSum:
		c.need("atom.relaxed", 1)
		c.only("atom.relaxed")
	case k.Op == OpMP && k.Order == AcqRel:
		c.need("st.release", 1)
		c.need("ld.acquire", 1)
		c.only("st.release", "ld.acquire", "st.relaxed", "ld.relaxed", "atom.relaxed")
	case k.Op == OpMP && k.Order == Relaxed:
		c.need("st.relaxed", 1)
		c.need("ld.relaxed", 1)
		c.only("st.relaxed", "ld.relaxed", "atom.relaxed")
	case k.Order == SeqCst: // sb, iriw: fence.sc then ld.acquire / st.relaxed (PTX Atomics ABI)
		c.need("fence.sc", 2)
		c.only("fence.sc", "ld.acquire", "st.relaxed")
		for i, m := range c.ops {
			if (m.kind == "ld" || m.kind == "st") && (i == 0 || c.ops[i-1].kind != "fence" || c.ops[i-1].sem != "sc") {
				c.bad("seq_cst %s not preceded by fence.sc: %s", m.kind, m.text)
			}
		}
	case k.Op == OpPingPong:
		c.need("ld.acquire", 1)
		c.need("st.release", 1)
		c.only("ld.acquire", "st.release")
	case k.Op == OpWait:
		c.need("ld.acquire", 1)
		c.only("ld.acquire")
	case k.Op == OpRacy:
		// The barrier is the only atomic; the counter is volatile load/store.
		c.need("atom.acq_rel", 1)
		c.only("atom.acq_rel", "ld.acquire")
		if c.count["atom.acq_rel"] != 1 {
			c.bad("want exactly one atom (the barrier), have %d", c.count["atom.acq_rel"])
		}
		if !bodyHas(body, "ld.volatile.global.u64") || !bodyHas(body, "st.volatile.global.u64") {
			c.bad("racy counter must be a volatile load and a volatile store")
		}
	case k.Op == OpCopy:
		c.only()
		if !bodyHas(body, "ld.global.v2.u64") || !bodyHas(body, "st.global.v2.u64") {
			c.bad("copy must move 16 bytes per access (ld/st.global.v2.u64)")
		}
	case k.Op == OpFill:
		// Plain stores; the one atomic is the witness's count.
		c.need("atom.relaxed", 1)
		c.only("atom.relaxed")
	default:
		c.bad("no PTX rule for this kernel: add one to ptx_test.go")
	}
	return c.errs
}

// ptxCheck is one kernel's check: its memory ops, their count by
// "kind.sem", and the failures so far.
type ptxCheck struct {
	k     Kernel
	ops   []ptxMemOp
	count map[string]int
	errs  []string
}

// newPTXCheck counts the ops and checks their scope: _sys kernels put .sys
// on everything, _dev kernels never.
func newPTXCheck(k Kernel, body []string) *ptxCheck {
	c := &ptxCheck{k: k, ops: ptxMemOps(body), count: map[string]int{}}
	for _, m := range c.ops {
		c.count[m.kind+"."+m.sem]++
		switch {
		case m.kind == "membar":
			c.bad("membar is not allowed (use fence): %s", m.text)
		case k.Scope == Sys && m.scope != "sys":
			c.bad("system-scope kernel has a non-system %s: %s", m.kind, m.text)
		case k.Scope == Dev && m.scope == "sys":
			c.bad("device-scope kernel has a system-scope %s: %s", m.kind, m.text)
		case k.Scope == Dev && m.scope != "gpu" && m.scope != "":
			c.bad("device-scope kernel has a %q-scope %s: %s", m.scope, m.kind, m.text)
		}
		if m.kind == "atom" && m.sem == "" {
			c.bad("atom without an explicit .sem: %s", m.text)
		}
	}
	return c
}

func (c *ptxCheck) bad(f string, a ...any) {
	c.errs = append(c.errs, c.k.Name+": "+fmt.Sprintf(f, a...))
}

// need fails unless the body has at least min ops of key ("kind.sem").
func (c *ptxCheck) need(key string, min int) {
	if c.count[key] < min {
		c.bad("want at least %d %s, have %d", min, key, c.count[key])
	}
}

// only fails every op whose "kind.sem" is not allowed.
func (c *ptxCheck) only(allowed ...string) {
	for _, m := range c.ops {
		key := m.kind + "." + m.sem
		if !slices.Contains(allowed, key) {
			c.bad("unexpected %s for order %s: %s", key, c.k.Order, m.text)
		}
	}
}

// atom: an RMW kernel's atoms carry its order's .sem and its op and type
// (signedness, width); CAS also loads its first guess.
func (c *ptxCheck) atom() {
	k := c.k
	sem := ptxSem[k.Order]
	op, typ := ptxAtomOp(k)
	if k.Op == OpAdd && k.Type == F32 {
		op, typ = "add", "f32"
	}
	n := 0
	for _, m := range c.ops {
		if m.kind != "atom" {
			continue
		}
		n++
		if m.sem != sem {
			c.bad("atom has .%s, order %s wants .%s: %s", m.sem, k.Order, sem, m.text)
		}
		if m.op != op || m.typ != typ {
			c.bad("atom is .%s.%s, want .%s.%s (signedness/width): %s", m.op, m.typ, op, typ, m.text)
		}
	}
	if n == 0 {
		c.bad("no atom instruction")
	}
	if k.Op == OpCAS {
		c.only("atom."+sem, "ld.relaxed") // first guess is a relaxed load at the same scope
	} else {
		c.only("atom." + sem)
	}
}

// litmusEnv: the round barrier is a relaxed atom plus relaxed polls; the
// stress and 2+2W's collect are relaxed; the tested accesses carry the
// kernel's order.
func (c *ptxCheck) litmusEnv() {
	k := c.k
	c.need("atom.relaxed", 1)
	switch {
	case k.Order == Relaxed: // the mutants (and CoRR): nothing ordered at all
		c.only("atom.relaxed", "ld.relaxed", "st.relaxed")
	case k.Op == OpPIRIW && k.Order == Acquire: // IRIW's mutant: acquire loads, no fence
		if c.count["ld.acquire"] != 2 {
			c.bad("want exactly 2 ld.acquire (the readers' loads), have %d", c.count["ld.acquire"])
		}
		c.only("atom.relaxed", "ld.relaxed", "st.relaxed", "ld.acquire")
	case k.Order == SeqCst: // sb, iriw, 2+2w: fence.sc + st.relaxed / fence.sc + ld.acquire
		// psb: one seq_cst store and one load; piriw: one store (both
		// writers share it) and the readers' two loads; p22w: two stores.
		want := map[Op][2]int{OpPSB: {2, 1}, OpPIRIW: {3, 2}, OpP22W: {2, 0}}[k.Op]
		if c.count["fence.sc"] != want[0] || c.count["ld.acquire"] != want[1] {
			c.bad("want exactly %d fence.sc and %d ld.acquire (seq_cst stores and loads), have %d and %d", want[0], want[1], c.count["fence.sc"], c.count["ld.acquire"])
		}
		c.only("atom.relaxed", "ld.relaxed", "st.relaxed", "fence.sc", "ld.acquire")
		for i, m := range c.ops {
			if m.kind == "fence" && (i+1 == len(c.ops) || (c.ops[i+1].kind+"."+c.ops[i+1].sem != "st.relaxed" && c.ops[i+1].kind+"."+c.ops[i+1].sem != "ld.acquire")) {
				c.bad("fence.sc not followed by the seq_cst store or load: %s", m.text)
			}
			if m.kind == "ld" && m.sem == "acquire" && (i == 0 || c.ops[i-1].kind != "fence") {
				c.bad("seq_cst ld not preceded by fence.sc: %s", m.text)
			}
		}
	default: // mp, lb: exactly one release store and one acquire load
		if c.count["st.release"] != 1 || c.count["ld.acquire"] != 1 {
			c.bad("want exactly 1 st.release and 1 ld.acquire, have %d and %d", c.count["st.release"], c.count["ld.acquire"])
		}
		c.only("atom.relaxed", "ld.relaxed", "st.relaxed", "st.release", "ld.acquire")
	}
}

func bodyHas(body []string, prefix string) bool {
	for _, l := range body {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func TestPTXObjects(t *testing.T) {
	for _, target := range []string{"sm_70", "sm_90"} {
		t.Run(target, func(t *testing.T) {
			o, err := ForArch(target)
			if err != nil {
				t.Fatal(err)
			}
			if o.Target != target || o.Format != FormatPTX {
				t.Fatalf("ForArch(%s) = %s/%s", target, o.Target, o.Format)
			}
			if len(o.Data) == 0 || o.Data[len(o.Data)-1] == 0 {
				t.Fatalf("PTX must be non-empty text without the NUL (the CUDA backend appends it)")
			}
			for _, e := range checkPTX(string(o.Data), target) {
				t.Error(e)
			}
		})
	}
}

// The checker itself: hand-made bodies that it must reject.
func TestPTXCheckerRejects(t *testing.T) {
	cases := []struct {
		kernel string
		body   []string
		want   string
	}{
		{"add_u64_relaxed_sys", []string{"atom.relaxed.gpu.global.add.u64 %rd1, [%rd2], %rd3;"}, "non-system atom"},
		{"add_u64_relaxed_sys", []string{"atom.global.add.u64 %rd1, [%rd2], %rd3;"}, "non-system atom"},
		{"add_u64_relaxed_dev", []string{"atom.relaxed.sys.global.add.u64 %rd1, [%rd2], %rd3;"}, "system-scope atom"},
		{"add_u32_acqrel_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd2], %r3;"}, "order acqrel wants .acq_rel"},
		{"max_u32_relaxed_sys", []string{"atom.relaxed.sys.global.max.s32 %r1, [%rd2], %r3;"}, "signedness"},
		{"min_s64_relaxed_dev", []string{"atom.relaxed.gpu.global.min.u64 %rd1, [%rd2], %rd3;"}, "signedness"},
		{"mp_u32_acqrel_sys", []string{"st.relaxed.sys.global.u32 [%rd1], %r1;", "st.release.gpu.global.u32 [%rd2], %r2;", "ld.acquire.sys.global.u32 %r3, [%rd2];"}, "non-system st"},
		{"sb_u32_seqcst_sys", []string{"fence.sc.sys;", "st.relaxed.sys.global.u32 [%rd1], %r1;", "ld.acquire.sys.global.u32 %r2, [%rd2];"}, "not preceded by fence.sc"},
		{"pmp_u32_acqrel_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "st.relaxed.sys.global.u32 [%rd1], %r1;", "st.relaxed.sys.global.u32 [%rd2], %r2;", "ld.acquire.sys.global.u32 %r3, [%rd2];"}, "exactly 1 st.release"},
		{"pmp_u32_acqrel_dev", []string{"atom.relaxed.gpu.global.add.u32 %r1, [%rd1], %r2;", "st.release.sys.global.u32 [%rd2], %r2;", "ld.acquire.gpu.global.u32 %r3, [%rd2];"}, "system-scope st"},
		{"pmp_u32_relaxed_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "st.release.sys.global.u32 [%rd2], %r2;"}, "unexpected st.release"},
		{"psb_u32_seqcst_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "fence.sc.sys;", "st.relaxed.sys.global.u32 [%rd1], %r1;", "ld.acquire.sys.global.u32 %r2, [%rd2];"}, "exactly 2 fence.sc"},
		{"psb_u32_relaxed_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "fence.sc.sys;", "st.relaxed.sys.global.u32 [%rd1], %r1;"}, "unexpected fence.sc"},
		{"plb_u32_acqrel_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "ld.relaxed.sys.global.u32 %r2, [%rd2];", "st.release.sys.global.u32 [%rd2], %r2;"}, "exactly 1 st.release and 1 ld.acquire"},
		// IRIW with the fence between the readers' loads removed.
		{"piriw_u32_seqcst_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "fence.sc.sys;", "st.relaxed.sys.global.u32 [%rd1], %r1;",
			"fence.sc.sys;", "ld.acquire.sys.global.u32 %r2, [%rd2];", "ld.acquire.sys.global.u32 %r3, [%rd3];"}, "not preceded by fence.sc"},
		{"piriw_u32_acquire_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "ld.acquire.sys.global.u32 %r2, [%rd2];",
			"fence.sc.sys;", "ld.acquire.sys.global.u32 %r3, [%rd3];"}, "unexpected fence.sc"},
		{"p22w_u32_seqcst_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "fence.sc.sys;", "st.relaxed.sys.global.u32 [%rd1], %r1;",
			"st.relaxed.sys.global.u32 [%rd2], %r1;"}, "exactly 2 fence.sc"},
		{"pcorr_u32_relaxed_sys", []string{"atom.relaxed.sys.global.add.u32 %r1, [%rd1], %r2;", "ld.relaxed.gpu.global.u32 %r2, [%rd2];"}, "non-system ld"},
		{"pcorr_u32_relaxed_dev", []string{"atom.relaxed.gpu.global.add.u32 %r1, [%rd1], %r2;", "ld.relaxed.sys.global.u32 %r2, [%rd2];"}, "system-scope ld"},
		{"wait_u32_acquire_sys", []string{"ld.relaxed.sys.global.u32 %r1, [%rd1];"}, "ld.acquire"},
		{"pingpong_u64_acqrel_dev", []string{"ld.acquire.sys.global.u64 %rd1, [%rd2];", "st.release.gpu.global.u64 [%rd2], %rd3;"}, "system-scope ld"},
	}
	for _, c := range cases {
		errs := checkPTXKernel(MustLookup(c.kernel), c.body)
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s %q: want an error containing %q, got %q", c.kernel, c.body, c.want, errs)
		}
	}
}
