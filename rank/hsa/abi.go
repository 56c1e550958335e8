package hsa

import (
	"unsafe"

	"p2patomics/internal/amdabi"
)

// Values and layouts from ROCR inc/hsa.h and inc/hsa_ext_amd.h (docs/AMD.md). Every one is checked against Debian's
// ROCm 6.4 and 7.2 headers by abi_test.go (scripts/amd-headers.sh); names
// keep the C spelling after the prefix so a grep for the C name finds them.

// hsa_status_t
const (
	statusSuccess                    = 0x0
	statusInfoBreak                  = 0x1
	statusError                      = 0x1000
	statusErrorInvalidArgument       = 0x1001
	statusErrorInvalidAllocation     = 0x1003
	statusErrorInvalidAgent          = 0x1004
	statusErrorOutOfResources        = 0x1008
	statusErrorNotInitialized        = 0x100B
	statusErrorIncompatibleArguments = 0x100D
	statusErrorInvalidISA            = 0x100F
	statusErrorInvalidCodeObject     = 0x1010
	statusErrorInvalidSymbolName     = 0x1013
	statusErrorException             = 0x1016
	statusErrorInvalidISAName        = 0x1017
	statusErrorFatal                 = 0x1026
	// what ROCr passes to a queue's error callback (onQueueError)
	statusErrorInvalidPacketFormat     = 0x1009
	statusErrorMemoryApertureViolation = 41
	statusErrorIllegalInstruction      = 42
	statusErrorMemoryFault             = 43
	statusErrorOutOfRegisters          = 45
)

// hsa_system_info_t
const (
	systemInfoVersionMajor            = 0
	systemInfoVersionMinor            = 1
	systemInfoTimestampFrequency      = 3     // uint64 Hz: unit of signal wait timeouts
	amdSystemInfoBuildVersion         = 0x200 // const char*
	amdSystemInfoDmabufSupported      = 0x204 // bool
	amdSystemInfoVirtualMemAPISupport = 0x205 // bool
	amdSystemInfoXnackEnabled         = 0x206 // bool
	amdSystemInfoExtVersionMajor      = 0x207 // uint16
	amdSystemInfoExtVersionMinor      = 0x208 // uint16
)

// hsa_agent_info_t, hsa_amd_agent_info_t, hsa_device_type_t, hsa_isa_info_t
const (
	agentInfoName           = 0  // char[64]
	agentInfoVendorName     = 1  // char[64]
	agentInfoQueueMaxSize   = 14 // uint32
	agentInfoNode           = 16 // uint32
	agentInfoDevice         = 17 // hsa_device_type_t
	deviceTypeCPU           = 0
	deviceTypeGPU           = 1
	amdAgentInfoCUCount     = 0xA002 // uint32
	amdAgentInfoBDFID       = 0xA006 // uint32
	amdAgentInfoProductName = 0xA009 // char[64]
	amdAgentInfoDomain      = 0xA00F // uint32
	amdAgentInfoUUID        = 0xA011 // char[21]
	amdAgentInfoMemoryAvail = 0xA015 // uint64
	amdAgentInfoDriverUID   = 0xA112 // uint32
	isaInfoNameLength       = 0
	isaInfoName             = 1
)

// memory pools
const (
	poolInfoSegment          = 0
	poolInfoGlobalFlags      = 1
	poolInfoSize             = 2
	poolInfoAllocAllowed     = 5 // bool
	poolInfoAllocGranule     = 6
	poolInfoAllocRecGranule  = 18 // ROCm >= 6.0
	poolInfoLocation         = 17
	segmentGlobal            = 0
	globalFlagKernargInit    = 1
	globalFlagFineGrained    = 2
	globalFlagCoarseGrained  = 4
	globalFlagExtScopeFine   = 8
	agentPoolInfoAccess      = 0
	agentPoolInfoNumLinkHops = 1
	agentPoolInfoLinkInfo    = 2
	poolAccessNeverAllowed   = 0
	linkTypeHyperTransport   = 0
	linkTypeQPI              = 1
	linkTypePCIe             = 2
	linkTypeInfiniband       = 3
	linkTypeXGMI             = 4
)

// vmem
const (
	memoryTypeNone       = 0 // MEMORY_TYPE_NONE (no HSA_AMD_ prefix in the header)
	memoryTypePinned     = 1
	accessPermissionNone = 0
	accessPermissionRW   = 3
)

// code objects
const (
	profileFull                = 1
	floatRoundingModeDefault   = 0
	symInfoKernargSegmentSize  = 11
	symInfoKernargSegmentAlign = 12
	symInfoGroupSegmentSize    = 13
	symInfoPrivateSegmentSize  = 14
	symInfoKernelObject        = 22
)

// queues, packets, signals
const (
	queueTypeMulti           = 0
	queueTypeSingle          = 1
	packetTypeInvalid        = 1
	packetTypeKernelDispatch = 2
	packetHeaderType         = 0  // bit offset
	packetHeaderBarrier      = 8  // bit offset
	packetHeaderAcquireScope = 9  // bit offset (SCACQUIRE_FENCE_SCOPE)
	packetHeaderReleaseScope = 11 // bit offset (SCRELEASE_FENCE_SCOPE)
	fenceScopeNone           = 0
	fenceScopeAgent          = 1
	fenceScopeSystem         = 2
	dispatchSetupDimensions  = 0 // bit offset of the dimension count in setup
	signalConditionEQ        = 0
	signalConditionLT        = 2
	waitStateBlocked         = 0
	waitStateActive          = 1
)

// system events
const (
	eventMemoryFault    = 0
	eventHWException    = 1
	eventMemoryError    = 2
	hwCauseGPUHang      = 1 << 0
	hwCauseECC          = 1 << 1
	faultPageNotPresent = 1 << 0
	faultReadOnly       = 1 << 1
	faultNX             = 1 << 2
	faultHostOnly       = 1 << 3
	faultDRAMECC        = 1 << 4
	faultImprecise      = 1 << 5
	faultSRAMECC        = 1 << 6
	faultHang           = 1 << 31
)

// dispatchPacket mirrors hsa_kernel_dispatch_packet_t (64 bytes).
type dispatchPacket struct {
	Header             uint16
	Setup              uint16
	WorkgroupSizeX     uint16
	WorkgroupSizeY     uint16
	WorkgroupSizeZ     uint16
	Reserved0          uint16
	GridSizeX          uint32
	GridSizeY          uint32
	GridSizeZ          uint32
	PrivateSegmentSize uint32
	GroupSegmentSize   uint32
	KernelObject       uint64
	KernargAddress     uint64
	Reserved2          uint64
	CompletionSignal   uint64
}

// queue mirrors hsa_queue_t (40 bytes). Only read by Go; the runtime owns it.
type queue struct {
	Type           uint32
	Features       uint32
	BaseAddress    uintptr
	DoorbellSignal uint64
	Size           uint32
	Reserved1      uint32
	ID             uint64
}

// accessDesc mirrors hsa_amd_memory_access_desc_t: 4 bytes of padding after
// the permission, 16-byte stride in arrays.
type accessDesc struct {
	Permissions uint32
	_           uint32
	Agent       uint64
}

// linkInfo mirrors hsa_amd_memory_pool_link_info_t (28 bytes).
type linkInfo struct {
	MinLatency   uint32
	MaxLatency   uint32
	MinBandwidth uint32
	MaxBandwidth uint32
	Atomic32     bool
	Atomic64     bool
	Coherent     bool
	_            uint8
	LinkType     uint32
	NumaDistance uint32
}

// event mirrors the memory-fault arm of hsa_amd_event_t.
type event struct {
	EventType  uint32
	_          uint32
	Agent      uint64
	Address    uint64
	ReasonMask uint32
	_          uint32
}

// hwExceptionEvent mirrors the hw_exception arm of hsa_amd_event_t
// (hsa_amd_gpu_hw_exception_info_t: agent, reset_type, reset_cause).
type hwExceptionEvent struct {
	EventType  uint32
	_          uint32
	Agent      uint64
	ResetType  uint32
	ResetCause uint32
}

// eventSize is sizeof(hsa_amd_event_t): the union's largest member decides
// it; Go only reads the memory-fault arm, so it mirrors just the size.
const eventSize = 32

func u(v uintptr) uint64 { return uint64(v) }

// abiTable is every fact above in the C program's naming (scripts/amdabi/hsa_abi.c).
func abiTable() amdabi.Table {
	var p dispatchPacket
	var q queue
	var d accessDesc
	var l linkInfo
	var e event
	var hw hwExceptionEvent
	t := amdabi.Table{
		{Name: "sizeof.hsa_agent_t", Value: 8}, {Name: "sizeof.hsa_amd_memory_pool_t", Value: 8},
		{Name: "sizeof.hsa_signal_t", Value: 8}, {Name: "sizeof.hsa_amd_vmem_alloc_handle_t", Value: 8},
		{Name: "sizeof.hsa_isa_t", Value: 8}, {Name: "sizeof.hsa_executable_t", Value: 8},
		{Name: "sizeof.hsa_executable_symbol_t", Value: 8}, {Name: "sizeof.hsa_code_object_reader_t", Value: 8},
		{Name: "sizeof.hsa_loaded_code_object_t", Value: 8},
		{Name: "sizeof.hsa_status_t", Value: 4}, {Name: "sizeof.hsa_signal_value_t", Value: 8},

		{Name: "sizeof.hsa_kernel_dispatch_packet_t", Value: u(unsafe.Sizeof(p))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.header", Value: u(unsafe.Offsetof(p.Header))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.setup", Value: u(unsafe.Offsetof(p.Setup))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_x", Value: u(unsafe.Offsetof(p.WorkgroupSizeX))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_y", Value: u(unsafe.Offsetof(p.WorkgroupSizeY))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_z", Value: u(unsafe.Offsetof(p.WorkgroupSizeZ))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.reserved0", Value: u(unsafe.Offsetof(p.Reserved0))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_x", Value: u(unsafe.Offsetof(p.GridSizeX))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_y", Value: u(unsafe.Offsetof(p.GridSizeY))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_z", Value: u(unsafe.Offsetof(p.GridSizeZ))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.private_segment_size", Value: u(unsafe.Offsetof(p.PrivateSegmentSize))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.group_segment_size", Value: u(unsafe.Offsetof(p.GroupSegmentSize))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.kernel_object", Value: u(unsafe.Offsetof(p.KernelObject))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.kernarg_address", Value: u(unsafe.Offsetof(p.KernargAddress))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.reserved2", Value: u(unsafe.Offsetof(p.Reserved2))},
		{Name: "offsetof.hsa_kernel_dispatch_packet_t.completion_signal", Value: u(unsafe.Offsetof(p.CompletionSignal))},

		{Name: "sizeof.hsa_queue_t", Value: u(unsafe.Sizeof(q))},
		{Name: "offsetof.hsa_queue_t.type", Value: u(unsafe.Offsetof(q.Type))},
		{Name: "offsetof.hsa_queue_t.features", Value: u(unsafe.Offsetof(q.Features))},
		{Name: "offsetof.hsa_queue_t.base_address", Value: u(unsafe.Offsetof(q.BaseAddress))},
		{Name: "offsetof.hsa_queue_t.doorbell_signal", Value: u(unsafe.Offsetof(q.DoorbellSignal))},
		{Name: "offsetof.hsa_queue_t.size", Value: u(unsafe.Offsetof(q.Size))},
		{Name: "offsetof.hsa_queue_t.reserved1", Value: u(unsafe.Offsetof(q.Reserved1))},
		{Name: "offsetof.hsa_queue_t.id", Value: u(unsafe.Offsetof(q.ID))},

		{Name: "sizeof.hsa_amd_memory_access_desc_t", Value: u(unsafe.Sizeof(d))},
		{Name: "offsetof.hsa_amd_memory_access_desc_t.permissions", Value: u(unsafe.Offsetof(d.Permissions))},
		{Name: "offsetof.hsa_amd_memory_access_desc_t.agent_handle", Value: u(unsafe.Offsetof(d.Agent))},

		{Name: "sizeof.hsa_amd_memory_pool_link_info_t", Value: u(unsafe.Sizeof(l))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.min_latency", Value: u(unsafe.Offsetof(l.MinLatency))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.max_latency", Value: u(unsafe.Offsetof(l.MaxLatency))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.min_bandwidth", Value: u(unsafe.Offsetof(l.MinBandwidth))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.max_bandwidth", Value: u(unsafe.Offsetof(l.MaxBandwidth))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.atomic_support_32bit", Value: u(unsafe.Offsetof(l.Atomic32))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.atomic_support_64bit", Value: u(unsafe.Offsetof(l.Atomic64))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.coherent_support", Value: u(unsafe.Offsetof(l.Coherent))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.link_type", Value: u(unsafe.Offsetof(l.LinkType))},
		{Name: "offsetof.hsa_amd_memory_pool_link_info_t.numa_distance", Value: u(unsafe.Offsetof(l.NumaDistance))},

		{Name: "sizeof.hsa_amd_event_t", Value: eventSize},
		{Name: "offsetof.hsa_amd_event_t.event_type", Value: u(unsafe.Offsetof(e.EventType))},
		{Name: "offsetof.hsa_amd_event_t.memory_fault.agent", Value: u(unsafe.Offsetof(e.Agent))},
		{Name: "offsetof.hsa_amd_event_t.memory_fault.virtual_address", Value: u(unsafe.Offsetof(e.Address))},
		{Name: "offsetof.hsa_amd_event_t.memory_fault.fault_reason_mask", Value: u(unsafe.Offsetof(e.ReasonMask))},
		{Name: "offsetof.hsa_amd_event_t.hw_exception.agent", Value: u(unsafe.Offsetof(hw.Agent))},
		{Name: "offsetof.hsa_amd_event_t.hw_exception.reset_type", Value: u(unsafe.Offsetof(hw.ResetType))},
		{Name: "offsetof.hsa_amd_event_t.hw_exception.reset_cause", Value: u(unsafe.Offsetof(hw.ResetCause))},
	}
	c := func(name string, v uint64) { t = append(t, amdabi.Item{Name: name, Value: v}) }
	c("HSA_STATUS_SUCCESS", statusSuccess)
	c("HSA_STATUS_INFO_BREAK", statusInfoBreak)
	c("HSA_STATUS_ERROR", statusError)
	c("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT", statusErrorInvalidPacketFormat)
	c("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", statusErrorMemoryApertureViolation)
	c("HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", statusErrorIllegalInstruction)
	c("HSA_STATUS_ERROR_MEMORY_FAULT", statusErrorMemoryFault)
	c("HSA_STATUS_ERROR_OUT_OF_REGISTERS", statusErrorOutOfRegisters)
	c("HSA_STATUS_ERROR_INVALID_ARGUMENT", statusErrorInvalidArgument)
	c("HSA_STATUS_ERROR_INVALID_ALLOCATION", statusErrorInvalidAllocation)
	c("HSA_STATUS_ERROR_INVALID_AGENT", statusErrorInvalidAgent)
	c("HSA_STATUS_ERROR_OUT_OF_RESOURCES", statusErrorOutOfResources)
	c("HSA_STATUS_ERROR_NOT_INITIALIZED", statusErrorNotInitialized)
	c("HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", statusErrorIncompatibleArguments)
	c("HSA_STATUS_ERROR_INVALID_ISA", statusErrorInvalidISA)
	c("HSA_STATUS_ERROR_INVALID_CODE_OBJECT", statusErrorInvalidCodeObject)
	c("HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", statusErrorInvalidSymbolName)
	c("HSA_STATUS_ERROR_EXCEPTION", statusErrorException)
	c("HSA_STATUS_ERROR_INVALID_ISA_NAME", statusErrorInvalidISAName)
	c("HSA_STATUS_ERROR_FATAL", statusErrorFatal)
	c("HSA_SYSTEM_INFO_VERSION_MAJOR", systemInfoVersionMajor)
	c("HSA_SYSTEM_INFO_VERSION_MINOR", systemInfoVersionMinor)
	c("HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY", systemInfoTimestampFrequency)
	c("HSA_AMD_SYSTEM_INFO_BUILD_VERSION", amdSystemInfoBuildVersion)
	c("HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED", amdSystemInfoDmabufSupported)
	c("HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED", amdSystemInfoVirtualMemAPISupport)
	c("HSA_AMD_SYSTEM_INFO_XNACK_ENABLED", amdSystemInfoXnackEnabled)
	c("HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR", amdSystemInfoExtVersionMajor)
	c("HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR", amdSystemInfoExtVersionMinor)
	c("HSA_AGENT_INFO_NAME", agentInfoName)
	c("HSA_AGENT_INFO_VENDOR_NAME", agentInfoVendorName)
	c("HSA_AGENT_INFO_QUEUE_MAX_SIZE", agentInfoQueueMaxSize)
	c("HSA_AGENT_INFO_NODE", agentInfoNode)
	c("HSA_AGENT_INFO_DEVICE", agentInfoDevice)
	c("HSA_DEVICE_TYPE_CPU", deviceTypeCPU)
	c("HSA_DEVICE_TYPE_GPU", deviceTypeGPU)
	c("HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", amdAgentInfoCUCount)
	c("HSA_AMD_AGENT_INFO_BDFID", amdAgentInfoBDFID)
	c("HSA_AMD_AGENT_INFO_PRODUCT_NAME", amdAgentInfoProductName)
	c("HSA_AMD_AGENT_INFO_DOMAIN", amdAgentInfoDomain)
	c("HSA_AMD_AGENT_INFO_UUID", amdAgentInfoUUID)
	c("HSA_AMD_AGENT_INFO_MEMORY_AVAIL", amdAgentInfoMemoryAvail)
	c("HSA_AMD_AGENT_INFO_DRIVER_UID", amdAgentInfoDriverUID)
	c("HSA_ISA_INFO_NAME_LENGTH", isaInfoNameLength)
	c("HSA_ISA_INFO_NAME", isaInfoName)
	c("HSA_AMD_MEMORY_POOL_INFO_SEGMENT", poolInfoSegment)
	c("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS", poolInfoGlobalFlags)
	c("HSA_AMD_MEMORY_POOL_INFO_SIZE", poolInfoSize)
	c("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", poolInfoAllocAllowed)
	c("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE", poolInfoAllocGranule)
	c("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE", poolInfoAllocRecGranule)
	c("HSA_AMD_MEMORY_POOL_INFO_LOCATION", poolInfoLocation)
	c("HSA_AMD_SEGMENT_GLOBAL", segmentGlobal)
	c("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT", globalFlagKernargInit)
	c("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED", globalFlagFineGrained)
	c("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED", globalFlagCoarseGrained)
	c("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_EXTENDED_SCOPE_FINE_GRAINED", globalFlagExtScopeFine)
	c("HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS", agentPoolInfoAccess)
	c("HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS", agentPoolInfoNumLinkHops)
	c("HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO", agentPoolInfoLinkInfo)
	c("HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED", poolAccessNeverAllowed)
	c("HSA_AMD_LINK_INFO_TYPE_HYPERTRANSPORT", linkTypeHyperTransport)
	c("HSA_AMD_LINK_INFO_TYPE_QPI", linkTypeQPI)
	c("HSA_AMD_LINK_INFO_TYPE_PCIE", linkTypePCIe)
	c("HSA_AMD_LINK_INFO_TYPE_INFINBAND", linkTypeInfiniband)
	c("HSA_AMD_LINK_INFO_TYPE_XGMI", linkTypeXGMI)
	c("MEMORY_TYPE_NONE", memoryTypeNone)
	c("MEMORY_TYPE_PINNED", memoryTypePinned)
	c("HSA_ACCESS_PERMISSION_NONE", accessPermissionNone)
	c("HSA_ACCESS_PERMISSION_RW", accessPermissionRW)
	c("HSA_PROFILE_FULL", profileFull)
	c("HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT", floatRoundingModeDefault)
	c("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE", symInfoKernargSegmentSize)
	c("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT", symInfoKernargSegmentAlign)
	c("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE", symInfoGroupSegmentSize)
	c("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE", symInfoPrivateSegmentSize)
	c("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT", symInfoKernelObject)
	c("HSA_QUEUE_TYPE_MULTI", queueTypeMulti)
	c("HSA_QUEUE_TYPE_SINGLE", queueTypeSingle)
	c("HSA_PACKET_TYPE_INVALID", packetTypeInvalid)
	c("HSA_PACKET_TYPE_KERNEL_DISPATCH", packetTypeKernelDispatch)
	c("HSA_PACKET_HEADER_TYPE", packetHeaderType)
	c("HSA_PACKET_HEADER_BARRIER", packetHeaderBarrier)
	c("HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE", packetHeaderAcquireScope)
	c("HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE", packetHeaderReleaseScope)
	c("HSA_FENCE_SCOPE_NONE", fenceScopeNone)
	c("HSA_FENCE_SCOPE_AGENT", fenceScopeAgent)
	c("HSA_FENCE_SCOPE_SYSTEM", fenceScopeSystem)
	c("HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS", dispatchSetupDimensions)
	c("HSA_SIGNAL_CONDITION_EQ", signalConditionEQ)
	c("HSA_SIGNAL_CONDITION_LT", signalConditionLT)
	c("HSA_WAIT_STATE_BLOCKED", waitStateBlocked)
	c("HSA_WAIT_STATE_ACTIVE", waitStateActive)
	c("HSA_AMD_GPU_MEMORY_FAULT_EVENT", eventMemoryFault)
	c("HSA_AMD_GPU_HW_EXCEPTION_EVENT", eventHWException)
	c("HSA_AMD_GPU_MEMORY_ERROR_EVENT", eventMemoryError)
	c("HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG", hwCauseGPUHang)
	c("HSA_AMD_HW_EXCEPTION_CAUSE_ECC", hwCauseECC)
	c("HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT", faultPageNotPresent)
	c("HSA_AMD_MEMORY_FAULT_READ_ONLY", faultReadOnly)
	c("HSA_AMD_MEMORY_FAULT_NX", faultNX)
	c("HSA_AMD_MEMORY_FAULT_HOST_ONLY", faultHostOnly)
	c("HSA_AMD_MEMORY_FAULT_DRAMECC", faultDRAMECC)
	c("HSA_AMD_MEMORY_FAULT_IMPRECISE", faultImprecise)
	c("HSA_AMD_MEMORY_FAULT_SRAMECC", faultSRAMECC)
	c("HSA_AMD_MEMORY_FAULT_HANG", faultHang)
	return t
}
