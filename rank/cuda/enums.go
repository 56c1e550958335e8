package cuda

// CUDA driver API enum values (CUDA 13.0 cuda.h). Only the values this
// backend uses or reports are listed. The names keep the header's spelling
// after the common prefix so a grep for the C name finds them.

// CUdevice_attribute (§2.4).
const (
	attrMaxThreadsPerBlock                     = 1
	attrWarpSize                               = 10
	attrMultiprocessorCount                    = 16
	attrComputeMode                            = 20
	attrUnifiedAddressing                      = 41
	attrComputeCapabilityMajor                 = 75
	attrComputeCapabilityMinor                 = 76
	attrManagedMemory                          = 83
	attrHostNativeAtomicSupported              = 86
	attrPageableMemoryAccess                   = 88
	attrConcurrentManagedAccess                = 89
	attrVirtualMemoryManagementSupported       = 102
	attrHandleTypePosixFileDescriptorSupported = 103
	attrGPUDirectRDMAWithCudaVMMSupported      = 110
	attrDmaBufSupported                        = 124
	attrHandleTypeFabricSupported              = 128
	attrNumaConfig                             = 130
	attrNumaID                                 = 131
	attrMulticastSupported                     = 132
	attrHostNumaID                             = 134
	attrHostNumaVirtualMemoryManagementSupp    = 141
	attrHostVirtualMemoryManagementSupported   = 145
	attrOnlyPartialHostNativeAtomicSupported   = 147
	// attrMpsEnabled: contexts created on the device are clients of a
	// running MPS server (CUDA 12.x+), so kernels of several processes
	// can be resident at once.
	attrMpsEnabled = 133
)

// attrNames gives the C name of each attribute for skip messages and the
// environment report.
var attrNames = map[int32]string{
	attrMaxThreadsPerBlock:                     "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
	attrWarpSize:                               "CU_DEVICE_ATTRIBUTE_WARP_SIZE",
	attrMultiprocessorCount:                    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
	attrComputeMode:                            "CU_DEVICE_ATTRIBUTE_COMPUTE_MODE",
	attrUnifiedAddressing:                      "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING",
	attrComputeCapabilityMajor:                 "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
	attrComputeCapabilityMinor:                 "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
	attrManagedMemory:                          "CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY",
	attrHostNativeAtomicSupported:              "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED",
	attrPageableMemoryAccess:                   "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS",
	attrConcurrentManagedAccess:                "CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS",
	attrVirtualMemoryManagementSupported:       "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
	attrHandleTypePosixFileDescriptorSupported: "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED",
	attrGPUDirectRDMAWithCudaVMMSupported:      "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED",
	attrDmaBufSupported:                        "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED",
	attrHandleTypeFabricSupported:              "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED",
	attrNumaConfig:                             "CU_DEVICE_ATTRIBUTE_NUMA_CONFIG",
	attrNumaID:                                 "CU_DEVICE_ATTRIBUTE_NUMA_ID",
	attrMulticastSupported:                     "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED",
	attrHostNumaID:                             "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID",
	attrHostNumaVirtualMemoryManagementSupp:    "CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
	attrHostVirtualMemoryManagementSupported:   "CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
	attrOnlyPartialHostNativeAtomicSupported:   "CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED",
	attrMpsEnabled:                             "CU_DEVICE_ATTRIBUTE_MPS_ENABLED",
}

// CUdevice_P2PAttribute (§2.5).
const (
	p2pPerformanceRank                  = 1
	p2pAccessSupported                  = 2
	p2pNativeAtomicSupported            = 3
	p2pCudaArrayAccessSupported         = 4
	p2pOnlyPartialNativeAtomicSupported = 5
)

// CUmemAllocationType.
const memAllocationTypePinned = 1

// CUmemLocationType.
const (
	memLocationTypeInvalid         = 0
	memLocationTypeDevice          = 1
	memLocationTypeHost            = 2
	memLocationTypeHostNuma        = 3
	memLocationTypeHostNumaCurrent = 4
)

// CUmemAllocationHandleType (bit flags).
const (
	memHandleTypeNone                = 0
	memHandleTypePosixFileDescriptor = 1
	memHandleTypeWin32               = 2
	memHandleTypeWin32KMT            = 4
	memHandleTypeFabric              = 8
)

// CUmemAccess_flags.
const (
	memAccessFlagsProtNone      = 0
	memAccessFlagsProtRead      = 1
	memAccessFlagsProtReadWrite = 3
)

// CUmemAllocationGranularity_flags.
const (
	memAllocGranularityMinimum     = 0
	memAllocGranularityRecommended = 1
)

// CUmemRangeHandleType and CUmemRangeFlags (dma-buf export).
const (
	memRangeHandleTypeDmaBufFD        = 1
	memRangeFlagDmaBufMappingTypePCIe = 1
)

// CUipcMem_flags and the handle size.
const (
	ipcMemLazyEnablePeerAccess = 1
	ipcHandleSize              = 64
)

// CUstream_flags and CUevent_flags.
const (
	streamDefault     = 0
	streamNonBlocking = 1

	eventDefault       = 0
	eventBlockingSync  = 1
	eventDisableTiming = 2
	eventInterprocess  = 4
)

// CUjit_option (selected).
const (
	jitMaxRegisters            = 0
	jitInfoLogBuffer           = 3
	jitInfoLogBufferSizeBytes  = 4
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
	jitLogVerbose              = 12
)

// CUresult values this package treats specially (§2.8).
const (
	cudaSuccess                       = 0
	cudaErrorInvalidValue             = 1
	cudaErrorOutOfMemory              = 2
	cudaErrorNotInitialized           = 3
	cudaErrorDeinitialized            = 4
	cudaErrorStubLibrary              = 34
	cudaErrorNoDevice                 = 100
	cudaErrorInvalidDevice            = 101
	cudaErrorInvalidContext           = 201
	cudaErrorECCUncorrectable         = 214
	cudaErrorNVLinkUncorrectable      = 220
	cudaErrorContained                = 226
	cudaErrorNotFound                 = 500
	cudaErrorNotReady                 = 600
	cudaErrorIllegalAddress           = 700
	cudaErrorLaunchTimeout            = 702
	cudaErrorPeerAccessAlreadyEnabled = 704
	cudaErrorAssert                   = 710
	cudaErrorHardwareStackError       = 714
	cudaErrorIllegalInstruction       = 715
	cudaErrorMisalignedAddress        = 716
	cudaErrorInvalidAddressSpace      = 717
	cudaErrorInvalidPC                = 718
	cudaErrorLaunchFailed             = 719
	cudaErrorTensorMemoryLeak         = 721
	cudaErrorNotSupported             = 801
	cudaErrorUnknown                  = 999
)

// stickyCodes are the errors after which the context is unusable: a kernel
// fault (ILLEGAL_ADDRESS and the 714–719 family), a device-side assert, a
// watchdog timeout, an uncorrectable ECC or NVLink error, a contained error.
// The rank reports them as a GPU fault and exits.
var stickyCodes = map[int]bool{
	cudaErrorECCUncorrectable:    true,
	cudaErrorNVLinkUncorrectable: true,
	cudaErrorContained:           true,
	cudaErrorIllegalAddress:      true,
	cudaErrorLaunchTimeout:       true,
	cudaErrorAssert:              true,
	cudaErrorHardwareStackError:  true,
	cudaErrorIllegalInstruction:  true,
	cudaErrorMisalignedAddress:   true,
	cudaErrorInvalidAddressSpace: true,
	cudaErrorInvalidPC:           true,
	cudaErrorLaunchFailed:        true,
	cudaErrorTensorMemoryLeak:    true,
}

// errorNames is the fallback for cuGetErrorName: it names a code when the
// library is absent, the symbol is missing or the driver does not know the
// code. Values from cuda.h 13.0 (cudaError_enum).
var errorNames = map[int]string{
	0:   "CUDA_SUCCESS",
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	5:   "CUDA_ERROR_PROFILER_DISABLED",
	6:   "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
	7:   "CUDA_ERROR_PROFILER_ALREADY_STARTED",
	8:   "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	36:  "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED",
	207: "CUDA_ERROR_ARRAY_IS_MAPPED",
	208: "CUDA_ERROR_ALREADY_MAPPED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED",
	211: "CUDA_ERROR_NOT_MAPPED",
	212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
	216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
	226: "CUDA_ERROR_CONTAINED",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	402: "CUDA_ERROR_LOSSY_QUERY",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT",
	711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	721: "CUDA_ERROR_TENSOR_MEMORY_LEAK",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
	806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
	808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
	809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
	810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	811: "CUDA_ERROR_CDP_NOT_SUPPORTED",
	812: "CUDA_ERROR_CDP_VERSION_MISMATCH",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	902: "CUDA_ERROR_STREAM_CAPTURE_MERGE",
	903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
	907: "CUDA_ERROR_CAPTURED_EVENT",
	908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	909: "CUDA_ERROR_TIMEOUT",
	910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
	911: "CUDA_ERROR_EXTERNAL_DEVICE",
	912: "CUDA_ERROR_INVALID_CLUSTER_SIZE",
	913: "CUDA_ERROR_FUNCTION_NOT_LOADED",
	914: "CUDA_ERROR_INVALID_RESOURCE_TYPE",
	915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
	999: "CUDA_ERROR_UNKNOWN",
}
