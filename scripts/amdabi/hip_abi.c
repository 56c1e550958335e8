/* hip_abi.c: prints the size and field offsets of every HIP struct that
 * rank/hip mirrors in Go, and the value of every enum/constant it uses, one
 * "name value" line each (decimal). Compiled by scripts/amd-headers.sh with
 * plain gcc (-D__HIP_PLATFORM_AMD__) against Debian's libamdhip64-dev headers;
 * rank/hip/abi_test.go compares the output with the Go side. Identifiers
 * that older headers lack are guarded by HAVE_<name> (the script defines it
 * when the header declares the name) and print "<name> absent" otherwise. */
#include <stddef.h>
#include <stdio.h>
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#ifdef HAVE_hipDeviceProp_tR0000
#include <hip/hip_deprecated.h>
#endif

#define SZ(T) printf("sizeof.%s %zu\n", #T, sizeof(T))
#define OFF(T, f) printf("offsetof.%s.%s %zu\n", #T, #f, offsetof(T, f))
#define C(X) printf("%s %llu\n", #X, (unsigned long long)(X))
#define ABSENT(X) printf("%s absent\n", #X)

int main(void) {
  printf("HIP_VERSION_MAJOR %d\nHIP_VERSION_MINOR %d\n", HIP_VERSION_MAJOR, HIP_VERSION_MINOR);

  SZ(hipMemLocation); OFF(hipMemLocation, type); OFF(hipMemLocation, id);
  SZ(hipMemAllocationProp);
  OFF(hipMemAllocationProp, type); OFF(hipMemAllocationProp, requestedHandleType);
  OFF(hipMemAllocationProp, location); OFF(hipMemAllocationProp, win32HandleMetaData);
  OFF(hipMemAllocationProp, allocFlags);
  OFF(hipMemAllocationProp, allocFlags.compressionType); OFF(hipMemAllocationProp, allocFlags.gpuDirectRDMACapable);
  OFF(hipMemAllocationProp, allocFlags.usage);
  SZ(hipMemAccessDesc); OFF(hipMemAccessDesc, location); OFF(hipMemAccessDesc, flags);
  SZ(hipMemGenericAllocationHandle_t);
  SZ(hipError_t); SZ(hipMemAllocationType); SZ(hipMemAllocationHandleType);

  SZ(hipDeviceProp_tR0600);
  OFF(hipDeviceProp_tR0600, name); OFF(hipDeviceProp_tR0600, uuid); OFF(hipDeviceProp_tR0600, totalGlobalMem);
  OFF(hipDeviceProp_tR0600, multiProcessorCount); OFF(hipDeviceProp_tR0600, pciBusID);
  OFF(hipDeviceProp_tR0600, pciDeviceID); OFF(hipDeviceProp_tR0600, pciDomainID);
  OFF(hipDeviceProp_tR0600, gcnArchName);
#ifdef HAVE_hipDeviceProp_tR0000
  SZ(hipDeviceProp_tR0000);
  OFF(hipDeviceProp_tR0000, name); OFF(hipDeviceProp_tR0000, totalGlobalMem);
  OFF(hipDeviceProp_tR0000, multiProcessorCount); OFF(hipDeviceProp_tR0000, gcnArchName);
#else
  ABSENT(sizeof.hipDeviceProp_tR0000);
#endif

  C(hipMemAllocationTypeInvalid); C(hipMemAllocationTypePinned);
#ifdef HAVE_hipMemAllocationTypeUncached
  C(hipMemAllocationTypeUncached);
#else
  ABSENT(hipMemAllocationTypeUncached);
#endif
  C(hipMemHandleTypeNone); C(hipMemHandleTypePosixFileDescriptor);
  C(hipMemLocationTypeDevice);
  C(hipMemAccessFlagsProtNone); C(hipMemAccessFlagsProtReadWrite);
  C(hipMemAllocationGranularityMinimum); C(hipMemAllocationGranularityRecommended);

  C(hipSuccess); C(hipErrorInvalidValue); C(hipErrorOutOfMemory); C(hipErrorNotInitialized);
  C(hipErrorNoDevice); C(hipErrorInvalidDevice); C(hipErrorInvalidImage); C(hipErrorNoBinaryForGpu);
  C(hipErrorInvalidKernelFile); C(hipErrorNotFound); C(hipErrorNotReady); C(hipErrorIllegalAddress);
  C(hipErrorLaunchFailure); C(hipErrorNotSupported); C(hipErrorUnknown);

  C(hipDeviceAttributeMultiprocessorCount); C(hipDeviceAttributeVirtualMemoryManagementSupported);
  C(hipDeviceAttributePciBusId); C(hipDeviceAttributePciDomainID);
  C(hipDeviceAttributeHostNativeAtomicSupported); C(hipDeviceAttributeFineGrainSupport);
  C(hipDevP2PAttrAccessSupported); C(hipDevP2PAttrNativeAtomicSupported);
  C(hipEventDefault);
  return 0;
}
