// p2pref: a standalone CUDA reference for the harness's perf cases, built
// with nvcc on the GPU machine and run in the same session, so the harness's
// numbers can be checked against "a careful standalone program".
// Same sizes and methods as specs/perf.go: 1 GiB per copy, 1 warm-up
// + 5 event-timed samples, median; copy kernel 16 B/thread, SMs*4 x 256
// threads; ping-pong with each side polling its own flag (ld.acquire.sys)
// and writing the other's (st.release.sys), 625 rounds at each of 64 flag
// placements in one launch per sample.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = "?"; \
  cuGetErrorName(r_, &s_); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(1); } } while (0)

// A cuMemCreate allocation on dev, mapped once in this process and
// accessible from both GPUs: the memory the harness's vmm kind uses.
static void *vmm_alloc(int dev, size_t size) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t g = 0;
  CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size = (size + g - 1) / g * g;
  CUmemGenericAllocationHandle h;
  CU(cuMemCreate(&h, size, &prop, 0));
  CUdeviceptr p = 0;
  CU(cuMemAddressReserve(&p, size, g, 0, 0));
  CU(cuMemMap(p, size, 0, h, 0));
  CUmemAccessDesc a[2] = {};
  for (int i = 0; i < 2; i++) {
    a[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a[i].location.id = i;
    a[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  CU(cuMemSetAccess(p, size, a, 2));
  return (void *)p;
}

__global__ void copy16(uint4 *dst, const uint4 *src, size_t n, size_t nthreads) {
  for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += nthreads) dst[j] = src[j];
}

__device__ unsigned long long ld_acq(unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void st_rel(unsigned long long *p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Each kernel runs n rounds at each of places flag placements, placement p
// at p*stride bytes (the harness kernel's places/stride), in one launch.
__global__ void pingpong(unsigned long long *flag, unsigned long long *peer, unsigned long long n, int role, int places,
                         size_t stride) {
  for (int p = 0; p < places; p++) {
    unsigned long long *f = (unsigned long long *)((char *)flag + p * stride);
    unsigned long long *o = (unsigned long long *)((char *)peer + p * stride);
    for (unsigned long long i = 0; i < n; i++) {
      unsigned long long want = role == 0 ? i : i + 1;
      while (ld_acq(f) != want) {}
      st_rel(o, i + 1);
    }
  }
}

__device__ unsigned long long ld_acq_gpu(unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void st_rel_gpu(unsigned long long *p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Both sides on one GPU, one block each, device scope (the harness's
// pingpong_latency_local).
__global__ void pingpong_local(unsigned long long *f0, unsigned long long *f1, unsigned long long n, int places,
                               size_t stride) {
  const int side = blockIdx.x;
  for (int p = 0; p < places; p++) {
    unsigned long long *a = (unsigned long long *)((char *)f0 + p * stride);
    unsigned long long *b = (unsigned long long *)((char *)f1 + p * stride);
    unsigned long long *mine = side ? b : a, *other = side ? a : b;
    for (unsigned long long i = 0; i < n; i++) {
      unsigned long long want = side == 0 ? i : i + 1;
      while (ld_acq_gpu(mine) != want) {}
      st_rel_gpu(other, i + 1);
    }
  }
}

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// Flag placement p sits flagAt(p) bytes into an 8 MiB buffer, as
// specs/sampling's FlagOffset: a one-GPU round trip depends on which L2
// slice holds the flags' line, so each sample sweeps all 64 in one launch.
static const int kPlacements = 64;
static const size_t kStride = 32 * 4096 + 3 * 128;
static const size_t kSpan = 8u << 20;
static size_t flagAt(int p) { return (size_t)p * kStride; }
static unsigned long long *at(void *f, int p) { return (unsigned long long *)((char *)f + flagAt(p)); }
static const size_t kCopy = 1ull << 30;

// The cross-process form the harness uses: the buffer is allocated on GPU 1
// by the parent, its legacy IPC handle piped to a child process, which maps
// it on GPU 0 and copies into it. Same sizes and timing as above.
static int ipc_child() {
  const size_t size = kCopy;
  cudaIpcMemHandle_t h;
  unsigned char *hb = (unsigned char *)&h;
  for (size_t i = 0; i < sizeof h; i++) {
    unsigned v;
    if (scanf("%2x", &v) != 1) { fprintf(stderr, "ref: bad handle\n"); return 1; }
    hb[i] = (unsigned char)v;
  }
  CK(cudaSetDevice(0));
  void *peer, *loc;
  CK(cudaIpcOpenMemHandle(&peer, h, cudaIpcMemLazyEnablePeerAccess));
  CK(cudaMalloc(&loc, size));
  CK(cudaMemset(loc, 7, size));
  cudaStream_t st;
  cudaEvent_t a, b;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned grid = sms * 4, block = 256;
  for (int kind = 0; kind < 2; kind++) {
    std::vector<double> g;
    for (int s = 0; s < 6; s++) {
      CK(cudaEventRecord(a, st));
      if (kind == 0) CK(cudaMemcpyAsync(peer, loc, size, cudaMemcpyDefault, st));
      else copy16<<<grid, block, 0, st>>>((uint4 *)peer, (uint4 *)loc, size / 16, (size_t)grid * block);
      CK(cudaEventRecord(b, st));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      if (s > 0) g.push_back(size / (ms * 1e-3) / 1e9);
    }
    printf("ref-ipc r0r1 %s %.2f (cross-process, cudaIpcOpenMemHandle)\n", kind == 0 ? "bw_ce_write_gbps" : "bw_kernel_write_gbps", median(g));
  }
  CK(cudaIpcCloseMemHandle(peer));
  return 0;
}

static void ipc_parent(const char *self) {
  const size_t size = kCopy;
  CK(cudaSetDevice(1));
  void *dst;
  CK(cudaMalloc(&dst, size));
  cudaIpcMemHandle_t h;
  CK(cudaIpcGetMemHandle(&h, dst));
  std::string cmd = std::string(self) + " ipc-child";
  FILE *p = popen(cmd.c_str(), "w");
  if (!p) { perror("popen"); return; }
  const unsigned char *hb = (const unsigned char *)&h;
  for (size_t i = 0; i < sizeof h; i++) fprintf(p, "%02x", hb[i]);
  fprintf(p, "\n");
  fflush(stdout);
  pclose(p);
  CK(cudaFree(dst));
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "ipc-child") == 0) return ipc_child();
  const size_t size = kCopy;
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) { printf("ref: needs 2 GPUs\n"); return 2; }
  void *buf[2], *loc[2];
  cudaStream_t st[2];
  cudaEvent_t e0[2], e1[2];
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int d = 0; d < 2; d++) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CK(cudaMalloc(&buf[d], size));
    CK(cudaMalloc(&loc[d], size));
    CK(cudaMemset(loc[d], d + 1, size));
    CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[d]));
    CK(cudaEventCreate(&e1[d]));
  }
  auto timed = [&](int d, auto fn) {
    std::vector<double> gbps;
    for (int s = 0; s < 6; s++) {
      CK(cudaSetDevice(d));
      CK(cudaEventRecord(e0[d], st[d]));
      fn();
      CK(cudaEventRecord(e1[d], st[d]));
      CK(cudaEventSynchronize(e1[d]));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0[d], e1[d]));
      if (s > 0) gbps.push_back(size / (ms * 1e-3) / 1e9);
    }
    return gbps;
  };
  unsigned grid = sms * 4, block = 256;
  size_t nthreads = (size_t)grid * block;
  for (int s = 0; s < 2; s++) {
    int d = 1 - s;
    auto w = timed(s, [&] { CK(cudaMemcpyAsync(buf[d], loc[s], size, cudaMemcpyDefault, st[s])); });
    auto r = timed(s, [&] { CK(cudaMemcpyAsync(loc[s], buf[d], size, cudaMemcpyDefault, st[s])); });
    auto kw = timed(s, [&] { copy16<<<grid, block, 0, st[s]>>>((uint4 *)buf[d], (uint4 *)loc[s], size / 16, nthreads); });
    auto kr = timed(s, [&] { copy16<<<grid, block, 0, st[s]>>>((uint4 *)loc[s], (uint4 *)buf[d], size / 16, nthreads); });
    for (auto &m : {std::make_pair("bw_ce_write_gbps", &w), std::make_pair("bw_ce_read_gbps", &r),
                    std::make_pair("bw_kernel_write_gbps", &kw), std::make_pair("bw_kernel_read_gbps", &kr)}) {
      const std::vector<double> &v = *m.second;
      printf("ref r%dr%d %s %.2f (min %.2f max %.2f)\n", s, d, m.first, median(v), *std::min_element(v.begin(), v.end()),
             *std::max_element(v.begin(), v.end()));
    }
  }
  // Ping-pong across the two GPUs: flags are one word in each device's
  // buffer (cudaMalloc, then cuMemCreate memory as the harness's vmm kind).
  const unsigned long long rounds = 625; // per placement: 40 000 per sample
  auto zero = [&](void *f, int dev) {
    CK(cudaSetDevice(dev));
    for (int p = 0; p < kPlacements; p++) CK(cudaMemset(at(f, p), 0, 128));
    CK(cudaDeviceSynchronize());
  };
  // 1 warm-up + 5 samples; launch2(side) starts side 0 (timed, GPU 0) or
  // side 1 (GPU 1; unused when one is set: both sides in one launch).
  auto series = [&](void *f0, void *f1, bool one, auto launch2) {
    std::vector<double> rtt;
    for (int s = 0; s < 6; s++) {
      zero(f0, 0);
      if (!one) zero(f1, 1);
      CK(cudaSetDevice(0));
      CK(cudaEventRecord(e0[0], st[0]));
      launch2(0);
      CK(cudaEventRecord(e1[0], st[0]));
      if (!one) { CK(cudaSetDevice(1)); launch2(1); CK(cudaStreamSynchronize(st[1])); CK(cudaSetDevice(0)); }
      CK(cudaEventSynchronize(e1[0]));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0[0], e1[0]));
      if (s > 0) rtt.push_back(ms * 1e3 / (rounds * kPlacements));
    }
    return rtt;
  };
  auto report = [&](const char *what, std::vector<double> v) {
    printf("%s %.3f (min %.3f max %.3f)\n", what, median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  };
  auto cross = [&](void *f0, void *f1) {
    return series(f0, f1, false, [&](int side) {
      if (side == 0) pingpong<<<1, 1, 0, st[0]>>>((unsigned long long *)f0, at(f1, 0) + 8, rounds, 0, kPlacements, kStride);
      else pingpong<<<1, 1, 0, st[1]>>>(at(f1, 0) + 8, (unsigned long long *)f0, rounds, 1, kPlacements, kStride);
    });
  };
  auto local = [&](void *f) {
    return series(f, f, true, [&](int) {
      pingpong_local<<<2, 1, 0, st[0]>>>((unsigned long long *)f, at(f, 0) + 8, rounds, kPlacements, kStride);
    });
  };
  // Each placement on its own (one launch each, 2500 rounds): how far
  // apart the placements are.
  auto byPlacement = [&](const char *what, void *f) {
    printf("%s by placement:", what);
    for (int p = 0; p < kPlacements; p++) {
      std::vector<double> v;
      for (int s = 0; s < 2; s++) {
        CK(cudaSetDevice(0)); CK(cudaMemset(at(f, p), 0, 128)); CK(cudaDeviceSynchronize());
        CK(cudaEventRecord(e0[0], st[0]));
        pingpong_local<<<2, 1, 0, st[0]>>>(at(f, p), at(f, p) + 8, 2500, 1, 0);
        CK(cudaEventRecord(e1[0], st[0]));
        CK(cudaEventSynchronize(e1[0]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0[0], e1[0]));
        v.push_back(ms * 1e3 / 2500);
      }
      printf(" %.3f", v[1]);
    }
    printf("\n");
  };
  std::vector<double> rtt = cross(buf[0], buf[1]);
  CK(cudaSetDevice(0));
  void *v0 = vmm_alloc(0, kSpan);
  CK(cudaSetDevice(1));
  void *v1 = vmm_alloc(1, kSpan);
  report("ref-vmm r0r1 rtt_sys_us", cross(v0, v1));
  report("ref r0 rtt_dev_us", local(buf[0]));
  report("ref-vmm r0 rtt_dev_us", local(v0));
  byPlacement("ref-vmm r0 rtt_dev_us", v0);
  byPlacement("ref r0 rtt_dev_us", buf[0]);
  // The harness's own ping-pong kernels (its PTX, JIT-compiled here as the
  // ranks do, bounded poll loop included) on the same memory in this one
  // process: any difference from the lines above is the kernel's.
  const char *ptxPath = getenv("P2PREF_PTX") ? getenv("P2PREF_PTX") : "kernels/obj/kernels.sm_90.ptx";
  std::ifstream in(ptxPath);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    std::string ptx = ss.str();
    CUfunction fsys[2], fdev = nullptr;
    for (int d = 0; d < 2; d++) {
      CK(cudaSetDevice(d));
      CUmodule m;
      CU(cuModuleLoadData(&m, ptx.c_str()));
      CU(cuModuleGetFunction(&fsys[d], m, "pingpong_u64_acqrel_sys"));
      if (d == 0) CU(cuModuleGetFunction(&fdev, m, "pingpong_u64_acqrel_dev"));
    }
    void *out[2];
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMalloc(&out[d], 64)); }
    unsigned long long bound = 5000000000ull; // the kernel's timeout_ns; 0 = unbounded polls
    auto launch = [&](CUfunction f, int d, void *flag, void *peer, unsigned long long role, unsigned grid) {
      unsigned long long nr = rounds, to = bound, places = kPlacements, stride = kStride;
      void *o = out[d];
      void *args[] = {&flag, &peer, &o, &nr, &role, &to, &places, &stride};
      CU(cuLaunchKernel(f, grid, 1, 1, 1, 1, 1, 0, (CUstream)st[d], args, nullptr));
    };
    auto crossH = [&](void *f0, void *f1) {
      return series(f0, f1, false, [&](int side) {
        if (side == 0) launch(fsys[0], 0, f0, at(f1, 0) + 8, 0, 1);
        else launch(fsys[1], 1, at(f1, 0) + 8, f0, 1, 1);
      });
    };
    auto localH = [&](void *f) {
      return series(f, f, true, [&](int) { launch(fdev, 0, f, at(f, 0) + 8, 2, 2); });
    };
    report("ref-harness-kernel r0r1 rtt_sys_us (the harness's PTX, cudaMalloc memory)", crossH(buf[0], buf[1]));
    report("ref-harness-kernel-vmm r0r1 rtt_sys_us (the harness's PTX, cuMemCreate memory)", crossH(v0, v1));
    report("ref-harness-kernel-vmm r0 rtt_dev_us (the harness's PTX, cuMemCreate memory, one GPU)", localH(v0));
    bound = 0;
    report("ref-harness-kernel-unbounded r0r1 rtt_sys_us (the harness's PTX, timeout_ns 0, cudaMalloc memory)", crossH(buf[0], buf[1]));
    report("ref-harness-kernel-unbounded-vmm r0r1 rtt_sys_us (the harness's PTX, timeout_ns 0, cuMemCreate memory)", crossH(v0, v1));
    report("ref-harness-kernel-unbounded-vmm r0 rtt_dev_us (the harness's PTX, timeout_ns 0, cuMemCreate memory, one GPU)", localH(v0));
  } else {
    printf("ref: %s not found: the harness-kernel comparison is left out\n", ptxPath);
  }
  report("ref r0r1 rtt_sys_us", rtt);
  fflush(stdout);
  ipc_parent(argv[0]);
  return 0;
}
