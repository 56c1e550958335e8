// p2pref: a standalone CUDA reference for the harness's perf cases, built
// with nvcc on the GPU machine and run in the same session, so the harness's
// numbers can be checked against "a careful standalone program".
// Same sizes and methods as specs/cases_perf.go: 256 MiB, 1 warm-up + 5
// event-timed samples, median; copy kernel 16 B/thread, SMs*4 x 256 threads;
// ping-pong with each side polling its own flag (ld.acquire.sys) and writing
// the other's (st.release.sys).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

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
__global__ void pingpong(unsigned long long *flag, unsigned long long *peer, unsigned long long n, int role) {
  for (unsigned long long i = 0; i < n; i++) {
    unsigned long long want = role == 0 ? i : i + 1;
    while (ld_acq(flag) != want) {}
    st_rel(peer, i + 1);
  }
}

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// The cross-process form the harness uses: the buffer is allocated on GPU 1
// by the parent, its legacy IPC handle piped to a child process, which maps
// it on GPU 0 and copies into it. Same sizes and timing as above.
static int ipc_child() {
  const size_t size = 256u << 20;
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
  const size_t size = 256u << 20;
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
  const size_t size = 256u << 20;
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
    printf("ref r%dr%d bw_ce_write_gbps %.2f (min %.2f max %.2f)\n", s, d, median(w), *std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()));
    printf("ref r%dr%d bw_ce_read_gbps %.2f\n", s, d, median(r));
    printf("ref r%dr%d bw_kernel_write_gbps %.2f\n", s, d, median(kw));
    printf("ref r%dr%d bw_kernel_read_gbps %.2f\n", s, d, median(kr));
  }
  // Ping-pong across the two GPUs: flags are one word in each device's buffer.
  const unsigned long long rounds = 20000;
  std::vector<double> rtt;
  for (int s = 0; s < 6; s++) {
    for (int d = 0; d < 2; d++) { CK(cudaSetDevice(d)); CK(cudaMemset(buf[d], 0, 64)); CK(cudaDeviceSynchronize()); }
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(e0[0], st[0]));
    pingpong<<<1, 1, 0, st[0]>>>((unsigned long long *)buf[0], (unsigned long long *)buf[1], rounds, 0);
    CK(cudaEventRecord(e1[0], st[0]));
    CK(cudaSetDevice(1));
    pingpong<<<1, 1, 0, st[1]>>>((unsigned long long *)buf[1], (unsigned long long *)buf[0], rounds, 1);
    CK(cudaStreamSynchronize(st[1]));
    CK(cudaSetDevice(0));
    CK(cudaEventSynchronize(e1[0]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0[0], e1[0]));
    if (s > 0) rtt.push_back(ms * 1e3 / rounds);
  }
  printf("ref r0r1 rtt_sys_us %.3f\n", median(rtt));
  fflush(stdout);
  ipc_parent(argv[0]);
  return 0;
}
