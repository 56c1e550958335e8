/* hsa_abi.c: prints the size and field offsets of every HSA struct that
 * rank/hsa mirrors in Go, and the value of every enum/constant it uses, one
 * "name value" line each (decimal). Compiled by scripts/amd-headers.sh with
 * plain gcc against Debian's libhsa-runtime-dev headers; rank/hsa/abi_test.go
 * compares the output with the Go side. Add a line here whenever the Go code
 * starts to depend on a new layout or value. */
#include <stddef.h>
#include <stdio.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define SZ(T) printf("sizeof.%s %zu\n", #T, sizeof(T))
#define OFF(T, f) printf("offsetof.%s.%s %zu\n", #T, #f, offsetof(T, f))
#define C(X) printf("%s %llu\n", #X, (unsigned long long)(X))

int main(void) {
  /* handles: single uint64 structs, passed to purego as uint64 */
  SZ(hsa_agent_t); SZ(hsa_amd_memory_pool_t); SZ(hsa_signal_t);
  SZ(hsa_amd_vmem_alloc_handle_t); SZ(hsa_isa_t); SZ(hsa_executable_t);
  SZ(hsa_executable_symbol_t); SZ(hsa_code_object_reader_t); SZ(hsa_loaded_code_object_t);
  SZ(hsa_status_t); SZ(hsa_signal_value_t);

  SZ(hsa_kernel_dispatch_packet_t);
  OFF(hsa_kernel_dispatch_packet_t, header); OFF(hsa_kernel_dispatch_packet_t, setup);
  OFF(hsa_kernel_dispatch_packet_t, workgroup_size_x); OFF(hsa_kernel_dispatch_packet_t, workgroup_size_y);
  OFF(hsa_kernel_dispatch_packet_t, workgroup_size_z); OFF(hsa_kernel_dispatch_packet_t, reserved0);
  OFF(hsa_kernel_dispatch_packet_t, grid_size_x); OFF(hsa_kernel_dispatch_packet_t, grid_size_y);
  OFF(hsa_kernel_dispatch_packet_t, grid_size_z); OFF(hsa_kernel_dispatch_packet_t, private_segment_size);
  OFF(hsa_kernel_dispatch_packet_t, group_segment_size); OFF(hsa_kernel_dispatch_packet_t, kernel_object);
  OFF(hsa_kernel_dispatch_packet_t, kernarg_address); OFF(hsa_kernel_dispatch_packet_t, reserved2);
  OFF(hsa_kernel_dispatch_packet_t, completion_signal);

  SZ(hsa_queue_t);
  OFF(hsa_queue_t, type); OFF(hsa_queue_t, features); OFF(hsa_queue_t, base_address);
  OFF(hsa_queue_t, doorbell_signal); OFF(hsa_queue_t, size); OFF(hsa_queue_t, reserved1); OFF(hsa_queue_t, id);

  SZ(hsa_amd_memory_access_desc_t);
  OFF(hsa_amd_memory_access_desc_t, permissions); OFF(hsa_amd_memory_access_desc_t, agent_handle);

  SZ(hsa_amd_memory_pool_link_info_t);
  OFF(hsa_amd_memory_pool_link_info_t, min_latency); OFF(hsa_amd_memory_pool_link_info_t, max_latency);
  OFF(hsa_amd_memory_pool_link_info_t, min_bandwidth); OFF(hsa_amd_memory_pool_link_info_t, max_bandwidth);
  OFF(hsa_amd_memory_pool_link_info_t, atomic_support_32bit); OFF(hsa_amd_memory_pool_link_info_t, atomic_support_64bit);
  OFF(hsa_amd_memory_pool_link_info_t, coherent_support); OFF(hsa_amd_memory_pool_link_info_t, link_type);
  OFF(hsa_amd_memory_pool_link_info_t, numa_distance);

  SZ(hsa_amd_event_t);
  OFF(hsa_amd_event_t, event_type); OFF(hsa_amd_event_t, memory_fault.agent);
  OFF(hsa_amd_event_t, memory_fault.virtual_address); OFF(hsa_amd_event_t, memory_fault.fault_reason_mask);
  OFF(hsa_amd_event_t, hw_exception.agent); OFF(hsa_amd_event_t, hw_exception.reset_type);
  OFF(hsa_amd_event_t, hw_exception.reset_cause);

  /* status codes */
  C(HSA_STATUS_SUCCESS); C(HSA_STATUS_INFO_BREAK); C(HSA_STATUS_ERROR); C(HSA_STATUS_ERROR_INVALID_ARGUMENT);
  C(HSA_STATUS_ERROR_INVALID_ALLOCATION); C(HSA_STATUS_ERROR_INVALID_AGENT); C(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
  C(HSA_STATUS_ERROR_NOT_INITIALIZED); C(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS); C(HSA_STATUS_ERROR_INVALID_ISA);
  C(HSA_STATUS_ERROR_INVALID_CODE_OBJECT); C(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME); C(HSA_STATUS_ERROR_EXCEPTION);
  C(HSA_STATUS_ERROR_INVALID_ISA_NAME); C(HSA_STATUS_ERROR_FATAL);
  C(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT); C(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION);
  C(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION); C(HSA_STATUS_ERROR_MEMORY_FAULT); C(HSA_STATUS_ERROR_OUT_OF_REGISTERS);

  /* system info */
  C(HSA_SYSTEM_INFO_VERSION_MAJOR); C(HSA_SYSTEM_INFO_VERSION_MINOR); C(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY);
  C(HSA_AMD_SYSTEM_INFO_BUILD_VERSION); C(HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED);
  C(HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED); C(HSA_AMD_SYSTEM_INFO_XNACK_ENABLED);
  C(HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR); C(HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR);

  /* agents and ISAs */
  C(HSA_AGENT_INFO_NAME); C(HSA_AGENT_INFO_VENDOR_NAME); C(HSA_AGENT_INFO_QUEUE_MAX_SIZE);
  C(HSA_AGENT_INFO_NODE); C(HSA_AGENT_INFO_DEVICE);
  C(HSA_DEVICE_TYPE_CPU); C(HSA_DEVICE_TYPE_GPU);
  C(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT); C(HSA_AMD_AGENT_INFO_BDFID); C(HSA_AMD_AGENT_INFO_PRODUCT_NAME);
  C(HSA_AMD_AGENT_INFO_DOMAIN); C(HSA_AMD_AGENT_INFO_UUID); C(HSA_AMD_AGENT_INFO_MEMORY_AVAIL);
  C(HSA_AMD_AGENT_INFO_DRIVER_UID); C(HSA_AMD_AGENT_INFO_NEAREST_CPU);
  C(HSA_ISA_INFO_NAME_LENGTH); C(HSA_ISA_INFO_NAME);

  /* memory pools */
  C(HSA_AMD_MEMORY_POOL_INFO_SEGMENT); C(HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS); C(HSA_AMD_MEMORY_POOL_INFO_SIZE);
  C(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED); C(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE);
  C(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE); C(HSA_AMD_MEMORY_POOL_INFO_LOCATION);
  C(HSA_AMD_SEGMENT_GLOBAL);
  C(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT); C(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
  C(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED); C(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_EXTENDED_SCOPE_FINE_GRAINED);
  C(HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS); C(HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS);
  C(HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO);
  C(HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED);
  C(HSA_AMD_LINK_INFO_TYPE_HYPERTRANSPORT); C(HSA_AMD_LINK_INFO_TYPE_QPI); C(HSA_AMD_LINK_INFO_TYPE_PCIE);
  C(HSA_AMD_LINK_INFO_TYPE_INFINBAND); C(HSA_AMD_LINK_INFO_TYPE_XGMI);

  /* vmem */
  C(MEMORY_TYPE_NONE); C(MEMORY_TYPE_PINNED);
  C(HSA_ACCESS_PERMISSION_NONE); C(HSA_ACCESS_PERMISSION_RW);

  /* code objects */
  C(HSA_PROFILE_FULL); C(HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT);
  C(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE);
  C(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT);
  C(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE);
  C(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE);
  C(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);

  /* queues, packets, signals */
  C(HSA_QUEUE_TYPE_MULTI); C(HSA_QUEUE_TYPE_SINGLE);
  C(HSA_PACKET_TYPE_INVALID); C(HSA_PACKET_TYPE_KERNEL_DISPATCH);
  C(HSA_PACKET_HEADER_TYPE); C(HSA_PACKET_HEADER_BARRIER);
  C(HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE); C(HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  C(HSA_FENCE_SCOPE_NONE); C(HSA_FENCE_SCOPE_AGENT); C(HSA_FENCE_SCOPE_SYSTEM);
  C(HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  C(HSA_SIGNAL_CONDITION_EQ); C(HSA_SIGNAL_CONDITION_LT);
  C(HSA_WAIT_STATE_BLOCKED); C(HSA_WAIT_STATE_ACTIVE);

  /* GPU memory fault events */
  C(HSA_AMD_GPU_MEMORY_FAULT_EVENT); C(HSA_AMD_GPU_HW_EXCEPTION_EVENT); C(HSA_AMD_GPU_MEMORY_ERROR_EVENT);
  C(HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG); C(HSA_AMD_HW_EXCEPTION_CAUSE_ECC);
  C(HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT); C(HSA_AMD_MEMORY_FAULT_READ_ONLY); C(HSA_AMD_MEMORY_FAULT_NX);
  C(HSA_AMD_MEMORY_FAULT_HOST_ONLY); C(HSA_AMD_MEMORY_FAULT_DRAMECC); C(HSA_AMD_MEMORY_FAULT_IMPRECISE);
  C(HSA_AMD_MEMORY_FAULT_SRAMECC); C(HSA_AMD_MEMORY_FAULT_HANG);
  return 0;
}
