package inject

import (
	"fmt"
)

// CUDASymbols, HIPSymbols, HSASymbols and HostSymbols are, per backend,
// the names of the calls its choke point puts behind the injector (Call): the entries of rank/cuda's, rank/hip's (its
// HIP and HSA tables) and rank/hsa's binding tables that internal/binding
// wraps with the seam, and rank/host's sys calls. They are static, so the
// suite checks a rule's symbol (CheckSymbols) without loading a vendor
// library (each backend's row in harness/backends names its list as
// InjectSymbols, so no backend name is spelt here); each backend's tests check its list equals what its code binds
// (TestSymbolsAreTheTable in rank/cuda, rank/hip, rank/hsa; TestSymbols in
// rank/host), so the lists cannot drift from the bindings.
//
// Entry points outside the seam are not here (the error-name lookups, the
// HSA signal and queue-index calls that return a value, not a status):
// a rule naming one would never fire.
var (
	CUDASymbols = []string{
		"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
		"cuDeviceGetAttribute", "cuDeviceGetUuid_v2", "cuDeviceTotalMem_v2", "cuDeviceCanAccessPeer",
		"cuDeviceGetP2PAttribute", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
		"cuCtxSetCurrent", "cuCtxSynchronize", "cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemFree_v2",
		"cuMemGetAllocationGranularity", "cuMemCreate", "cuMemRelease", "cuMemAddressReserve",
		"cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuMemSetAccess", "cuMemExportToShareableHandle",
		"cuMemImportFromShareableHandle", "cuMemGetHandleForAddressRange", "cuIpcGetMemHandle",
		"cuIpcCloseMemHandle", "cuModuleLoadDataEx", "cuModuleGetFunction", "cuModuleUnload",
		"cuLaunchKernel", "cuStreamCreate", "cuStreamSynchronize", "cuStreamDestroy_v2", "cuEventCreate",
		"cuEventRecord", "cuEventDestroy_v2", "cuEventElapsedTime_v2", "cuEventElapsedTime",
		"cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoDAsync_v2", "cuIpcOpenMemHandle_v2",
	}
	HIPSymbols = []string{
		"hipInit", "hipGetDeviceCount", "hipSetDevice", "hipRuntimeGetVersion", "hipDriverGetVersion",
		"hipDeviceGetAttribute", "hipDeviceGetP2PAttribute", "hipExtGetLinkTypeAndHopCount", "hipGetDeviceProperties",
		"hipGetDevicePropertiesR0600", "hipMemGetAllocationGranularity", "hipMemCreate", "hipMemRelease",
		"hipMemAddressReserve", "hipMemAddressFree", "hipMemMap", "hipMemUnmap", "hipMemSetAccess",
		"hipMemExportToShareableHandle", "hipMemImportFromShareableHandle", "hipModuleLoadData",
		"hipModuleGetFunction", "hipModuleLaunchKernel", "hipModuleUnload", "hipEventCreate",
		"hipEventRecord", "hipEventSynchronize", "hipEventElapsedTime", "hipEventDestroy",
		"hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyDtoDAsync", "hipDeviceSynchronize", "hipMemGetInfo",
		"hipMalloc", "hipFree", "hsa_init", "hsa_system_get_info", "hsa_iterate_agents",
		"hsa_agent_get_info", "hsa_amd_agent_iterate_memory_pools", "hsa_amd_memory_pool_get_info",
		"hsa_amd_vmem_address_reserve", "hsa_amd_vmem_address_free", "hsa_amd_vmem_handle_create",
		"hsa_amd_vmem_handle_release", "hsa_amd_vmem_map", "hsa_amd_vmem_unmap",
		"hsa_amd_vmem_set_access", "hsa_amd_vmem_export_shareable_handle",
		"hsa_amd_vmem_import_shareable_handle",
	}
	HSASymbols = []string{
		"hsa_init", "hsa_shut_down", "hsa_system_get_info", "hsa_iterate_agents", "hsa_agent_get_info",
		"hsa_agent_iterate_isas", "hsa_isa_get_info_alt", "hsa_amd_agent_iterate_memory_pools",
		"hsa_amd_memory_pool_get_info", "hsa_amd_agent_memory_pool_get_info",
		"hsa_amd_memory_pool_allocate", "hsa_amd_memory_pool_free", "hsa_amd_agents_allow_access",
		"hsa_amd_memory_async_copy", "hsa_amd_memory_async_copy_on_engine",
		"hsa_amd_memory_copy_engine_status", "hsa_amd_memory_get_preferred_copy_engine",
		"hsa_signal_create", "hsa_signal_destroy",
		"hsa_queue_create", "hsa_queue_destroy", "hsa_code_object_reader_create_from_memory",
		"hsa_code_object_reader_destroy", "hsa_executable_create_alt",
		"hsa_executable_load_agent_code_object", "hsa_executable_freeze",
		"hsa_executable_get_symbol_by_name", "hsa_executable_symbol_get_info", "hsa_executable_destroy",
		"hsa_amd_register_system_event_handler", "hsa_amd_vmem_address_reserve",
		"hsa_amd_vmem_address_free", "hsa_amd_vmem_handle_create", "hsa_amd_vmem_handle_release",
		"hsa_amd_vmem_map", "hsa_amd_vmem_unmap", "hsa_amd_vmem_set_access",
		"hsa_amd_vmem_export_shareable_handle", "hsa_amd_vmem_import_shareable_handle",
	}
	HostSymbols = []string{"memfd_create", "ftruncate", "dup", "fstat", "mmap", "mprotect", "munmap", "memcpy_htod", "synchronize"}
)

// CheckSymbols refuses a fail, noop, fail-every or hang rule whose symbol
// no call of backend's choke point answers to (exactly, or as the name
// without its _vN suffix, as Call matches): such a rule would never fire.
// names is the backend's list (its row's InjectSymbols); for backend
// "auto", every backend's lists joined (a symbol any backend has passes).
func CheckSymbols(backend string, names []string, rules []Rule) error {
	for _, r := range rules {
		if r.Kind != Fail && r.Kind != Noop && r.Kind != FailEvery && !r.Hangs() {
			continue
		}
		switch {
		case len(names) == 0:
			return fmt.Errorf("%w: %s: backend %s has no call behind the injector", ErrRule, r, backend)
		case !matches(r.Target, names) && backend == "auto":
			return fmt.Errorf("%w: %s: no backend binds a call named %s", ErrRule, r, r.Target)
		case !matches(r.Target, names):
			return fmt.Errorf("%w: %s: backend %s binds no call named %s", ErrRule, r, backend, r.Target)
		}
	}
	return nil
}
