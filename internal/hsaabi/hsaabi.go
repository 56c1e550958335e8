// Package hsaabi holds the HSA runtime facts (values and layouts from ROCR
// inc/hsa.h and inc/hsa_ext_amd.h) that both AMD backends use: rank/hsa,
// which binds libhsa-runtime64 for its own allocations and dispatch, and
// rank/hip, whose one HSA-vmem allocation path (docs/AMD.md, "HIP on HSA
// vmem") binds the same library for agent and pool discovery and the
// hsa_amd_vmem_* calls. The backends are siblings and do not import each
// other (rank/hsa registers itself as a backend at init); the facts they
// share live here once. rank/hsa's abiTable includes Table, so its TestABI
// checks every item against ROCm 6.4.3 and 7.2.4 headers
// (scripts/amdabi/hsa_abi.c).
package hsaabi

import (
	"fmt"
	"unsafe"

	"p2patomics/internal/amdabi"
)

// hsa_status_t
const (
	StatusSuccess             = 0x0
	StatusInfoBreak           = 0x1
	StatusErrorInvalidAgent   = 0x1004
	StatusErrorOutOfResources = 0x1008
)

// hsa_system_info_t, hsa_agent_info_t, hsa_amd_agent_info_t, hsa_device_type_t
const (
	AmdSystemInfoVirtualMemAPISupport = 0x205 // bool
	AgentInfoNode                     = 16    // uint32
	AgentInfoDevice                   = 17    // hsa_device_type_t
	DeviceTypeCPU                     = 0
	DeviceTypeGPU                     = 1
	AmdAgentInfoUUID                  = 0xA011 // char[21]: "GPU-" and 16 hex digits
)

// memory pools
const (
	PoolInfoSegment         = 0
	PoolInfoGlobalFlags     = 1
	PoolInfoAllocAllowed    = 5 // bool
	PoolInfoAllocGranule    = 6
	PoolInfoAllocRecGranule = 18 // ROCm >= 6.0
	SegmentGlobal           = 0
	GlobalFlagKernargInit   = 1
	GlobalFlagFineGrained   = 2
	GlobalFlagCoarseGrained = 4
	GlobalFlagExtScopeFine  = 8
)

// vmem
const (
	MemoryTypeNone       = 0 // MEMORY_TYPE_NONE (no HSA_AMD_ prefix in the header)
	MemoryTypePinned     = 1
	AccessPermissionNone = 0
	AccessPermissionRW   = 3
)

// LinkTypePCIe is HSA_AMD_LINK_INFO_TYPE_PCIE (hsa_amd_link_info_type_t),
// what hipExtGetLinkTypeAndHopCount also answers. rank/hsa's abiTable
// checks it under that name (its linkTypePCIe is this).
const LinkTypePCIe = 2

// PCIeAtomicsEnv, set to 1, lets both AMD backends report P2P atomics on a
// PCIe link as the runtime does; unset, they hold them back with
// PCIeAtomicsUnverified (issue 40, review 3 P9).
const PCIeAtomicsEnv = "P2PAT_AMD_PCIE_P2P_ATOMICS"

// PCIeAtomicsUnverified is why: KFD clears a PCIe link's atomics bits only
// when the source GPU could not enable AtomicOps to its root port or the
// target lacks AtomicOp completion (linux kfd_topology.c
// kfd_set_iolink_no_atomics); nothing checks that the root complex routes
// AtomicOps peer to peer between root ports. Run on that bit alone, a P2P
// atomic case may fail, time out or hang the GPU where the truth is "not
// supported".
var PCIeAtomicsUnverified = "PCIe link: KFD's atomics bits say each GPU reaches its root port with AtomicOps, not that the root complex routes them peer to peer (kfd_topology.c kfd_set_iolink_no_atomics); held back as unverified, set " + PCIeAtomicsEnv + "=1 to run the P2P atomic cases on it"

// AccessDesc mirrors hsa_amd_memory_access_desc_t: 4 bytes of padding after
// the permission, 16-byte stride in arrays.
type AccessDesc struct {
	Permissions uint32
	_           uint32
	Agent       uint64
}

// Table is every fact above in the C program's naming. rank/hsa's abiTable
// appends it (one place checks each name once).
func Table() amdabi.Table {
	var d AccessDesc
	return amdabi.Table{
		{Name: "sizeof.hsa_amd_memory_access_desc_t", Value: uint64(unsafe.Sizeof(d))},
		{Name: "offsetof.hsa_amd_memory_access_desc_t.permissions", Value: uint64(unsafe.Offsetof(d.Permissions))},
		{Name: "offsetof.hsa_amd_memory_access_desc_t.agent_handle", Value: uint64(unsafe.Offsetof(d.Agent))},
		{Name: "HSA_STATUS_SUCCESS", Value: StatusSuccess},
		{Name: "HSA_STATUS_INFO_BREAK", Value: StatusInfoBreak},
		{Name: "HSA_STATUS_ERROR_INVALID_AGENT", Value: StatusErrorInvalidAgent},
		{Name: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", Value: StatusErrorOutOfResources},
		{Name: "HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED", Value: AmdSystemInfoVirtualMemAPISupport},
		{Name: "HSA_AGENT_INFO_NODE", Value: AgentInfoNode},
		{Name: "HSA_AGENT_INFO_DEVICE", Value: AgentInfoDevice},
		{Name: "HSA_DEVICE_TYPE_CPU", Value: DeviceTypeCPU},
		{Name: "HSA_DEVICE_TYPE_GPU", Value: DeviceTypeGPU},
		{Name: "HSA_AMD_AGENT_INFO_UUID", Value: AmdAgentInfoUUID},
		{Name: "HSA_AMD_MEMORY_POOL_INFO_SEGMENT", Value: PoolInfoSegment},
		{Name: "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS", Value: PoolInfoGlobalFlags},
		{Name: "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", Value: PoolInfoAllocAllowed},
		{Name: "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE", Value: PoolInfoAllocGranule},
		{Name: "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE", Value: PoolInfoAllocRecGranule},
		{Name: "HSA_AMD_SEGMENT_GLOBAL", Value: SegmentGlobal},
		{Name: "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT", Value: GlobalFlagKernargInit},
		{Name: "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED", Value: GlobalFlagFineGrained},
		{Name: "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED", Value: GlobalFlagCoarseGrained},
		{Name: "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_EXTENDED_SCOPE_FINE_GRAINED", Value: GlobalFlagExtScopeFine},
		{Name: "MEMORY_TYPE_NONE", Value: MemoryTypeNone},
		{Name: "MEMORY_TYPE_PINNED", Value: MemoryTypePinned},
		{Name: "HSA_ACCESS_PERMISSION_NONE", Value: AccessPermissionNone},
		{Name: "HSA_ACCESS_PERMISSION_RW", Value: AccessPermissionRW},
	}
}

// StatusName is the hsa_status_t enumerator's name (hsa.h and
// hsa_ext_amd.h of ROCm 7.2), for errors and the trace.
func StatusName(st uint32) string {
	if n, ok := statusNames[st]; ok {
		return n
	}
	return fmt.Sprintf("hsa status 0x%x", st)
}

var statusNames = map[uint32]string{
	0x0: "HSA_STATUS_SUCCESS", 0x1: "HSA_STATUS_INFO_BREAK",
	0x1000: "HSA_STATUS_ERROR", 0x1001: "HSA_STATUS_ERROR_INVALID_ARGUMENT",
	0x1002: "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", 0x1003: "HSA_STATUS_ERROR_INVALID_ALLOCATION",
	0x1004: "HSA_STATUS_ERROR_INVALID_AGENT", 0x1005: "HSA_STATUS_ERROR_INVALID_REGION",
	0x1006: "HSA_STATUS_ERROR_INVALID_SIGNAL", 0x1007: "HSA_STATUS_ERROR_INVALID_QUEUE",
	0x1008: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", 0x1009: "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
	0x100A: "HSA_STATUS_ERROR_RESOURCE_FREE", 0x100B: "HSA_STATUS_ERROR_NOT_INITIALIZED",
	0x100C: "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", 0x100D: "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
	0x100E: "HSA_STATUS_ERROR_INVALID_INDEX", 0x100F: "HSA_STATUS_ERROR_INVALID_ISA",
	0x1010: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", 0x1011: "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
	0x1012: "HSA_STATUS_ERROR_FROZEN_EXECUTABLE", 0x1013: "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
	0x1014: "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", 0x1015: "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
	0x1016: "HSA_STATUS_ERROR_EXCEPTION", 0x1017: "HSA_STATUS_ERROR_INVALID_ISA_NAME",
	0x1018: "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", 0x1019: "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
	0x1020: "HSA_STATUS_ERROR_INVALID_FILE", 0x1021: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
	0x1022: "HSA_STATUS_ERROR_INVALID_CACHE", 0x1023: "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
	0x1024: "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", 0x1025: "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
	0x1026: "HSA_STATUS_ERROR_FATAL",
	40:     "HSA_STATUS_ERROR_INVALID_MEMORY_POOL", 41: "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
	42: "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", 43: "HSA_STATUS_ERROR_MEMORY_FAULT",
	44: "HSA_STATUS_CU_MASK_REDUCED", 45: "HSA_STATUS_ERROR_OUT_OF_REGISTERS",
	46: "HSA_STATUS_ERROR_RESOURCE_BUSY", 47: "HSA_STATUS_ERROR_NOT_SUPPORTED",
}
