// p2p.h: the few device primitives kernels.cu needs, for NVPTX (clang -x cuda)
// and AMDGPU (clang -x hip), without any vendor header.
//
// Every atomic is spelled with an explicit order and scope in its name:
//   p2p_<op>_<type>_<order>_<scope>(ptr, ...)   order: relaxed|acquire|release|acqrel
//                                                scope: sys (whole system) | dev (this GPU)
//
// NVIDIA: clang-19's NVPTX backend drops syncscope and ordering on atomicrmw
// (__scoped_atomic_*, __nvvm_atom_*) and emits signed max/min for unsigned
// builtins, so every NVIDIA atomic, fence and ordered load/store is inline PTX:
//   atom.<sem>.<sys|gpu>.global.<op>.<type>, ld.<relaxed|acquire>.<scope>,
//   st.<relaxed|release>.<scope>, fence.sc.<scope> (seq_cst per the PTX
//   Atomics ABI: fence.sc + ld.acquire / fence.sc + st.relaxed).
// AMD: the __hip_atomic_* builtins (scope SYSTEM / AGENT), which LLVM lowers
// per the AMDGPU memory model; inc via __builtin_amdgcn_atomic_inc32.
#ifndef P2P_H
#define P2P_H

typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
typedef float f32;
// 16 bytes, 16-byte aligned: one vector load/store (ld.global.v2.u64 / global_load_dwordx4).
typedef unsigned long long b128 __attribute__((ext_vector_type(2)));

#define P2P_KERNEL extern "C" __attribute__((global))
#define P2P_FN static __attribute__((device, always_inline)) inline

// Expands M(args..., order, scope) for the 8 order/scope pairs of the manifest.
#define P2P_EACH_OS(M, ...)                                                            \
  M(__VA_ARGS__, relaxed, sys) M(__VA_ARGS__, relaxed, dev)                            \
  M(__VA_ARGS__, acquire, sys) M(__VA_ARGS__, acquire, dev)                            \
  M(__VA_ARGS__, release, sys) M(__VA_ARGS__, release, dev)                            \
  M(__VA_ARGS__, acqrel, sys) M(__VA_ARGS__, acqrel, dev)
#define P2P_EACH_S(M, ...) M(__VA_ARGS__, sys) M(__VA_ARGS__, dev)

#if defined(__NVPTX__)
// ---------------------------------------------------------------- NVIDIA PTX
P2P_FN u64 p2p_gid(u64 block) {
  return (u64)__nvvm_read_ptx_sreg_ctaid_x() * block + (u64)__nvvm_read_ptx_sreg_tid_x();
}
P2P_FN u64 p2p_tid(void) { return (u64)__nvvm_read_ptx_sreg_tid_x(); }
P2P_FN u64 p2p_bid(void) { return (u64)__nvvm_read_ptx_sreg_ctaid_x(); }
// Nanoseconds from the global timer.
P2P_FN u64 p2p_now_ns(void) {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Block barrier with CTA-scope ordering (bar.sync orders memory within the CTA).
P2P_FN void p2p_block_barrier(void) { asm volatile("bar.sync 0;" ::: "memory"); }
// Execution-only barrier (timing alignment, no ordering promised).
P2P_FN void p2p_exec_barrier(void) { asm volatile("bar.sync 0;" ::: "memory"); }

#define P2P_SEM_relaxed "relaxed"
#define P2P_SEM_acquire "acquire"
#define P2P_SEM_release "release"
#define P2P_SEM_acqrel "acq_rel"
#define P2P_SCOPE_sys "sys"
#define P2P_SCOPE_dev "gpu"

#define P2P_RMW(name, ptx, T, c, o, s)                                                  \
  P2P_FN T p2p_##name##_##o##_##s(T *p, T v) {                                          \
    T r;                                                                                \
    asm volatile("atom." P2P_SEM_##o "." P2P_SCOPE_##s ".global." ptx " %0, [%1], %2;"  \
                 : "=" c(r) : "l"(p), c(v) : "memory");                                 \
    return r;                                                                           \
  }
#define P2P_CAS(name, ptx, T, c, o, s)                                                  \
  P2P_FN T p2p_##name##_##o##_##s(T *p, T cmp, T v) {                                   \
    T r;                                                                                \
    asm volatile("atom." P2P_SEM_##o "." P2P_SCOPE_##s ".global.cas." ptx               \
                 " %0, [%1], %2, %3;"                                                   \
                 : "=" c(r) : "l"(p), c(cmp), c(v) : "memory");                         \
    return r;                                                                           \
  }
// PTX has no atom.sub: fetch_sub(p, v) is atom.add of the two's complement.
#define P2P_SUB(ty, T, o, s)                                                            \
  P2P_FN T p2p_sub_##ty##_##o##_##s(T *p, T v) { return p2p_add_##ty##_##o##_##s(p, (T)0 - v); }

#define P2P_LD(ty, T, c, sem, o, s)                                                     \
  P2P_FN T p2p_ld_##o##_##ty##_##s(const T *p) {                                        \
    T r;                                                                                \
    asm volatile("ld." sem "." P2P_SCOPE_##s ".global." #ty " %0, [%1];"                \
                 : "=" c(r) : "l"(p) : "memory");                                       \
    return r;                                                                           \
  }
#define P2P_ST(ty, T, c, sem, o, s)                                                     \
  P2P_FN void p2p_st_##o##_##ty##_##s(T *p, T v) {                                      \
    asm volatile("st." sem "." P2P_SCOPE_##s ".global." #ty " [%0], %1;"                \
                 :: "l"(p), c(v) : "memory");                                           \
  }
#define P2P_FENCE_SC(s)                                                                 \
  P2P_FN void p2p_fence_seqcst_##s(void) {                                              \
    asm volatile("fence.sc." P2P_SCOPE_##s ";" ::: "memory");                           \
  }

P2P_EACH_OS(P2P_RMW, add_u32, "add.u32", u32, "r")
P2P_EACH_OS(P2P_RMW, add_u64, "add.u64", u64, "l")
P2P_EACH_OS(P2P_RMW, add_f32, "add.f32", f32, "f")
P2P_EACH_OS(P2P_SUB, u32, u32)
P2P_EACH_OS(P2P_SUB, u64, u64)
P2P_EACH_OS(P2P_RMW, xchg_u32, "exch.b32", u32, "r")
P2P_EACH_OS(P2P_RMW, xchg_u64, "exch.b64", u64, "l")
P2P_EACH_OS(P2P_RMW, and_u32, "and.b32", u32, "r")
P2P_EACH_OS(P2P_RMW, and_u64, "and.b64", u64, "l")
P2P_EACH_OS(P2P_RMW, or_u32, "or.b32", u32, "r")
P2P_EACH_OS(P2P_RMW, or_u64, "or.b64", u64, "l")
P2P_EACH_OS(P2P_RMW, xor_u32, "xor.b32", u32, "r")
P2P_EACH_OS(P2P_RMW, xor_u64, "xor.b64", u64, "l")
P2P_EACH_OS(P2P_RMW, min_u32, "min.u32", u32, "r")
P2P_EACH_OS(P2P_RMW, min_u64, "min.u64", u64, "l")
P2P_EACH_OS(P2P_RMW, min_s32, "min.s32", s32, "r")
P2P_EACH_OS(P2P_RMW, min_s64, "min.s64", s64, "l")
P2P_EACH_OS(P2P_RMW, max_u32, "max.u32", u32, "r")
P2P_EACH_OS(P2P_RMW, max_u64, "max.u64", u64, "l")
P2P_EACH_OS(P2P_RMW, max_s32, "max.s32", s32, "r")
P2P_EACH_OS(P2P_RMW, max_s64, "max.s64", s64, "l")
P2P_EACH_OS(P2P_RMW, inc_u32, "inc.u32", u32, "r")
P2P_EACH_OS(P2P_CAS, cas_u32, "b32", u32, "r")
P2P_EACH_OS(P2P_CAS, cas_u64, "b64", u64, "l")
P2P_EACH_S(P2P_LD, u32, u32, "r", "relaxed", relaxed)
P2P_EACH_S(P2P_LD, u64, u64, "l", "relaxed", relaxed)
P2P_EACH_S(P2P_LD, u32, u32, "r", "acquire", acquire)
P2P_EACH_S(P2P_LD, u64, u64, "l", "acquire", acquire)
P2P_EACH_S(P2P_ST, u32, u32, "r", "relaxed", relaxed)
P2P_EACH_S(P2P_ST, u64, u64, "l", "relaxed", relaxed)
P2P_EACH_S(P2P_ST, u32, u32, "r", "release", release)
P2P_EACH_S(P2P_ST, u64, u64, "l", "release", release)
P2P_FENCE_SC(sys)
P2P_FENCE_SC(dev)

#elif defined(__AMDGPU__)
// ---------------------------------------------------------------- AMDGPU
P2P_FN u64 p2p_gid(u64 block) {
  return (u64)__builtin_amdgcn_workgroup_id_x() * block + (u64)__builtin_amdgcn_workitem_id_x();
}
P2P_FN u64 p2p_tid(void) { return (u64)__builtin_amdgcn_workitem_id_x(); }
P2P_FN u64 p2p_bid(void) { return (u64)__builtin_amdgcn_workgroup_id_x(); }
// The constant-rate "steady" counter: s_memrealtime on gfx9/gfx10,
// s_sendmsg_rtn_b64 MSG_RTN_GET_REALTIME on gfx11/gfx12; 100 MHz per AMD's
// ISA documents (never measured here: no AMD hardware has run these objects).
P2P_FN u64 p2p_now_ns(void) { return __builtin_readsteadycounter() * 10ull; }
P2P_FN void p2p_block_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// Execution-only barrier (timing alignment): s_barrier without the
// workgroup fences, so the litmus kernels' only cache maintenance is the
// tested pair's.
P2P_FN void p2p_exec_barrier(void) { __builtin_amdgcn_s_barrier(); }

#define P2P_ORD_relaxed __ATOMIC_RELAXED
#define P2P_ORD_acquire __ATOMIC_ACQUIRE
#define P2P_ORD_release __ATOMIC_RELEASE
#define P2P_ORD_acqrel __ATOMIC_ACQ_REL
#define P2P_ORD_seqcst __ATOMIC_SEQ_CST
// failure order of a compare-exchange: the order without its release part
#define P2P_FAIL_relaxed __ATOMIC_RELAXED
#define P2P_FAIL_acquire __ATOMIC_ACQUIRE
#define P2P_FAIL_release __ATOMIC_RELAXED
#define P2P_FAIL_acqrel __ATOMIC_ACQUIRE
#define P2P_SCOPE_sys __HIP_MEMORY_SCOPE_SYSTEM
#define P2P_SCOPE_dev __HIP_MEMORY_SCOPE_AGENT
#define P2P_SSCOPE_sys ""
#define P2P_SSCOPE_dev "agent"

#define P2P_RMW(name, builtin, T, o, s)                                                 \
  P2P_FN T p2p_##name##_##o##_##s(T *p, T v) {                                          \
    return builtin(p, v, P2P_ORD_##o, P2P_SCOPE_##s);                                   \
  }
#define P2P_CAS(name, T, o, s)                                                          \
  P2P_FN T p2p_##name##_##o##_##s(T *p, T cmp, T v) {                                   \
    __hip_atomic_compare_exchange_strong(p, &cmp, v, P2P_ORD_##o, P2P_FAIL_##o,         \
                                         P2P_SCOPE_##s);                                \
    return cmp;                                                                         \
  }
#define P2P_INC(name, o, s)                                                                 \
  P2P_FN u32 p2p_inc_u32_##o##_##s(u32 *p, u32 v) {                                     \
    return __builtin_amdgcn_atomic_inc32(p, v, P2P_ORD_##o, P2P_SSCOPE_##s);            \
  }
#define P2P_LD(ty, T, o, s)                                                             \
  P2P_FN T p2p_ld_##o##_##ty##_##s(const T *p) {                                        \
    return __hip_atomic_load(p, P2P_ORD_##o, P2P_SCOPE_##s);                            \
  }
#define P2P_ST(ty, T, o, s)                                                             \
  P2P_FN void p2p_st_##o##_##ty##_##s(T *p, T v) {                                      \
    __hip_atomic_store(p, v, P2P_ORD_##o, P2P_SCOPE_##s);                               \
  }

P2P_EACH_OS(P2P_RMW, add_u32, __hip_atomic_fetch_add, u32)
P2P_EACH_OS(P2P_RMW, add_u64, __hip_atomic_fetch_add, u64)
P2P_EACH_OS(P2P_RMW, add_f32, __hip_atomic_fetch_add, f32)
P2P_EACH_OS(P2P_RMW, sub_u32, __hip_atomic_fetch_sub, u32)
P2P_EACH_OS(P2P_RMW, sub_u64, __hip_atomic_fetch_sub, u64)
P2P_EACH_OS(P2P_RMW, xchg_u32, __hip_atomic_exchange, u32)
P2P_EACH_OS(P2P_RMW, xchg_u64, __hip_atomic_exchange, u64)
P2P_EACH_OS(P2P_RMW, and_u32, __hip_atomic_fetch_and, u32)
P2P_EACH_OS(P2P_RMW, and_u64, __hip_atomic_fetch_and, u64)
P2P_EACH_OS(P2P_RMW, or_u32, __hip_atomic_fetch_or, u32)
P2P_EACH_OS(P2P_RMW, or_u64, __hip_atomic_fetch_or, u64)
P2P_EACH_OS(P2P_RMW, xor_u32, __hip_atomic_fetch_xor, u32)
P2P_EACH_OS(P2P_RMW, xor_u64, __hip_atomic_fetch_xor, u64)
P2P_EACH_OS(P2P_RMW, min_u32, __hip_atomic_fetch_min, u32)
P2P_EACH_OS(P2P_RMW, min_u64, __hip_atomic_fetch_min, u64)
P2P_EACH_OS(P2P_RMW, min_s32, __hip_atomic_fetch_min, s32)
P2P_EACH_OS(P2P_RMW, min_s64, __hip_atomic_fetch_min, s64)
P2P_EACH_OS(P2P_RMW, max_u32, __hip_atomic_fetch_max, u32)
P2P_EACH_OS(P2P_RMW, max_u64, __hip_atomic_fetch_max, u64)
P2P_EACH_OS(P2P_RMW, max_s32, __hip_atomic_fetch_max, s32)
P2P_EACH_OS(P2P_RMW, max_s64, __hip_atomic_fetch_max, s64)
P2P_EACH_OS(P2P_INC, inc_u32)
P2P_EACH_OS(P2P_CAS, cas_u32, u32)
P2P_EACH_OS(P2P_CAS, cas_u64, u64)
P2P_EACH_S(P2P_LD, u32, u32, relaxed)
P2P_EACH_S(P2P_LD, u64, u64, relaxed)
P2P_EACH_S(P2P_LD, u32, u32, acquire)
P2P_EACH_S(P2P_LD, u64, u64, acquire)
P2P_EACH_S(P2P_LD, u32, u32, seqcst)
P2P_EACH_S(P2P_ST, u32, u32, relaxed)
P2P_EACH_S(P2P_ST, u64, u64, relaxed)
P2P_EACH_S(P2P_ST, u32, u32, release)
P2P_EACH_S(P2P_ST, u64, u64, release)
P2P_EACH_S(P2P_ST, u32, u32, seqcst)

#else
#error "p2p.h: build with clang -x cuda (NVPTX) or -x hip (AMDGPU) device-only"
#endif

#if defined(__NVPTX__)
// seq_cst load/store per the PTX Atomics ABI.
#define P2P_SC_LDST(s)                                                                  \
  P2P_FN u32 p2p_ld_seqcst_u32_##s(const u32 *p) {                                      \
    p2p_fence_seqcst_##s();                                                             \
    return p2p_ld_acquire_u32_##s(p);                                                   \
  }                                                                                     \
  P2P_FN void p2p_st_seqcst_u32_##s(u32 *p, u32 v) {                                    \
    p2p_fence_seqcst_##s();                                                             \
    p2p_st_relaxed_u32_##s(p, v);                                                       \
  }
P2P_SC_LDST(sys)
P2P_SC_LDST(dev)
#endif

// ---------------------------------------------------------------- common
// Delay without touching memory: an empty asm volatile the compiler may
// neither remove nor merge, so the loop runs n times (no scratch, no stack).
P2P_FN void p2p_pause(u64 n) {
  for (u64 k = 0; k < n; k++) asm volatile("" ::: "memory");
}
// True once timeout_ns has passed since start; timeout_ns == 0 never expires.
P2P_FN bool p2p_expired(u64 start, u64 timeout_ns) {
  return timeout_ns != 0 && p2p_now_ns() - start >= timeout_ns;
}

// The manifest's value helpers (kernels/manifest.go), same arithmetic.
P2P_FN u64 p2p_bit(u64 salt, u64 g, u64 bits) { return 1ull << ((salt * 7 + g) % bits); }
P2P_FN u64 p2p_tag(u64 salt, u64 g, u64 i) {
  return (salt << 48) ^ (g << 16) ^ (i & 0xffff) ^ 0x5a5a000000000001ull;
}
P2P_FN u64 p2p_minmax_value(u64 salt, u64 g, u64 operand) { return ((salt << 20) | g) - operand; }

// The witness of a check kernel (docs/KERNELS.md): every thread adds the
// elements it visited to wit[0] (one relaxed add at the kernel's scope, none
// for a thread that visited nothing) and thread 0 stores the launch's nonce in
// wit[1], so a launch that did not run, ran in part or ran an earlier time
// cannot read as {n, nonce}.
#define P2P_WITNESS(s)                                                                  \
  P2P_FN void p2p_witness_##s(u64 *wit, u64 nonce, u64 seen, u64 block) {               \
    if (seen) p2p_add_u64_relaxed_##s(&wit[0], seen);                                   \
    if (p2p_gid(block) == 0) wit[1] = nonce;                                            \
  }
P2P_WITNESS(sys)
P2P_WITNESS(dev)

#endif // P2P_H
