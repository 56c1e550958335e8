// kernels.cu: every kernel of kernels/manifest.go, one source for NVIDIA
// (clang -x cuda -> PTX) and AMD (clang -x hip -> one ELF per gfx target).
// Built by scripts/build-kernels.sh; checked by go test ./kernels.
//
// Rules (see docs/KERNELS.md): extern "C", parameters in manifest order, every
// parameter 8 bytes; thread id g = blockIdx.x*block + threadIdx.x with block an
// argument (no kernel reads blockDim/gridDim: AMD code object v5 keeps them in
// hidden arguments); every spin is bounded by p2p_expired(timeout_ns), 0 =
// unbounded; no stack, no scratch, no LDS.
#include "p2p.h"

// ------------------------------------------------------------------ RMW ops
// Manifest args: target, out, operand, iters, block, salt.
#define P2P_RMW_HEAD(op, ty, T, o, s)                                                   \
  P2P_KERNEL void op##_##ty##_##o##_##s(T *target, u64 *out, u64 operand, u64 iters,    \
                                        u64 block, u64 salt) {                          \
    const u64 g = p2p_gid(block);                                                       \
    (void)out; (void)operand; (void)salt; (void)g;

// fetch_<op>(target, VAL) iters times; VAL may use g, salt, operand.
#define P2P_K_SIMPLE(op, ty, T, VAL, o, s)                                              \
  P2P_RMW_HEAD(op, ty, T, o, s)                                                         \
    const T val = (T)(VAL);                                                             \
    for (u64 i = 0; i < iters; i++) p2p_##op##_##ty##_##o##_##s(target, val);           \
  }

// out[g] += exchange(target, Tag(salt,g,i)): 64-bit sum of the values returned.
#define P2P_K_XCHG(ty, T, o, s)                                                         \
  P2P_RMW_HEAD(xchg, ty, T, o, s)                                                       \
    u64 sum = 0;                                                                        \
    for (u64 i = 0; i < iters; i++)                                                     \
      sum += (u64)p2p_xchg_##ty##_##o##_##s(target, (T)p2p_tag(salt, g, i));            \
    if (out) out[g] += sum;                                                             \
  }

// CAS loop adding 1, iters times; out[g] += failed attempts (if out != 0).
// The first guess is a relaxed atomic load at the kernel's scope.
#define P2P_K_CAS(ty, T, o, s)                                                          \
  P2P_RMW_HEAD(cas, ty, T, o, s)                                                        \
    u64 fails = 0;                                                                      \
    T old = p2p_ld_relaxed_##ty##_##s(target);                                          \
    for (u64 i = 0; i < iters; i++) {                                                   \
      for (;;) {                                                                        \
        T prev = p2p_cas_##ty##_##o##_##s(target, old, (T)(old + 1));                   \
        if (prev == old) { old = (T)(old + 1); break; }                                 \
        fails++;                                                                        \
        old = prev;                                                                     \
      }                                                                                 \
    }                                                                                   \
    if (out) out[g] += fails;                                                           \
  }

P2P_EACH_OS(P2P_K_SIMPLE, add, u32, u32, operand)
P2P_EACH_OS(P2P_K_SIMPLE, add, u64, u64, operand)
P2P_EACH_OS(P2P_K_SIMPLE, sub, u32, u32, operand)
P2P_EACH_OS(P2P_K_SIMPLE, sub, u64, u64, operand)
P2P_EACH_OS(P2P_K_XCHG, u32, u32)
P2P_EACH_OS(P2P_K_XCHG, u64, u64)
P2P_EACH_OS(P2P_K_CAS, u32, u32)
P2P_EACH_OS(P2P_K_CAS, u64, u64)
P2P_EACH_OS(P2P_K_SIMPLE, and, u32, u32, ~p2p_bit(salt, g, 32))
P2P_EACH_OS(P2P_K_SIMPLE, and, u64, u64, ~p2p_bit(salt, g, 64))
P2P_EACH_OS(P2P_K_SIMPLE, or, u32, u32, p2p_bit(salt, g, 32))
P2P_EACH_OS(P2P_K_SIMPLE, or, u64, u64, p2p_bit(salt, g, 64))
P2P_EACH_OS(P2P_K_SIMPLE, xor, u32, u32, p2p_bit(salt, g, 32))
P2P_EACH_OS(P2P_K_SIMPLE, xor, u64, u64, p2p_bit(salt, g, 64))
P2P_EACH_OS(P2P_K_SIMPLE, min, u32, u32, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, min, u64, u64, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, min, s32, s32, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, min, s64, s64, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, max, u32, u32, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, max, u64, u64, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, max, s32, s32, p2p_minmax_value(salt, g, operand))
P2P_EACH_OS(P2P_K_SIMPLE, max, s64, s64, p2p_minmax_value(salt, g, operand))
// atomicInc: old >= operand ? 0 : old+1 (PTX atom.inc, AMDGPU atomic_inc).
P2P_EACH_OS(P2P_K_SIMPLE, inc, u32, u32, operand)

// Float add, informational. operand holds the bits of an f32.
#define P2P_K_FADD(s)                                                                   \
  P2P_RMW_HEAD(add, f32, f32, relaxed, s)                                               \
    const f32 val = __builtin_bit_cast(f32, (u32)operand);                              \
    for (u64 i = 0; i < iters; i++) p2p_add_f32_relaxed_##s(target, val);               \
  }
P2P_K_FADD(sys)
P2P_K_FADD(dev)

// The seed's kernel (IRIS-FIX p2p_atomics_hsa.cpp): the f32 add at acq_rel,
// informational as the relaxed one is (issue 30).
#define P2P_K_FADD_ACQREL(s)                                                            \
  P2P_RMW_HEAD(add, f32, f32, acqrel, s)                                                \
    const f32 val = __builtin_bit_cast(f32, (u32)operand);                              \
    for (u64 i = 0; i < iters; i++) p2p_add_f32_acqrel_##s(target, val);                \
  }
P2P_K_FADD_ACQREL(sys)
P2P_K_FADD_ACQREL(dev)

// ------------------------------------------------------------------ patterns
// spread: fetch_add(&target[g], operand) iters times.
P2P_KERNEL void spread_u64_relaxed_sys(u64 *target, u64 operand, u64 iters, u64 block) {
  const u64 g = p2p_gid(block);
  for (u64 i = 0; i < iters; i++) p2p_add_u64_relaxed_sys(&target[g], operand);
}
P2P_KERNEL void spread_u64_relaxed_dev(u64 *target, u64 operand, u64 iters, u64 block) {
  const u64 g = p2p_gid(block);
  for (u64 i = 0; i < iters; i++) p2p_add_u64_relaxed_dev(&target[g], operand);
}

// allreduce: for j = g; j < n; j += nthreads: fetch_add(&dst[j], src[j]).
P2P_KERNEL void allreduce_u64_relaxed_sys(u64 *dst, const u64 *src, u64 n, u64 block, u64 nthreads) {
  for (u64 j = p2p_gid(block); j < n; j += nthreads) p2p_add_u64_relaxed_sys(&dst[j], src[j]);
}
P2P_KERNEL void allreduce_u64_relaxed_dev(u64 *dst, const u64 *src, u64 n, u64 block, u64 nthreads) {
  for (u64 j = p2p_gid(block); j < n; j += nthreads) p2p_add_u64_relaxed_dev(&dst[j], src[j]);
}

// Message passing. role 0 writes data then flag; role 1 waits for the flag
// and reads the data. Thread t handles i = t, t+block, ... A wait that times
// out is counted in out[1], records out[2] (y seen) and out[3] (i), and ends
// that thread's loop (a lost flag would otherwise cost timeout_ns per i).
#define P2P_K_MP(o, ST_Y, LD_Y)                                                         \
  P2P_KERNEL void mp_u32_##o##_sys(u32 *x, u32 *y, u32 *out, u64 n, u64 role, u64 block, \
                                   u64 timeout_ns, u64 *wit, u64 nonce) {               \
    const u64 t = p2p_gid(block);                                                       \
    u64 seen = 0;                                                                       \
    if (role == 0) {                                                                    \
      for (u64 i = t; i < n; i += block, seen++) {                                      \
        p2p_st_relaxed_u32_sys(&x[i], (u32)(i + 1));                                    \
        ST_Y(&y[i], 1u);                                                                \
      }                                                                                 \
      p2p_witness_sys(wit, nonce, seen, block);                                         \
      return;                                                                           \
    }                                                                                   \
    u32 stale = 0;                                                                      \
    for (u64 i = t; i < n; i += block) {                                                \
      const u64 start = p2p_now_ns();                                                   \
      u32 f;                                                                            \
      bool late = false;                                                                \
      while ((f = LD_Y(&y[i])) != 1u) {                                                 \
        if (p2p_expired(start, timeout_ns)) { late = true; break; }                     \
      }                                                                                 \
      if (late) {                                                                       \
        p2p_add_u32_relaxed_sys(&out[1], 1u);                                           \
        p2p_st_relaxed_u32_sys(&out[2], f);                                             \
        p2p_st_relaxed_u32_sys(&out[3], (u32)i);                                        \
        break;                                                                          \
      }                                                                                 \
      const u32 r = p2p_ld_relaxed_u32_sys(&x[i]);                                      \
      stale += (r != (u32)(i + 1));                                                     \
      seen++;                                                                           \
    }                                                                                   \
    if (stale) p2p_add_u32_relaxed_sys(&out[0], stale);                                 \
    p2p_witness_sys(wit, nonce, seen, block);                                           \
  }
P2P_K_MP(acqrel, p2p_st_release_u32_sys, p2p_ld_acquire_u32_sys)
P2P_K_MP(relaxed, p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys)

// Store buffering: store-seqcst mine[i]=1, then out[i] = load-seqcst theirs[i].
P2P_KERNEL void sb_u32_seqcst_sys(u32 *x, u32 *y, u32 *out, u64 n, u64 role, u64 block,
                                  u64 timeout_ns) {
  (void)timeout_ns;
  u32 *mine = role == 0 ? x : y;
  u32 *theirs = role == 0 ? y : x;
  for (u64 i = p2p_gid(block); i < n; i += block) {
    p2p_st_seqcst_u32_sys(&mine[i], 1u);
    out[i] = p2p_ld_seqcst_u32_sys(&theirs[i]);
  }
}

// IRIW: roles 0 and 1 write x and y; role 2 threads 0 and 1 read them in
// opposite orders. Every out[2i+t] is written (0/1, +2 when the wait timed
// out), so a thread never leaves a 0,0 that looks like the forbidden outcome;
// after its first timeout a reader checks each later flag once without spinning.
P2P_KERNEL void iriw_u32_seqcst_sys(u32 *x, u32 *y, u32 *out, u64 n, u64 role, u64 block,
                                    u64 timeout_ns) {
  const u64 t = p2p_gid(block);
  if (role == 0 || role == 1) {
    u32 *w = role == 0 ? x : y;
    for (u64 i = t; i < n; i += block) p2p_st_seqcst_u32_sys(&w[i], 1u);
    return;
  }
  if (t >= 2 || block < 2) return;
  const u32 *a = t == 0 ? x : y;
  const u32 *b = t == 0 ? y : x;
  bool gave_up = false;
  for (u64 i = 0; i < n; i++) {
    const u64 start = p2p_now_ns();
    bool late = false;
    while (p2p_ld_seqcst_u32_sys(&a[i]) != 1u) {
      if (gave_up || p2p_expired(start, timeout_ns)) { late = true; gave_up = true; break; }
    }
    const u32 second = p2p_ld_seqcst_u32_sys(&b[i]);
    out[2 * i + t] = second + (late ? 2u : 0u);
  }
}

// Ping-pong: a dependent chain between two agents. Each side polls a flag in
// its OWN memory and writes the other's (every wait is a local poll, every
// hand-over one posted store). Round i: side 0 waits mine == i, stores
// other = i+1; side 1 waits mine == i+1, stores other = i+1. role 0/1: one
// thread, mine = flag, other = peer. role 2: both sides in one launch of two
// blocks on one device (block b is side b; side 1's mine is peer), so local
// latency needs no second process (processes time-slice a GPU without MPS).
// out[4*side + 0] = rounds done, +1 = 1 on a timeout, +2 = flag last seen.
// The clock is read only after 64 unsuccessful polls, so a flag that is
// already there costs no timer read. Of five loop shapes measured in one
// program on one H200 pair against a tight unbounded loop (no timeout:
// 0.810 us local, 2.486 us across NVLink), this one came closest with a
// bound: +2.7% local, +2.5% across; groups of 8 unrolled polls were +5%
// local, a do-while of 1024 polls +7% (results/h200x2-580.159.04/
// latency-kernel-variants/).
// places/stride: the chain runs n rounds at each of places flag placements
// in turn, placement p at byte offset p*stride from flag and from peer (all
// zeroed before the launch). A one-GPU round trip depends on which L2 slice
// holds the flags' line (0.82 to 1.08 us across 16 placements on one H200),
// so one sample averages many placements; doing it inside one launch keeps
// the two ranks' launch skew (up to ~0.2 ms) out of all but one start.
// timeout_ns 0 polls without a bound: the loop is then the reference's
// tight loop. With the bound (below) the kernel read 6.6% slower than that
// on one H200 and 2% across NVLink (64 placements, one launch, in the
// reference program), so the perf cases time unbounded samples only after
// a bounded warm-up has shown that the path delivers every flag.
#define P2P_K_PINGPONG(s)                                                                 \
  P2P_KERNEL void pingpong_u64_acqrel_##s(u64 *flag, u64 *peer, u64 *out, u64 n, u64 role, \
                                          u64 timeout_ns, u64 places, u64 stride) {       \
    const u64 side = role == 2 ? p2p_bid() : role;                                        \
    if (p2p_tid() != 0 || side > 1 || (role != 2 && p2p_bid() != 0)) return;             \
    u64 *mine0 = (role == 2 && side == 1) ? peer : flag;                                  \
    u64 *other0 = (role == 2 && side == 1) ? flag : peer;                                 \
    u64 *o = out + (role == 2 ? 4 * side : 0);                                            \
    u64 done = 0, seen = 0, late = 0;                                                     \
    for (u64 p = 0; p < places && !late; p++) {                                           \
      u64 *mine = (u64 *)((char *)mine0 + p * stride);                                    \
      u64 *other = (u64 *)((char *)other0 + p * stride);                                  \
      for (u64 i = 0; i < n; i++) {                                                       \
        const u64 want = side == 0 ? i : i + 1;                                           \
        if (timeout_ns == 0) {                                                            \
          while ((seen = p2p_ld_acquire_u64_##s(mine)) != want) {                         \
          }                                                                               \
        } else {                                                                          \
          u64 spins = 0, start = 0;                                                       \
          while ((seen = p2p_ld_acquire_u64_##s(mine)) != want) {                         \
            if (++spins == 64) start = p2p_now_ns();                                      \
            else if (spins > 64 && (spins & 63) == 0 && p2p_expired(start, timeout_ns)) { \
              late = 1;                                                                   \
              break;                                                                      \
            }                                                                             \
          }                                                                               \
        }                                                                                 \
        if (late) break;                                                                  \
        p2p_st_release_u64_##s(other, i + 1);                                             \
        done++;                                                                           \
      }                                                                                   \
    }                                                                                     \
    o[0] = done;                                                                          \
    o[1] = late;                                                                          \
    o[2] = seen;                                                                          \
  }
P2P_K_PINGPONG(sys)
P2P_K_PINGPONG(dev)

// Copy: 16 bytes per thread per step, grid-stride.
P2P_KERNEL void copy_b128_plain_dev(b128 *dst, const b128 *src, u64 nbytes, u64 block,
                                    u64 nthreads) {
  const u64 n = nbytes / 16;
  for (u64 j = p2p_gid(block); j < n; j += nthreads) dst[j] = src[j];
}

// The planted racy counter: volatile load, pause, volatile store. With bar
// != 0, thread 0 of each block first joins a system-scope barrier (a bounded
// spin until parties arrived; on timeout it goes on).
// NVIDIA: fetch_add on bar[0], then spin until it reaches parties.
// AMD (issue 50, Q1): a store barrier, no read-modify-write, because P2P
// atomics fault on the coarse-grained paths this control runs on. parties
// holds the total in its low 32 bits and this launch's first slot in its
// high 32 bits; block b stores 1 (release) to bar[first + b], then thread 0
// spins (acquire) until each of bar[0 .. total) is non-zero.
P2P_KERNEL void racy_u64_plain_sys(u64 *target, u64 *bar, u64 iters, u64 block, u64 pause,
                                   u64 parties, u64 timeout_ns) {
  (void)block;
#if defined(__AMDGPU__)
  if (bar) {
    if (p2p_tid() == 0) {
      const u64 total = parties & 0xffffffffull, first = parties >> 32;
      p2p_st_release_u64_sys(&bar[first + p2p_bid()], 1);
      const u64 start = p2p_now_ns();
      for (u64 i = 0; i < total; i++) {
        while (p2p_ld_acquire_u64_sys(&bar[i]) == 0 && !p2p_expired(start, timeout_ns)) {
        }
      }
    }
    p2p_block_barrier();
  }
#else
  if (bar) {
    if (p2p_tid() == 0) {
      p2p_add_u64_acqrel_sys(bar, 1);
      const u64 start = p2p_now_ns();
      while (p2p_ld_acquire_u64_sys(bar) < parties && !p2p_expired(start, timeout_ns)) {
      }
    }
    p2p_block_barrier();
  }
#endif
  volatile u64 *v = target;
  for (u64 i = 0; i < iters; i++) {
    const u64 x = v[0];
    p2p_pause(pause);
    v[0] = x + 1;
  }
}

// Wait: one thread spins load-acquire flag[0] == expect. out[0] = 1 on
// success, 2 on timeout; out[1] = last value seen.
P2P_KERNEL void wait_u32_acquire_sys(u32 *flag, u32 *out, u64 expect, u64 timeout_ns) {
  if (p2p_tid() != 0 || p2p_bid() != 0) return;
  const u64 start = p2p_now_ns();
  u32 seen;
  u32 result = 1;
  while ((seen = p2p_ld_acquire_u32_sys(flag)) != (u32)expect) {
    if (p2p_expired(start, timeout_ns)) { result = 2; break; }
  }
  out[0] = result;
  out[1] = seen;
}

// Sum: out[0] += the 64-bit sum of src[0..n), each thread its grid-stride
// share, then one relaxed device-scope add per thread. The copy cases check
// a GiB on the device instead of reading it back to the host (0.2 s per GiB
// through cuMemcpyDtoH into pageable memory, most of a copy case's time).
// Witnessed (docs/KERNELS.md, "Witnesses"): every thread adds the words it
// visited to wit[0], thread 0 stores the launch's nonce in wit[1]; the parent
// zeroes wit first and refuses the sum unless wit = {n, nonce}.
P2P_KERNEL void sum_u64_relaxed_dev(const u64 *src, u64 *out, u64 n, u64 block, u64 nthreads, u64 *wit,
                                    u64 nonce) {
  u64 s = 0, seen = 0;
  for (u64 j = p2p_gid(block); j < n; j += nthreads, seen++) s += src[j];
  p2p_add_u64_relaxed_dev(out, s);
  p2p_witness_dev(wit, nonce, seen, block);
}

// Fill: for j = g; j < n; j += nthreads: dst[j] = value. Witnessed as sum.
P2P_KERNEL void fill_u64_plain_dev(u64 *dst, u64 value, u64 n, u64 block, u64 nthreads, u64 *wit, u64 nonce) {
  u64 seen = 0;
  for (u64 j = p2p_gid(block); j < n; j += nthreads, seen++) dst[j] = value;
  p2p_witness_dev(wit, nonce, seen, block);
}

// ------------------------------------------------------ litmus environments
// Parallel testing environments (MC Mutants, Levine et al. ASPLOS 2023;
// GPUHarbor): many instances of one litmus shape per launch, the two roles of
// an instance in different blocks (writer j in the first half of the testing
// blocks, the reader of instance j elsewhere by a seeded permutation), x and y
// of each instance on random distinct slots `spread` words apart (spread 32 =
// one 128-byte line each), and blocks past `tblocks` hammering a few hot lines
// (memory stress) while the testers run. See docs/LITMUS.md.
//
// mem holds [x: total*spread words][y: total*spread][sync: 32][hot: 4096],
// total = n*iters, a power of two (the slot permutation is a bijection modulo
// a power of two). An instance has R roles (2; IRIW 4). role 2: threads
// [c*n, (c+1)*n) play role c in one launch; role 0/1: this launch plays half
// of the roles (MP..CoRR: that role; IRIW: the writers 0,1 or the readers 2,3)
// and the other rank the rest; role 3: the collect launch of a shape whose
// outcome is the final memory state (2+2W), run after the others ended.
// Role 0 handles instance j, every other role its own seeded permutation of
// j, so an instance's roles sit in different blocks. Each of iters rounds first aligns every testing block of every
// launch on sync[0] (parties blocks; relaxed atomics at the kernel's scope,
// bounded by timeout_ns; a timeout adds 1 to sync[1] and stops aligning), so
// the two roles of a round run together even in two processes on two GPUs.
// res[2k + slot] = 1 + what that role read (0 = never ran; slot = role, IRIW:
// the two readers, the writers record nothing); tally_u32 counts.
P2P_FN u64 p2p_slot(u64 k, u64 seed, u64 mask) {
  // Odd multipliers, an added constant and a right xorshift are each a
  // bijection on [0, mask+1), so x (or y) slots never collide.
  k = (k * 0x9E3779B97F4A7C15ull + seed) & mask;
  k ^= k >> 7;
  return (k * 0xBF58476D1CE4E5B9ull) & mask;
}

// The round barrier of a testing block (thread t of block b, round r).
// NVIDIA: thread 0 adds 1 to sync[0] and spins until it reaches
// parties*(r+1); a timeout adds 1 to sync[1] and stops aligning.
// AMD (issue 50, Q1): a store barrier, no read-modify-write across GPUs
// (P2P atomics fault on the coarse-grained paths, and PCIe pairs may not
// route them: Q3). Party p = (role 1 ? tblocks : 0) + b owns the epoch word
// ep[p] (ep = hot + 4096): thread 0 stores r+1 there, and threads t,
// t+block, ... each spin until ep[i] >= r+1 for their i < parties. A lane
// that times out stores 1 to lt[p] (lt = ep + parties, so the host counts
// the parties that gave up, as sync[1] counts them on NVIDIA) and stops
// aligning. Relaxed loads and stores at the kernel's scope, as the add was.
#if defined(__AMDGPU__)
#define P2P_LITMUS_ROUND(s)                                                               \
  {                                                                                       \
    u32 *ep = hot + 4096, *lt = ep + parties;                                             \
    const u64 mine = (role == 1 ? tblocks : 0) + b;                                       \
    if (t == 0) p2p_st_relaxed_u32_##s(&ep[mine], (u32)(r + 1));                          \
    const u64 start = p2p_now_ns();                                                       \
    for (u64 i = t; i < parties && !gave_up; i += block) {                                \
      while (p2p_ld_relaxed_u32_##s(&ep[i]) < (u32)(r + 1)) {                             \
        if (p2p_expired(start, timeout_ns)) {                                             \
          gave_up = true;                                                                 \
          p2p_st_relaxed_u32_##s(&lt[mine], 1u);                                          \
          break;                                                                          \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }
#else
#define P2P_LITMUS_ROUND(s)                                                               \
  if (t == 0 && !gave_up) {                                                               \
    p2p_add_u32_relaxed_##s(&sync[0], 1u);                                                \
    const u64 want = parties * (r + 1), start = p2p_now_ns();                             \
    while (p2p_ld_relaxed_u32_##s(&sync[0]) < (u32)want) {                                \
      if (p2p_expired(start, timeout_ns)) {                                               \
        gave_up = true;                                                                   \
        p2p_add_u32_relaxed_##s(&sync[1], 1u);                                            \
        break;                                                                            \
      }                                                                                   \
    }                                                                                     \
  }
#endif

#define P2P_K_LITMUS(shape, o, s, R, BODY, FINAL)                                         \
  P2P_KERNEL void shape##_u32_##o##_##s(u32 *mem, u32 *res, u64 n, u64 iters, u64 role,   \
                                        u64 block, u64 tblocks, u64 parties, u64 seed,    \
                                        u64 spread, u64 stress, u64 timeout_ns) {         \
    const u64 b = p2p_bid(), t = p2p_tid();                                               \
    const u64 total = n * iters, mask = total - 1;                                        \
    u32 *xs = mem, *ys = mem + total * spread, *sync = ys + total * spread;               \
    u32 *hot = sync + 32;                                                                 \
    if (role == 3) {                                                                      \
      /* collect (a later launch): thread g reads back instance r*n+g's final state */    \
      const u64 g = b * block + t;                                                        \
      for (u64 r = 0; r < iters && g < n; r++) {                                          \
        const u64 k = r * n + g;                                                          \
        u32 *x = xs + p2p_slot(k, seed, mask) * spread;                                   \
        u32 *y = ys + p2p_slot(k, seed ^ 0x5bd1e995ull, mask) * spread;                   \
        (void)x; (void)y;                                                                 \
        FINAL                                                                             \
      }                                                                                   \
      return;                                                                             \
    }                                                                                     \
    if (b >= tblocks) {                                                                   \
      /* memory stress: relaxed stores/loads at the kernel's scope on 128 hot lines */    \
      u64 h = (seed ^ (b * block + t)) * 0x9E3779B97F4A7C15ull;                           \
      for (u64 k = 0; k < stress; k++) {                                                  \
        h = h * 6364136223846793005ull + 1442695040888963407ull;                          \
        const u64 w = (h >> 33) & 4095;                                                   \
        if (k & 1) p2p_st_relaxed_u32_##s(&hot[w], (u32)k);                               \
        else (void)p2p_ld_relaxed_u32_##s(&hot[w]);                                       \
      }                                                                                   \
      return;                                                                             \
    }                                                                                     \
    const u64 g = b * block + t;                                                          \
    /* R roles per instance: one launch (role 2) plays all R, threads [c*n, (c+1)*n) */   \
    /* role c; across ranks (role 0/1) each launch plays half of them */                  \
    const u64 per = role == 2 ? R : R / 2, c = g / n;                                     \
    const u64 me = role == 2 ? c : role * (R / 2) + c;                                    \
    const u64 j = c < per ? g - c * n : n;                                                \
    const u64 pa = (seed >> 17) | 1;                                                      \
    bool gave_up = false;                                                                 \
    for (u64 r = 0; r < iters; r++) {                                                     \
      if (parties != 0) {                                                                 \
        P2P_LITMUS_ROUND(s)                                                               \
        p2p_exec_barrier();                                                               \
      }                                                                                   \
      if (j >= n) continue;                                                               \
      /* role 0 handles instance j; every other role its own permutation of j */          \
      const u64 idx = me == 0 ? j                                                         \
                              : ((j * pa + r * 0x9E3779B97F4A7C15ull + seed +             \
                                  (me - 1) * 0x632BE59BD9B4E019ull) & (n - 1));           \
      const u64 k = r * n + idx;                                                          \
      u32 *x = xs + p2p_slot(k, seed, mask) * spread;                                     \
      u32 *y = ys + p2p_slot(k, seed ^ 0x5bd1e995ull, mask) * spread;                     \
      u32 v;                                                                              \
      u64 slot = me; /* res slot; >= 2: this role records nothing (IRIW's writers) */     \
      BODY                                                                                \
      if (slot < 2) res[2 * k + slot] = v;                                                \
    }                                                                                     \
  }

// MP: role 0 stores x=1 then the flag y=1; role 1 reads y then x.
// res = 1 for the writer, 1 + 2*y + x for the reader; weak: y=1, x=0 (3).
#define P2P_MP_BODY(ST_Y, LD_Y, s)                                                        \
  if (me == 0) {                                                                          \
    p2p_st_relaxed_u32_##s(x, 1u);                                                        \
    ST_Y(y, 1u);                                                                          \
    v = 1;                                                                                \
  } else {                                                                                \
    const u32 ry = LD_Y(y);                                                               \
    const u32 rx = p2p_ld_relaxed_u32_##s(x);                                             \
    v = 1 + 2 * ry + rx;                                                                  \
  }
// SB: role r stores 1 to its own word, then reads the other's; res = 1 + read;
// weak: both read 0 (1, 1).
#define P2P_SB_BODY(ST, LD)                                                               \
  {                                                                                       \
    u32 *mine = me == 0 ? x : y, *theirs = me == 0 ? y : x;                               \
    ST(mine, 1u);                                                                         \
    v = 1 + LD(theirs);                                                                   \
  }
// LB: role r reads one word, then stores 1 to the other (role 0 reads x
// and writes y, role 1 reads y and writes x); res = 1 + read; weak: both
// read 1 (2, 2).
#define P2P_LB_BODY(LD, ST)                                                               \
  {                                                                                       \
    u32 *in = me == 0 ? x : y, *outw = me == 0 ? y : x;                                   \
    v = 1 + LD(in);                                                                       \
    ST(outw, 1u);                                                                         \
  }

// IRIW: roles 0 and 1 store 1 to x and to y; role 2 reads x then y, role 3
// y then x, each recording 1 + 2*first + second in res slot me-2 (the
// writers record nothing); weak: each reader saw its first write but not the
// other (3, 3): the two readers disagree on the order of the two writes.
#define P2P_IRIW_BODY(ST, LD)                                                             \
  if (me < 2) {                                                                           \
    ST(me == 0 ? x : y, 1u);                                                              \
    slot = 2;                                                                             \
    v = 0;                                                                                \
  } else {                                                                                \
    const u32 *a = me == 2 ? x : y, *a2 = me == 2 ? y : x;                                \
    const u32 r1 = LD(a);                                                                 \
    const u32 r2 = LD(a2);                                                                \
    v = 1 + 2 * r1 + r2;                                                                  \
    slot = me - 2;                                                                        \
  }
// 2+2W: role 0 stores x=1 then y=2, role 1 y=1 then x=2; res = 1 (ran).
// The collect launch (role 3, after both roles' launches ended) replaces a
// recorded instance's res with 1 + final x, 1 + final y; weak: x=1 and y=1
// (2, 2): each role's second store was overwritten by the other's first.
#define P2P_22W_BODY(ST)                                                                  \
  {                                                                                       \
    u32 *a = me == 0 ? x : y, *a2 = me == 0 ? y : x;                                      \
    ST(a, 1u);                                                                            \
    ST(a2, 2u);                                                                           \
    v = 1;                                                                                \
  }
#define P2P_22W_FINAL(s)                                                                  \
  if (res[2 * k] != 0 && res[2 * k + 1] != 0) {                                           \
    res[2 * k] = 1 + p2p_ld_relaxed_u32_##s(x);                                           \
    res[2 * k + 1] = 1 + p2p_ld_relaxed_u32_##s(y);                                       \
  }
// CoRR (coherence of two reads of one location): role 0 stores x=1; role 1
// reads x twice; res = 1 + 2*first + second; weak: new then old (1, 3).
#define P2P_CORR_BODY(ST, LD)                                                             \
  if (me == 0) {                                                                          \
    ST(x, 1u);                                                                            \
    v = 1;                                                                                \
  } else {                                                                                \
    const u32 r1 = LD(x);                                                                 \
    const u32 r2 = LD(x);                                                                 \
    v = 1 + 2 * r1 + r2;                                                                  \
  }

// Strong kernels and their mutants (kernels/manifest.go names them).
P2P_K_LITMUS(pmp, acqrel, sys, 2, P2P_MP_BODY(p2p_st_release_u32_sys, p2p_ld_acquire_u32_sys, sys), )
P2P_K_LITMUS(pmp, relaxed, sys, 2, P2P_MP_BODY(p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys, sys), )
P2P_K_LITMUS(pmp, acqrel, dev, 2, P2P_MP_BODY(p2p_st_release_u32_dev, p2p_ld_acquire_u32_dev, dev), )
P2P_K_LITMUS(psb, seqcst, sys, 2, P2P_SB_BODY(p2p_st_seqcst_u32_sys, p2p_ld_seqcst_u32_sys), )
P2P_K_LITMUS(psb, relaxed, sys, 2, P2P_SB_BODY(p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys), )
P2P_K_LITMUS(psb, seqcst, dev, 2, P2P_SB_BODY(p2p_st_seqcst_u32_dev, p2p_ld_seqcst_u32_dev), )
P2P_K_LITMUS(plb, acqrel, sys, 2, P2P_LB_BODY(p2p_ld_acquire_u32_sys, p2p_st_release_u32_sys), )
P2P_K_LITMUS(plb, relaxed, sys, 2, P2P_LB_BODY(p2p_ld_relaxed_u32_sys, p2p_st_relaxed_u32_sys), )
P2P_K_LITMUS(plb, acqrel, dev, 2, P2P_LB_BODY(p2p_ld_acquire_u32_dev, p2p_st_release_u32_dev), )
P2P_K_LITMUS(piriw, seqcst, sys, 4, P2P_IRIW_BODY(p2p_st_seqcst_u32_sys, p2p_ld_seqcst_u32_sys), )
P2P_K_LITMUS(piriw, acquire, sys, 4, P2P_IRIW_BODY(p2p_st_relaxed_u32_sys, p2p_ld_acquire_u32_sys), )
P2P_K_LITMUS(piriw, relaxed, sys, 4, P2P_IRIW_BODY(p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys), )
P2P_K_LITMUS(piriw, seqcst, dev, 4, P2P_IRIW_BODY(p2p_st_seqcst_u32_dev, p2p_ld_seqcst_u32_dev), )
P2P_K_LITMUS(p22w, seqcst, sys, 2, P2P_22W_BODY(p2p_st_seqcst_u32_sys), P2P_22W_FINAL(sys))
P2P_K_LITMUS(p22w, relaxed, sys, 2, P2P_22W_BODY(p2p_st_relaxed_u32_sys), P2P_22W_FINAL(sys))
P2P_K_LITMUS(p22w, seqcst, dev, 2, P2P_22W_BODY(p2p_st_seqcst_u32_dev), P2P_22W_FINAL(dev))
P2P_K_LITMUS(pcorr, relaxed, sys, 2, P2P_CORR_BODY(p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys), )
P2P_K_LITMUS(pcorr, relaxed, dev, 2, P2P_CORR_BODY(p2p_st_relaxed_u32_dev, p2p_ld_relaxed_u32_dev), )

// Tally: the full outcome histogram. Instance i's pair (a, b) = (res[2i],
// res[2i+1]) lands in bin min(a,5)*6 + min(b,5) of out[0..36) (0 = a role
// never recorded, 5 = a value no shape writes); u64 out, relaxed device adds.
// The 36 counters are per-thread registers (fully unrolled, constant
// indices: no scratch). Witnessed as sum: wit = {instances visited, nonce}.
P2P_KERNEL void tally_u32_relaxed_dev(const u32 *res, u64 *out, u64 n, u64 block, u64 nthreads, u64 *wit,
                                      u64 nonce) {
  u32 c[36];
#pragma unroll
  for (int j = 0; j < 36; j++) c[j] = 0;
  u64 seen = 0;
  for (u64 i = p2p_gid(block); i < n; i += nthreads, seen++) {
    const u32 a = res[2 * i], b = res[2 * i + 1];
    const u32 bin = (a < 5u ? a : 5u) * 6u + (b < 5u ? b : 5u);
#pragma unroll
    for (int j = 0; j < 36; j++) c[j] += bin == (u32)j;
  }
#pragma unroll
  for (int j = 0; j < 36; j++)
    if (c[j]) p2p_add_u64_relaxed_dev(&out[j], (u64)c[j]);
  p2p_witness_dev(wit, nonce, seen, block);
}
