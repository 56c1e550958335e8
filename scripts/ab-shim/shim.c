/*
 * A stand-in CUDA user-mode driver for the A/B run's device test (issue 53,
 * docs/GATING.md "A/B: the upgrade side by side"): a pass-through libcuda.so.1
 * that loads the real driver and forwards every entry point the rank binds
 * (rank/cuda/driver.go's binding table; rank/cuda/abshim_test.go keeps this
 * list equal to it), except that every device-to-device copy is issued twice.
 * Stack B built from it must fail exactly on the copy-engine metrics
 * (bw_ce_*: their timed copies take twice as long) and pass everything else
 * (a copy issued twice leaves the same bytes).
 *
 * The rank calls no cuGetProcAddress: it dlsyms each name itself, so the
 * names below are all it can reach. The one device-to-device copy it issues
 * is cuMemcpyDtoDAsync_v2 (rank/cuda/backend.go Copy, speed.go); the
 * others are forwarded as they are.
 *
 * Build (only the CUDA driver needed, no cuda.h):
 *   cc -shared -fPIC -o libcuda.so.1 shim.c -ldl
 * The real driver is the path in real-libcuda.path beside the built library
 * (scripts/device-ab.sh writes it), else the first of the usual places that
 * is not this file itself. It is opened RTLD_DEEPBIND so the real driver's
 * own calls never land back in this shim.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { char bytes[16]; } CUuuid;

#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NOT_FOUND 500

static void *real;
/* 0: not loaded, 1: loading, 2: loaded. No pthread_once: before glibc
 * 2.34 it lives in libpthread, which the build line does not link. */
static int state;

/* self is this library's own file, so the search never picks it. */
static void self_path(char *out, size_t n) {
	Dl_info info;
	out[0] = 0;
	if (dladdr((void *)self_path, &info) && info.dli_fname) {
		if (!realpath(info.dli_fname, out)) {
			snprintf(out, n, "%s", info.dli_fname);
		}
	}
}

static int try_open(const char *path, const char *self) {
	char rp[PATH_MAX];
	if (!path || !*path || !realpath(path, rp) || strcmp(rp, self) == 0) {
		return 0;
	}
	real = dlopen(rp, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!real) {
		fprintf(stderr, "ab-shim: %s: %s\n", rp, dlerror());
	}
	return real != NULL;
}

static void load(void) {
	char self[PATH_MAX], side[PATH_MAX + 32], line[PATH_MAX];
	self_path(self, sizeof self);
	/* real-libcuda.path beside this file names the driver A loads. */
	snprintf(side, sizeof side, "%s", self);
	char *slash = strrchr(side, '/');
	if (slash) {
		strcpy(slash + 1, "real-libcuda.path");
		FILE *f = fopen(side, "r");
		if (f) {
			if (fgets(line, sizeof line, f)) {
				line[strcspn(line, "\r\n")] = 0;
				if (try_open(line, self)) {
					fclose(f);
					return;
				}
			}
			fclose(f);
		}
	}
	static const char *usual[] = {
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/lib/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", NULL,
	};
	for (int i = 0; usual[i]; i++) {
		if (try_open(usual[i], self)) {
			return;
		}
	}
	fprintf(stderr, "ab-shim: no real libcuda.so.1 found (write its path into %s)\n", side);
}

static void *sym(const char *name) {
	int want = 0;
	if (__atomic_compare_exchange_n(&state, &want, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		load();
		__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
	}
	while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) {
		/* another thread is loading the real driver */
	}
	return real ? dlsym(real, name) : NULL;
}

/* FWD defines name with its C prototype, forwarding to the real driver's
 * entry of the same name (resolved once); a driver without it answers
 * CUDA_ERROR_NOT_FOUND, as a missing entry would to the rank. */
#define FWD(name, params, args)                                            \
	CUresult name params {                                                 \
		static CUresult(*fn) params;                                       \
		if (!fn) {                                                         \
			fn = (CUresult(*) params)sym(#name);                           \
		}                                                                  \
		if (!fn) {                                                         \
			return real ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED; \
		}                                                                  \
		return fn args;                                                    \
	}

FWD(cuGetErrorName, (CUresult e, const char **s), (e, s))
FWD(cuGetErrorString, (CUresult e, const char **s), (e, s))
FWD(cuInit, (unsigned int flags), (flags))
FWD(cuDriverGetVersion, (int *v), (v))
FWD(cuDeviceGetCount, (int *n), (n))
FWD(cuDeviceGet, (CUdevice *d, int ordinal), (d, ordinal))
FWD(cuDeviceGetName, (char *name, int len, CUdevice d), (name, len, d))
FWD(cuDeviceGetAttribute, (int *v, int attr, CUdevice d), (v, attr, d))
FWD(cuDeviceGetUuid_v2, (CUuuid *u, CUdevice d), (u, d))
FWD(cuDeviceTotalMem_v2, (size_t *b, CUdevice d), (b, d))
FWD(cuDeviceCanAccessPeer, (int *can, CUdevice d, CUdevice peer), (can, d, peer))
FWD(cuDeviceGetP2PAttribute, (int *v, int attr, CUdevice src, CUdevice dst), (v, attr, src, dst))
FWD(cuDevicePrimaryCtxRetain, (CUcontext *c, CUdevice d), (c, d))
FWD(cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d))
FWD(cuCtxSetCurrent, (CUcontext c), (c))
FWD(cuCtxSynchronize, (void), ())
FWD(cuMemGetInfo_v2, (size_t *free, size_t *total), (free, total))
FWD(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), (p, n))
FWD(cuMemFree_v2, (CUdeviceptr p), (p))
FWD(cuMemGetAllocationGranularity, (size_t *g, const void *prop, int option), (g, prop, option))
FWD(cuMemCreate, (CUmemGenericAllocationHandle *h, size_t size, const void *prop, unsigned long long flags), (h, size, prop, flags))
FWD(cuMemRelease, (CUmemGenericAllocationHandle h), (h))
FWD(cuMemAddressReserve, (CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags), (p, size, align, addr, flags))
FWD(cuMemAddressFree, (CUdeviceptr p, size_t size), (p, size))
FWD(cuMemMap, (CUdeviceptr p, size_t size, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags), (p, size, off, h, flags))
FWD(cuMemUnmap, (CUdeviceptr p, size_t size), (p, size))
FWD(cuMemSetAccess, (CUdeviceptr p, size_t size, const void *desc, size_t count), (p, size, desc, count))
FWD(cuMemExportToShareableHandle, (void *fd, CUmemGenericAllocationHandle h, int type, unsigned long long flags), (fd, h, type, flags))
FWD(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle *h, void *os, int type), (h, os, type))
FWD(cuMemGetHandleForAddressRange, (void *fd, CUdeviceptr p, size_t size, int type, unsigned long long flags), (fd, p, size, type, flags))
FWD(cuIpcGetMemHandle, (CUipcMemHandle *h, CUdeviceptr p), (h, p))
FWD(cuIpcOpenMemHandle_v2, (CUdeviceptr *p, CUipcMemHandle h, unsigned int flags), (p, h, flags))
FWD(cuIpcCloseMemHandle, (CUdeviceptr p), (p))
FWD(cuModuleLoadDataEx, (CUmodule *m, const void *image, unsigned int n, void *opts, void **vals), (m, image, n, opts, vals))
FWD(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name), (f, m, name))
FWD(cuModuleUnload, (CUmodule m), (m))
FWD(cuLaunchKernel,
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
     unsigned int shared, CUstream s, void **params, void **extra),
    (f, gx, gy, gz, bx, by, bz, shared, s, params, extra))
FWD(cuStreamCreate, (CUstream *s, unsigned int flags), (s, flags))
FWD(cuStreamSynchronize, (CUstream s), (s))
FWD(cuStreamQuery, (CUstream s), (s))
FWD(cuStreamDestroy_v2, (CUstream s), (s))
FWD(cuEventCreate, (CUevent *e, unsigned int flags), (e, flags))
FWD(cuEventRecord, (CUevent e, CUstream s), (e, s))
FWD(cuEventDestroy_v2, (CUevent e), (e))
FWD(cuEventElapsedTime, (float *ms, CUevent start, CUevent end), (ms, start, end))
FWD(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
FWD(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))

/* cuEventElapsedTime_v2 is 13.0's name; an older driver has only the plain
 * one, with the same signature: the rank binds _v2 first, so forward it to
 * whichever the real driver has. */
CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
	static CUresult (*fn)(float *, CUevent, CUevent);
	if (!fn) {
		fn = (CUresult(*)(float *, CUevent, CUevent))sym("cuEventElapsedTime_v2");
	}
	if (!fn) {
		fn = (CUresult(*)(float *, CUevent, CUevent))sym("cuEventElapsedTime");
	}
	if (!fn) {
		return real ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED;
	}
	return fn(ms, start, end);
}

/* The planted slowdown: every device-to-device copy issued twice, on the
 * same stream, back to back (the same bytes land twice: correctness is
 * unchanged; a timed copy takes twice as long). */
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	static CUresult (*fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	if (!fn) {
		fn = (CUresult(*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))sym("cuMemcpyDtoDAsync_v2");
	}
	if (!fn) {
		return real ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_INITIALIZED;
	}
	CUresult r = fn(dst, src, n, s);
	if (r != 0) {
		return r;
	}
	return fn(dst, src, n, s);
}
