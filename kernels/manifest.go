// Package kernels holds the kernel manifest: the one list of every kernel the
// harness launches, with its name, arguments and semantics. The GPU backends
// load code objects built from kernels/src for these names; the host backend
// implements the same semantics with Go atomics. Specs only ever speak in
// manifest terms, which is what lets one spec run unchanged on every backend.
//
// Names read <op|pattern>_<type>_<order>_<sys|dev>. Every argument is a
// 64-bit word: pointers are device addresses in the launching rank's address
// space, everything else is an unsigned integer. No kernel reads blockDim or
// gridDim (AMD code object v5 keeps those in hidden kernel arguments that the
// HSA backend would have to fill): the launcher passes what a kernel needs as
// the explicit argument "block" (threads per block) or "nthreads".
//
// Thread identity: g = blockIdx.x*block + threadIdx.x (global thread id within
// the launch); "salt" is the launching rank's index, so values differ between
// ranks without the kernel knowing the world.
package kernels

import (
	"fmt"
	"slices"
	"sort"
)

// Op is what a kernel does: an atomic read-modify-write or a pattern.
type Op string

// Atomic operations. Semantics per thread g, repeated iters times on
// target[0] (see Kernel.Doc for the exact value each op uses):
const (
	OpAdd  Op = "add"  // fetch_add(target, operand)
	OpSub  Op = "sub"  // fetch_sub(target, operand)
	OpXchg Op = "xchg" // out[g] += exchange(target, Tag(salt,g,i)) (conservation check)
	OpCAS  Op = "cas"  // compare-exchange loop that adds 1; out[g] += failed attempts
	OpAnd  Op = "and"  // fetch_and(target, ^Bit(salt,g))
	OpOr   Op = "or"   // fetch_or(target, Bit(salt,g))
	OpXor  Op = "xor"  // fetch_xor(target, Bit(salt,g))
	OpMin  Op = "min"  // fetch_min(target, MinMaxValue(salt,g,operand))
	OpMax  Op = "max"  // fetch_max(target, MinMaxValue(salt,g,operand))
	OpInc  Op = "inc"  // CUDA-style atomicInc: old >= operand ? 0 : old+1
)

// Patterns.
const (
	// OpSpread: thread g adds operand to target[g], iters times, so every
	// word is contended only across ranks, never within one.
	OpSpread Op = "spread"
	// OpAllReduce: for j = g; j < n; j += nthreads: fetch_add(dst[j], src[j]).
	OpAllReduce Op = "allreduce"
	// OpMP is the message-passing litmus test; OpSB store buffering; OpIRIW
	// independent reads of independent writes. See their Doc strings.
	OpMP   Op = "mp"
	OpSB   Op = "sb"
	OpIRIW Op = "iriw"
	// OpPingPong is a dependent chain between two ranks on one word.
	OpPingPong Op = "pingpong"
	// OpCopy copies 16 bytes per thread per step (grid-stride loop).
	OpCopy Op = "copy"
	// OpRacy is the planted bug: volatile load, pause, volatile store.
	OpRacy Op = "racy"
	// OpWait spins until a word equals a value (negative controls).
	OpWait Op = "wait"
	// OpFill writes value to n words; used to initialise memory that the
	// runtime's own memset cannot reach (HSA vmem addresses).
	OpFill Op = "fill"
	// OpSum adds n words into out[0] (the copy cases' data check).
	OpSum Op = "sum"
	// Parallel testing environments (docs/LITMUS.md): many instances of a
	// litmus shape per launch with stress; each strong kernel names its
	// mutants. OpTally counts one shape's weak outcomes afterwards.
	OpPMP   Op = "pmp"
	OpPSB   Op = "psb"
	OpPLB   Op = "plb"
	OpPIRIW Op = "piriw"
	OpP22W  Op = "p22w"
	OpPCoRR Op = "pcorr"
	OpTally Op = "tally"
)

// Type is the word type the kernel operates on.
type Type string

const (
	U32  Type = "u32"
	U64  Type = "u64"
	S32  Type = "s32"
	S64  Type = "s64"
	F32  Type = "f32"
	B128 Type = "b128" // 16-byte vectors (copy kernel)
)

// Bits is the word width in bits.
func (t Type) Bits() int {
	switch t {
	case U32, S32, F32:
		return 32
	case B128:
		return 128
	}
	return 64
}

// Signed reports whether min/max compare as two's complement.
func (t Type) Signed() bool { return t == S32 || t == S64 }

// Order is the memory order of the kernel's atomics.
type Order string

const (
	Relaxed Order = "relaxed"
	Acquire Order = "acquire"
	Release Order = "release"
	AcqRel  Order = "acqrel"
	SeqCst  Order = "seqcst"
	// Plain means no atomics at all (volatile accesses): the racy counter
	// and the copy kernel.
	Plain Order = "plain"
)

// Scope is the synchronisation scope: the whole system (every GPU and the
// CPU) or the launching device only.
type Scope string

const (
	Sys Scope = "sys"
	Dev Scope = "dev"
)

// Arg is one kernel argument; every argument is a 64-bit word.
type Arg struct {
	Name string
	Ptr  bool // a device address (pointer); otherwise an integer
}

// Kernel is one manifest entry.
type Kernel struct {
	Name  string
	Op    Op
	Type  Type
	Order Order
	Scope Scope
	Args  []Arg
	// Spins is true for kernels that wait on another agent; they take a
	// timeout_ns argument (0 = unbounded) and must have every block resident.
	Spins bool
	// Info marks informational kernels whose result is reported but does not
	// decide a verdict (f32 add on fine-grained peer memory).
	Info bool
	// Mutants (strong litmus kernels): the weakened twins that must show
	// the shape's weak outcome on this machine before a pass of this kernel
	// counts as strong evidence. Mutation (on a mutant): what was weakened.
	Mutants  []string
	Mutation string
	// Witness: the kernel takes WitnessArgs and proves it ran over all
	// of its input (docs/KERNELS.md, "Witnesses").
	Witness bool
	// NoVerdict says why a launch of this kernel decides no verdict (a
	// warm-up, a timing-only launch), so dropping it may leave a case
	// passing; `make mutate` accepts its survivors (docs/FAULTS.md).
	// Empty: every case that launches it must fail when it is dropped.
	NoVerdict string
	Doc       string
}

// WitnessArgs end the argument list of every witnessed kernel: wit points at
// two u64 words the launcher zeroed; each thread adds how many elements it
// visited to wit[0] and thread 0 stores nonce (fresh per launch) in wit[1].
// A check whose witness is not {elements, nonce} did not run over its input.
var WitnessArgs = []Arg{p("wit"), v("nonce")}

// TallyBins is the size of the tally's histogram: bin TallyBin(a, b) counts
// the instances whose two result slots held a and b.
const TallyBins = 36

// TallyClass is how a result slot's value is binned: 0 (never recorded),
// 1..4 as recorded, 5 for anything larger (no shape writes it).
func TallyClass(v uint64) uint64 { return min(v, 5) }

// TallyBin is the histogram bin of a result pair.
func TallyBin(a, b uint64) uint64 { return TallyClass(a)*6 + TallyClass(b) }

// ArgIndex returns the position of the named argument, or -1.
func (k Kernel) ArgIndex(name string) int {
	for i, a := range k.Args {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func p(name string) Arg { return Arg{Name: name, Ptr: true} }
func v(name string) Arg { return Arg{Name: name} }

// Name builds a manifest name.
func Name(op Op, t Type, o Order, s Scope) string {
	return fmt.Sprintf("%s_%s_%s_%s", op, t, o, s)
}

var (
	all    []Kernel
	byName = map[string]Kernel{}
)

// RMWOrders are the orders every atomic op is built with.
var RMWOrders = []Order{Relaxed, Acquire, Release, AcqRel}

// Scopes lists both scopes, system first.
var Scopes = []Scope{Sys, Dev}

// RMWOp is one atomic read-modify-write op: the word types it is built for
// and its semantics per thread.
type RMWOp struct {
	Op    Op
	Types []Type
	Doc   string
}

// RMW is the one list of atomic read-modify-write ops. Every other list of
// them derives from it (Op.IsRMW); adding an op is one entry here plus the
// per-op semantics in the files docs/ARCHITECTURE.md names under "Adding an
// atomic op" (TestAddingAnOpTouchesTheDocumentedFiles keeps that list true).
var RMW = []RMWOp{
	{OpAdd, []Type{U32, U64}, "fetch_add(target, operand) iters times"},
	{OpSub, []Type{U32, U64}, "fetch_sub(target, operand) iters times"},
	{OpXchg, []Type{U32, U64}, "out[g] += exchange(target, Tag(salt,g,i)) (64-bit sum of returned values)"},
	{OpCAS, []Type{U32, U64}, "CAS loop adding 1, iters times; out[g] += failed attempts (if out != 0)"},
	{OpAnd, []Type{U32, U64}, "fetch_and(target, ^Bit(salt,g)) iters times"},
	{OpOr, []Type{U32, U64}, "fetch_or(target, Bit(salt,g)) iters times"},
	{OpXor, []Type{U32, U64}, "fetch_xor(target, Bit(salt,g)) iters times"},
	{OpMin, []Type{U32, U64, S32, S64}, "fetch_min(target, MinMaxValue(salt,g,operand)) iters times"},
	{OpMax, []Type{U32, U64, S32, S64}, "fetch_max(target, MinMaxValue(salt,g,operand)) iters times"},
	{OpInc, []Type{U32}, "atomicInc(target, operand): old >= operand ? 0 : old+1, iters times"},
}

// IsRMW reports whether o is one of the RMW ops (the f32 add is an add).
func (o Op) IsRMW() bool {
	return slices.ContainsFunc(RMW, func(r RMWOp) bool { return r.Op == o })
}

func add(k Kernel) {
	if _, dup := byName[k.Name]; dup {
		panic("kernels: duplicate manifest entry " + k.Name) // init-time programming error
	}
	all = append(all, k)
	byName[k.Name] = k
}

func init() {
	rmwArgs := []Arg{p("target"), p("out"), v("operand"), v("iters"), v("block"), v("salt")}
	for _, r := range RMW {
		for _, t := range r.Types {
			for _, o := range RMWOrders {
				for _, s := range Scopes {
					add(Kernel{Name: Name(r.Op, t, o, s), Op: r.Op, Type: t, Order: o, Scope: s,
						Args: rmwArgs, Doc: r.Doc})
				}
			}
		}
	}
	for _, s := range Scopes {
		add(Kernel{Name: Name(OpAdd, F32, Relaxed, s), Op: OpAdd, Type: F32, Order: Relaxed, Scope: s,
			Args: rmwArgs, Info: true,
			Doc: "float add of operand (bits of an f32) iters times; informational: AMD documents it can be a no-op on fine-grained peer memory"})
		add(Kernel{Name: Name(OpSpread, U64, Relaxed, s), Op: OpSpread, Type: U64, Order: Relaxed, Scope: s,
			Args: []Arg{p("target"), v("operand"), v("iters"), v("block")},
			Doc:  "fetch_add(&target[g], operand) iters times"})
		add(Kernel{Name: Name(OpAllReduce, U64, Relaxed, s), Op: OpAllReduce, Type: U64, Order: Relaxed, Scope: s,
			Args: []Arg{p("dst"), p("src"), v("n"), v("block"), v("nthreads")},
			Doc:  "for j = g; j < n; j += nthreads: fetch_add(&dst[j], src[j])"})
	}
	// The seed's kernel: the f32 add at acq_rel (IRIS-FIX
	// p2p_atomics_hsa.cpp adds 1.0f at acq_rel, system scope, one thread),
	// on every allocation path as the relaxed f32 add is (issue 30).
	for _, s := range Scopes {
		add(Kernel{Name: Name(OpAdd, F32, AcqRel, s), Op: OpAdd, Type: F32, Order: AcqRel, Scope: s,
			Args: rmwArgs, Info: true,
			Doc: "float add of operand (bits of an f32) iters times at acq_rel (the seed's kernel); informational, as the relaxed f32 add"})
	}
	// Litmus tests. Each word array has n entries (u32). Thread t of the
	// single block handles iterations i = t, t+block, ...; out is a u32
	// array in the launching rank's own memory.
	litmusArgs := []Arg{p("x"), p("y"), p("out"), v("n"), v("role"), v("block"), v("timeout_ns")}
	// MP's outcome is a count (stale reads), so it carries a witness: a
	// launch that never ran would count 0 stale reads (docs/KERNELS.md).
	mpArgs := append(slices.Clone(litmusArgs), WitnessArgs...)
	add(Kernel{Name: Name(OpMP, U32, AcqRel, Sys), Op: OpMP, Type: U32, Order: AcqRel, Scope: Sys, Args: mpArgs, Spins: true, Witness: true,
		Doc: "role 0: x[i]=i+1 (relaxed), then store-release y[i]=1. role 1: spin load-acquire y[i]==1 (bounded), r=x[i]; " +
			"out[0]+= (r != i+1), out[1]+= timed-out waits, out[2]=last y seen on timeout, out[3]=last i seen; " +
			"witness: rounds written (role 0) or read to the end (role 1)"})
	add(Kernel{Name: Name(OpMP, U32, Relaxed, Sys), Op: OpMP, Type: U32, Order: Relaxed, Scope: Sys, Args: mpArgs, Spins: true, Info: true, Witness: true,
		Doc: "as mp_u32_acqrel_sys with every access relaxed: weak hardware may show stale data (informational)"})
	add(Kernel{Name: Name(OpSB, U32, SeqCst, Sys), Op: OpSB, Type: U32, Order: SeqCst, Scope: Sys, Args: litmusArgs,
		Doc: "role r in {0,1}: mine=(r==0?x:y), theirs=(r==0?y:x); store-seqcst mine[i]=1, out[i]=load-seqcst theirs[i]; " +
			"forbidden: both ranks read 0 at the same i"})
	add(Kernel{Name: Name(OpIRIW, U32, SeqCst, Sys), Op: OpIRIW, Type: U32, Order: SeqCst, Scope: Sys, Args: litmusArgs, Spins: true,
		Doc: "role 0: x[i]=1; role 1: y[i]=1; role 2 (block>=2): thread 0 reads x[i] then y[i], thread 1 reads y[i] then x[i], " +
			"each waiting (bounded) for its first read to see 1; out[2i+t] = second value read (+2 if the wait timed out); " +
			"forbidden: out[2i]==0 && out[2i+1]==0"})
	addLitmusEnvs()
	ppArgs := []Arg{p("flag"), p("peer"), p("out"), v("n"), v("role"), v("timeout_ns"), v("places"), v("stride")}
	ppDoc := "each side polls its own flag and writes the other's: round i, side 0 waits (acquire) mine==i then stores " +
		"(release) other=i+1; side 1 waits mine==i+1 then stores other=i+1. role 0/1: one thread, mine=flag, other=peer; " +
		"role 2: both sides in one launch, block b is side b (side 1: mine=peer, other=flag). " +
		"The chain runs n rounds at each of places placements in turn, placement p at byte offset p*stride from flag and " +
		"peer (zeroed beforehand); timeout_ns 0 polls without a bound. out[4*side+0]=rounds done over all placements, +1=1 if a wait timed out, +2=flag value " +
		"last seen (side 0 only unless role 2)"
	for _, s := range Scopes {
		add(Kernel{Name: Name(OpPingPong, U64, AcqRel, s), Op: OpPingPong, Type: U64, Order: AcqRel, Scope: s, Spins: true,
			Args: ppArgs, Doc: ppDoc})
	}
	add(Kernel{Name: Name(OpCopy, B128, Plain, Dev), Op: OpCopy, Type: B128, Order: Plain, Scope: Dev,
		Args: []Arg{p("dst"), p("src"), v("nbytes"), v("block"), v("nthreads")},
		Doc:  "for off = 16g; off < nbytes; off += 16*nthreads: dst[off:off+16] = src[off:off+16] (nbytes % 16 == 0)"})
	add(Kernel{Name: Name(OpRacy, U64, Plain, Sys), Op: OpRacy, Type: U64, Order: Plain, Scope: Sys,
		Args: []Arg{p("target"), p("bar"), v("iters"), v("block"), v("pause"), v("parties"), v("timeout_ns")}, Spins: true,
		Doc: "planted bug: if bar != 0, thread 0 of each block joins a barrier (NVIDIA: fetch_add bar, spin until parties; " +
			"AMD, a store barrier: parties = total | first<<32, store 1 to bar[first+b], spin until bar[0..total) are all set); then " +
			"iters times: x = volatile load target[0]; spin pause iterations; volatile store x+1"})
	add(Kernel{Name: Name(OpWait, U32, Acquire, Sys), Op: OpWait, Type: U32, Order: Acquire, Scope: Sys, Spins: true,
		Args: []Arg{p("flag"), p("out"), v("expect"), v("timeout_ns")},
		Doc:  "one thread spins load-acquire flag[0] == expect; out[0]=1 on success, 2 on timeout; out[1]=last value seen. timeout 0 = unbounded"})
	add(Kernel{Name: Name(OpFill, U64, Plain, Dev), Op: OpFill, Type: U64, Order: Plain, Scope: Dev,
		Args: []Arg{p("dst"), v("value"), v("n"), v("block"), v("nthreads"), p("wit"), v("nonce")}, Witness: true,
		Doc: "for j = g; j < n; j += nthreads: dst[j] = value; witness: words written"})
	add(Kernel{Name: Name(OpSum, U64, Relaxed, Dev), Op: OpSum, Type: U64, Order: Relaxed, Scope: Dev,
		Args: []Arg{p("src"), p("out"), v("n"), v("block"), v("nthreads"), p("wit"), v("nonce")}, Witness: true,
		Doc: "out[0] += sum of src[j] for j = g; j < n; j += nthreads (one relaxed device-scope add per thread; 64-bit wrap-around); witness: words read"})
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
}

// LitmusShape is one parallel-testing-environment shape, declared once:
// its kernels (the strong one and its mutants), the outcome the tally
// counts as weak, the outcomes a run must show, its roles and whether a
// collect launch reads its outcome. Every litmus list derives from the
// rows of litmusShapes, read by one loop (addLitmusEnvs), as cilium/ebpf
// reads elf_sections.go's rows: a new shape is one row here, its kernel
// bodies (kernels.cu), its host body (rank/host/litmus.go) and its row in
// docs/LITMUS.md.
type LitmusShape struct {
	Op     Op
	Strong Order  // the strong kernel's order (Relaxed: its only mutant is device scope)
	Doc    string // what the roles do and which outcome is weak
	Relax  string // what the relaxed-order mutant drops ("" when Strong is Relaxed)
	// Fenceless names IRIW's extra mutant: acquire loads and relaxed
	// stores, only the fence that makes readers agree taken away.
	Fenceless string
	Weak      [2]uint64   // res[2k], res[2k+1] of an instance that showed the weak outcome (kernels.cu)
	Needs     [][2]uint64 // the outcomes a run must show before silence means anything
	Roles     uint64      // roles per instance: 2 unless declared
	Collect   bool        // the outcome is the final memory state, read by a role-3 launch
}

// litmusShapes are the parallel testing environments, in the order of
// docs/LITMUS.md's table and the catalogue's litmus cases.
var litmusShapes = []LitmusShape{
	{Op: OpPMP, Strong: AcqRel, Doc: "MP: role 0 x=1 (relaxed), y=1 (release); role 1 ry=y (acquire), rx=x (relaxed), res=1+2ry+rx; weak: ry=1, rx=0",
		Relax: "relaxed flag store and load instead of release/acquire",
		Weak:  [2]uint64{1, 3}, Needs: [][2]uint64{{1, 1}, {1, 4}}}, // reader saw (y, x) = (0, 0): before the writer; (1, 1): after it
	{Op: OpPSB, Strong: SeqCst, Doc: "SB: role r stores 1 to its word (seq_cst) then reads the other's (seq_cst); weak: both read 0",
		Relax: "no fence: relaxed store and load instead of fence.sc + seq_cst",
		Weak:  [2]uint64{1, 1}, Needs: [][2]uint64{{1, 2}, {2, 1}}}, // role 0 first (it reads 0, role 1 reads 1), and role 1 first
	{Op: OpPLB, Strong: AcqRel, Doc: "LB: role 0 reads x (acquire) then y=1 (release), role 1 reads y then x=1; weak: both read 1",
		Relax: "relaxed load and store instead of acquire/release",
		Weak:  [2]uint64{2, 2}, Needs: [][2]uint64{{1, 2}, {2, 1}}}, // role 0 first (reads 0; role 1 then reads 1), and role 1 first
	{Op: OpPIRIW, Strong: SeqCst, Doc: "IRIW: role 0 x=1, role 1 y=1 (seq_cst stores); role 2 reads x then y, role 3 y then x (seq_cst loads: " +
		"fence.sc between them on PTX); readers record 1+2*first+second in res slots 0 and 1, writers nothing; weak: (3, 3)",
		Relax:     "no fence: relaxed stores and loads instead of seq_cst",
		Fenceless: "acquire loads and relaxed stores without fence.sc",
		Weak:      [2]uint64{3, 3}, Needs: [][2]uint64{{1, 1}, {4, 4}}, Roles: 4}, // both readers before both writers, and after them
	{Op: OpP22W, Strong: SeqCst, Doc: "2+2W: role 0 x=1 then y=2, role 1 y=1 then x=2 (seq_cst stores); res = 1, then the collect launch " +
		"(role 3) writes 1 + final x, 1 + final y; weak: x=1 and y=1 (2, 2)",
		Relax: "no fence: relaxed stores instead of seq_cst",
		Weak:  [2]uint64{2, 2}, Needs: [][2]uint64{{3, 2}, {2, 3}}, Collect: true}, // final (x, y) = (2, 1): role 0 then role 1; (1, 2): role 1 then role 0
	// CoRR's strong kernel is already relaxed: coherence needs no
	// ordering, so its only mutant is the device-scope one.
	{Op: OpPCoRR, Strong: Relaxed, Doc: "CoRR: role 0 x=1 (relaxed); role 1 reads x twice (relaxed), res = 1+2*first+second; weak: new then old (1, 3)",
		Weak: [2]uint64{1, 3}, Needs: [][2]uint64{{1, 1}, {1, 4}}}, // reader saw (0, 0): before the write; (1, 1): after it
}

// LitmusShapes returns the parallel-testing-environment shapes, in
// declaration order.
func LitmusShapes() []LitmusShape { return slices.Clone(litmusShapes) }

// litmusShape is op's row; ok is false for an op that is no shape.
func litmusShape(op Op) (LitmusShape, bool) {
	i := slices.IndexFunc(litmusShapes, func(s LitmusShape) bool { return s.Op == op })
	if i < 0 {
		return LitmusShape{}, false
	}
	return litmusShapes[i], true
}

// LitmusWeak is the tally of a litmus environment shape: res[2k], res[2k+1]
// of an instance that showed the shape's weak outcome (kernels.cu). It
// derives from the rows (LitmusShape.Weak).
var LitmusWeak = func() map[Op][2]uint64 {
	m := map[Op][2]uint64{}
	for _, s := range litmusShapes {
		m[s.Op] = s.Weak
	}
	return m
}()

// LitmusNeeds lists, per shape, the outcomes (result pairs, as LitmusWeak)
// that a run must show before the absence of the weak outcome means
// anything: the shape's two sequential orders of its roles. A histogram
// without every one of them is degenerate (the roles never overlapped
// enough to tell an ordering from a schedule) and a strong case with it is
// inconclusive (docs/LITMUS.md, "Histograms"). It derives from the rows
// (LitmusShape.Needs).
var LitmusNeeds = func() map[Op][][2]uint64 {
	m := map[Op][][2]uint64{}
	for _, s := range litmusShapes {
		m[s.Op] = s.Needs
	}
	return m
}()

// LitmusLacking lists the outcomes of LitmusNeeds[op] that hist (a tally
// histogram) never shows; empty when the histogram is not degenerate.
func LitmusLacking(op Op, hist *[TallyBins]uint64) [][2]uint64 {
	var lack [][2]uint64
	for _, o := range LitmusNeeds[op] {
		if hist[TallyBin(o[0], o[1])] == 0 {
			lack = append(lack, o)
		}
	}
	return lack
}

// IsLitmusEnv reports whether op is a parallel-testing-environment shape.
func IsLitmusEnv(op Op) bool { _, ok := litmusShape(op); return ok }

// LitmusRoles is how many roles an instance of a shape has (2 unless its
// row declares more): role 2 runs them all in one launch, role 0/1 half of
// them each.
func LitmusRoles(op Op) uint64 {
	if s, ok := litmusShape(op); ok && s.Roles != 0 {
		return s.Roles
	}
	return 2
}

// LitmusCollect lists the shapes whose outcome is the final memory state:
// after the roles' launches, one more launch with role 3 (threads [0,n))
// turns each recorded instance's res into 1 + final x, 1 + final y. It
// derives from the rows (LitmusShape.Collect).
var LitmusCollect = func() map[Op]bool {
	m := map[Op]bool{}
	for _, s := range litmusShapes {
		if s.Collect {
			m[s.Op] = true
		}
	}
	return m
}()

// LitmusEnvArgs are the arguments of every parallel-testing-environment kernel.
var LitmusEnvArgs = []Arg{p("mem"), p("res"), v("n"), v("iters"), v("role"), v("block"), v("tblocks"),
	v("parties"), v("seed"), v("spread"), v("stress"), v("timeout_ns")}

// LitmusEnvWords is how many u32 words a litmus environment's mem spans:
// x and y slots, 32 sync words, 4096 hot (stress) words, then the AMD round
// barrier's epoch and give-up words, one each per party (LitmusBarrierWords).
func LitmusEnvWords(n, iters, spread uint64) uint64 {
	return 2*n*iters*spread + 32 + 4096 + LitmusBarrierWords(n)
}

// LitmusBarrierWords is the room for the AMD store barrier (issue 50, Q1):
// ep[parties] then lt[parties] after the hot words. A launch has at most
// roles*n/block <= 4n parties (IRIW's 4 roles, one thread per block).
func LitmusBarrierWords(n uint64) uint64 { return 2 * 4 * n }

// LitmusLateWord is the word (counted from mem) of party p's give-up flag
// in the AMD round barrier, for a launch of n instances per round, iters
// rounds, spread and parties: the host counts the parties that timed out
// from these words there, and from sync[1] on NVIDIA.
func LitmusLateWord(n, iters, spread, parties, p uint64) uint64 {
	return 2*n*iters*spread + 32 + 4096 + parties + p
}

func addLitmusEnvs() {
	envDoc := "parallel testing environment (docs/LITMUS.md): n instances per round, iters rounds; role 2 = every role in " +
		"one launch (threads [c*n,(c+1)*n) role c), role 0/1 = that half of the roles (MP/SB/LB/2+2W/CoRR: that role; IRIW: " +
		"writers 0,1 or readers 2,3); role 3 = collect (2+2W); blocks >= tblocks stress 4096 hot words " +
		"stress times; rounds aligned across parties blocks (NVIDIA: on mem's sync word, a timeout adds sync[1]; AMD: a store barrier, " +
		"each party's epoch word after the hot words, a timeout sets its give-up word, LitmusLateWord); res[2k+slot] = 1 + read. "
	for _, sh := range litmusShapes {
		for _, k := range litmusKernels(envDoc, sh) {
			add(k)
		}
		litmusEnvs = append(litmusEnvs, Name(sh.Op, U32, sh.Strong, Sys))
	}
	add(Kernel{Name: Name(OpTally, U32, Relaxed, Dev), Op: OpTally, Type: U32, Order: Relaxed, Scope: Dev,
		Args: []Arg{p("res"), p("out"), v("n"), v("block"), v("nthreads"), p("wit"), v("nonce")}, Witness: true,
		Doc: "the outcome histogram: for i = g; i < n; i += nthreads: out[TallyBin(res[2i], res[2i+1])] += 1 " +
			"(TallyBins u64 words, relaxed device adds); witness: instances read"})
}

// litmusKernels are one shape's manifest entries, read from its row: the
// strong kernel (naming its mutants), then the relaxed-order mutant (unless
// the strong kernel is relaxed), IRIW's fenceless mutant where the row names
// one, and the device-scope mutant.
func litmusKernels(envDoc string, sh LitmusShape) []Kernel {
	strong := Name(sh.Op, U32, sh.Strong, Sys)
	relaxed := Name(sh.Op, U32, Relaxed, Sys)
	dev := Name(sh.Op, U32, sh.Strong, Dev)
	var mutants []Kernel
	if sh.Strong != Relaxed {
		mutants = append(mutants, Kernel{Name: relaxed, Op: sh.Op, Type: U32, Order: Relaxed, Scope: Sys, Args: LitmusEnvArgs, Spins: true, Info: true,
			Mutation: sh.Relax, Doc: "mutant of " + strong + ": " + sh.Relax})
	}
	if sh.Fenceless != "" {
		mutants = append(mutants, Kernel{Name: Name(sh.Op, U32, Acquire, Sys), Op: sh.Op, Type: U32, Order: Acquire, Scope: Sys, Args: LitmusEnvArgs,
			Spins: true, Info: true, Mutation: sh.Fenceless, Doc: "mutant of " + strong + ": acquire loads and relaxed stores, no fence"})
	}
	mutants = append(mutants, Kernel{Name: dev, Op: sh.Op, Type: U32, Order: sh.Strong, Scope: Dev, Args: LitmusEnvArgs, Spins: true, Info: true,
		Mutation: "device (agent) scope instead of system scope", Doc: "mutant of " + strong + ": every access at device scope"})
	var names []string
	for _, m := range mutants {
		names = append(names, m.Name)
	}
	return append([]Kernel{{Name: strong, Op: sh.Op, Type: U32, Order: sh.Strong, Scope: Sys, Args: LitmusEnvArgs, Spins: true,
		Mutants: names, Doc: envDoc + sh.Doc}}, mutants...)
}

// litmusEnvs are the strong kernels of the parallel testing environments,
// in the order addLitmusEnvs declares their shapes.
var litmusEnvs []string

// LitmusEnvs returns the strong kernel of each parallel-testing-environment
// shape, in declaration order: the catalogue's litmus cases (specs) and
// docs/LITMUS.md's table (TestLitmusTableMatchesManifest) derive from it.
func LitmusEnvs() []Kernel {
	out := make([]Kernel, len(litmusEnvs))
	for i, n := range litmusEnvs {
		out[i] = byName[n]
	}
	return out
}

// All returns every manifest entry, sorted by name.
func All() []Kernel { return slices.Clone(all) }

// Lookup finds a kernel by name.
func Lookup(name string) (Kernel, bool) {
	k, ok := byName[name]
	return k, ok
}

// MustLookup is for names the harness spells in code.
func MustLookup(name string) Kernel {
	k, ok := byName[name]
	if !ok {
		panic("kernels: no manifest entry " + name) // programming error in a spec
	}
	return k
}

// Bit is the bit each thread owns for and/or/xor: 1 << ((salt*7 + g) % bits).
func Bit(salt, g uint64, bits int) uint64 {
	return 1 << ((salt*7 + g) % uint64(bits))
}

// Tag is the value thread g of rank salt writes on iteration i of xchg; it is
// never zero and differs between threads, ranks and iterations.
func Tag(salt, g, i uint64) uint64 {
	return (salt << 48) ^ (g << 16) ^ (i & 0xffff) ^ 0x5a5a000000000001
}

// MinMaxValue is the value thread g of rank salt offers to min/max: it spans
// negative and positive numbers around operand so that a signed/unsigned
// mix-up changes the answer. Truncate to the type's width before use.
func MinMaxValue(salt, g, operand uint64) uint64 {
	return (salt<<20 | g) - operand
}
