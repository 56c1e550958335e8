package hsa

import (
	"slices"
	"unsafe"

	"p2patomics/internal/amdabi"
	"p2patomics/internal/hsaabi"
)

// Values and layouts from ROCR inc/hsa.h and inc/hsa_ext_amd.h (docs/AMD.md). Every one is checked against Debian's
// ROCm 6.4 and 7.2 headers by abi_test.go (scripts/amd-headers.sh); names
// keep the C spelling after the prefix so a grep for the C name finds them.

// hsa_status_t
const (
	statusSuccess                    = hsaabi.StatusSuccess
	statusInfoBreak                  = hsaabi.StatusInfoBreak
	statusError                      = 0x1000
	statusErrorInvalidArgument       = 0x1001
	statusErrorInvalidAllocation     = 0x1003
	statusErrorInvalidAgent          = hsaabi.StatusErrorInvalidAgent
	statusErrorOutOfResources        = hsaabi.StatusErrorOutOfResources
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
	amdSystemInfoVirtualMemAPISupport = hsaabi.AmdSystemInfoVirtualMemAPISupport
	amdSystemInfoXnackEnabled         = 0x206 // bool
	amdSystemInfoExtVersionMajor      = 0x207 // uint16
	amdSystemInfoExtVersionMinor      = 0x208 // uint16
)

// hsa_agent_info_t, hsa_amd_agent_info_t, hsa_device_type_t, hsa_isa_info_t
const (
	agentInfoName           = 0  // char[64]
	agentInfoVendorName     = 1  // char[64]
	agentInfoQueueMaxSize   = 14 // uint32
	agentInfoNode           = hsaabi.AgentInfoNode
	agentInfoDevice         = hsaabi.AgentInfoDevice
	deviceTypeCPU           = hsaabi.DeviceTypeCPU
	deviceTypeGPU           = hsaabi.DeviceTypeGPU
	amdAgentInfoCUCount     = 0xA002 // uint32
	amdAgentInfoBDFID       = 0xA006 // uint32
	amdAgentInfoProductName = 0xA009 // char[64]
	amdAgentInfoDomain      = 0xA00F // uint32
	amdAgentInfoUUID        = hsaabi.AmdAgentInfoUUID
	amdAgentInfoMemoryAvail = 0xA015 // uint64
	amdAgentInfoDriverUID   = 0xA112 // uint32
	amdAgentInfoNearestCPU  = 0xA113 // hsa_agent_t
	isaInfoNameLength       = 0
	isaInfoName             = 1
)

// memory pools
const (
	poolInfoSegment          = hsaabi.PoolInfoSegment
	poolInfoGlobalFlags      = hsaabi.PoolInfoGlobalFlags
	poolInfoSize             = 2
	poolInfoAllocAllowed     = hsaabi.PoolInfoAllocAllowed
	poolInfoAllocGranule     = hsaabi.PoolInfoAllocGranule
	poolInfoAllocRecGranule  = hsaabi.PoolInfoAllocRecGranule
	poolInfoLocation         = 17
	segmentGlobal            = hsaabi.SegmentGlobal
	globalFlagKernargInit    = hsaabi.GlobalFlagKernargInit
	globalFlagFineGrained    = hsaabi.GlobalFlagFineGrained
	globalFlagCoarseGrained  = hsaabi.GlobalFlagCoarseGrained
	globalFlagExtScopeFine   = hsaabi.GlobalFlagExtScopeFine
	agentPoolInfoAccess      = 0
	agentPoolInfoNumLinkHops = 1
	agentPoolInfoLinkInfo    = 2
	poolAccessNeverAllowed   = 0
	linkTypeHyperTransport   = 0
	linkTypeQPI              = 1
	linkTypePCIe             = hsaabi.LinkTypePCIe
	linkTypeInfiniband       = 3
	linkTypeXGMI             = 4
)

// vmem
const (
	memoryTypeNone       = hsaabi.MemoryTypeNone
	memoryTypePinned     = hsaabi.MemoryTypePinned
	accessPermissionNone = hsaabi.AccessPermissionNone
	accessPermissionRW   = hsaabi.AccessPermissionRW
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

// accessDesc is hsa_amd_memory_access_desc_t, shared with rank/hip (internal/hsaabi).
type accessDesc = hsaabi.AccessDesc

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

// layoutTable is every struct size and offset above in the C program's
// naming (scripts/amdabi/hsa_abi.c); hsa_amd_memory_access_desc_t is in
// hsaabi.Table, shared with rank/hip.
var layoutTable = amdabi.Table{
	{Name: "sizeof.hsa_agent_t", Value: 8}, {Name: "sizeof.hsa_amd_memory_pool_t", Value: 8},
	{Name: "sizeof.hsa_signal_t", Value: 8}, {Name: "sizeof.hsa_amd_vmem_alloc_handle_t", Value: 8},
	{Name: "sizeof.hsa_isa_t", Value: 8}, {Name: "sizeof.hsa_executable_t", Value: 8},
	{Name: "sizeof.hsa_executable_symbol_t", Value: 8}, {Name: "sizeof.hsa_code_object_reader_t", Value: 8},
	{Name: "sizeof.hsa_loaded_code_object_t", Value: 8},
	{Name: "sizeof.hsa_status_t", Value: 4}, {Name: "sizeof.hsa_signal_value_t", Value: 8},

	{Name: "sizeof.hsa_kernel_dispatch_packet_t", Value: u(unsafe.Sizeof(dispatchPacket{}))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.header", Value: u(unsafe.Offsetof(dispatchPacket{}.Header))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.setup", Value: u(unsafe.Offsetof(dispatchPacket{}.Setup))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_x", Value: u(unsafe.Offsetof(dispatchPacket{}.WorkgroupSizeX))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_y", Value: u(unsafe.Offsetof(dispatchPacket{}.WorkgroupSizeY))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.workgroup_size_z", Value: u(unsafe.Offsetof(dispatchPacket{}.WorkgroupSizeZ))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.reserved0", Value: u(unsafe.Offsetof(dispatchPacket{}.Reserved0))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_x", Value: u(unsafe.Offsetof(dispatchPacket{}.GridSizeX))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_y", Value: u(unsafe.Offsetof(dispatchPacket{}.GridSizeY))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.grid_size_z", Value: u(unsafe.Offsetof(dispatchPacket{}.GridSizeZ))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.private_segment_size", Value: u(unsafe.Offsetof(dispatchPacket{}.PrivateSegmentSize))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.group_segment_size", Value: u(unsafe.Offsetof(dispatchPacket{}.GroupSegmentSize))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.kernel_object", Value: u(unsafe.Offsetof(dispatchPacket{}.KernelObject))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.kernarg_address", Value: u(unsafe.Offsetof(dispatchPacket{}.KernargAddress))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.reserved2", Value: u(unsafe.Offsetof(dispatchPacket{}.Reserved2))},
	{Name: "offsetof.hsa_kernel_dispatch_packet_t.completion_signal", Value: u(unsafe.Offsetof(dispatchPacket{}.CompletionSignal))},

	{Name: "sizeof.hsa_queue_t", Value: u(unsafe.Sizeof(queue{}))},
	{Name: "offsetof.hsa_queue_t.type", Value: u(unsafe.Offsetof(queue{}.Type))},
	{Name: "offsetof.hsa_queue_t.features", Value: u(unsafe.Offsetof(queue{}.Features))},
	{Name: "offsetof.hsa_queue_t.base_address", Value: u(unsafe.Offsetof(queue{}.BaseAddress))},
	{Name: "offsetof.hsa_queue_t.doorbell_signal", Value: u(unsafe.Offsetof(queue{}.DoorbellSignal))},
	{Name: "offsetof.hsa_queue_t.size", Value: u(unsafe.Offsetof(queue{}.Size))},
	{Name: "offsetof.hsa_queue_t.reserved1", Value: u(unsafe.Offsetof(queue{}.Reserved1))},
	{Name: "offsetof.hsa_queue_t.id", Value: u(unsafe.Offsetof(queue{}.ID))},

	{Name: "sizeof.hsa_amd_memory_pool_link_info_t", Value: u(unsafe.Sizeof(linkInfo{}))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.min_latency", Value: u(unsafe.Offsetof(linkInfo{}.MinLatency))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.max_latency", Value: u(unsafe.Offsetof(linkInfo{}.MaxLatency))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.min_bandwidth", Value: u(unsafe.Offsetof(linkInfo{}.MinBandwidth))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.max_bandwidth", Value: u(unsafe.Offsetof(linkInfo{}.MaxBandwidth))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.atomic_support_32bit", Value: u(unsafe.Offsetof(linkInfo{}.Atomic32))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.atomic_support_64bit", Value: u(unsafe.Offsetof(linkInfo{}.Atomic64))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.coherent_support", Value: u(unsafe.Offsetof(linkInfo{}.Coherent))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.link_type", Value: u(unsafe.Offsetof(linkInfo{}.LinkType))},
	{Name: "offsetof.hsa_amd_memory_pool_link_info_t.numa_distance", Value: u(unsafe.Offsetof(linkInfo{}.NumaDistance))},

	{Name: "sizeof.hsa_amd_event_t", Value: eventSize},
	{Name: "offsetof.hsa_amd_event_t.event_type", Value: u(unsafe.Offsetof(event{}.EventType))},
	{Name: "offsetof.hsa_amd_event_t.memory_fault.agent", Value: u(unsafe.Offsetof(event{}.Agent))},
	{Name: "offsetof.hsa_amd_event_t.memory_fault.virtual_address", Value: u(unsafe.Offsetof(event{}.Address))},
	{Name: "offsetof.hsa_amd_event_t.memory_fault.fault_reason_mask", Value: u(unsafe.Offsetof(event{}.ReasonMask))},
	{Name: "offsetof.hsa_amd_event_t.hw_exception.agent", Value: u(unsafe.Offsetof(hwExceptionEvent{}.Agent))},
	{Name: "offsetof.hsa_amd_event_t.hw_exception.reset_type", Value: u(unsafe.Offsetof(hwExceptionEvent{}.ResetType))},
	{Name: "offsetof.hsa_amd_event_t.hw_exception.reset_cause", Value: u(unsafe.Offsetof(hwExceptionEvent{}.ResetCause))},
}

// constTable is every enum value and constant above that only rank/hsa uses.
var constTable = amdabi.Table{
	{Name: "HSA_STATUS_ERROR", Value: statusError},
	{Name: "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT", Value: statusErrorInvalidPacketFormat},
	{Name: "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", Value: statusErrorMemoryApertureViolation},
	{Name: "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", Value: statusErrorIllegalInstruction},
	{Name: "HSA_STATUS_ERROR_MEMORY_FAULT", Value: statusErrorMemoryFault},
	{Name: "HSA_STATUS_ERROR_OUT_OF_REGISTERS", Value: statusErrorOutOfRegisters},
	{Name: "HSA_STATUS_ERROR_INVALID_ARGUMENT", Value: statusErrorInvalidArgument},
	{Name: "HSA_STATUS_ERROR_INVALID_ALLOCATION", Value: statusErrorInvalidAllocation},
	{Name: "HSA_STATUS_ERROR_NOT_INITIALIZED", Value: statusErrorNotInitialized},
	{Name: "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", Value: statusErrorIncompatibleArguments},
	{Name: "HSA_STATUS_ERROR_INVALID_ISA", Value: statusErrorInvalidISA},
	{Name: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", Value: statusErrorInvalidCodeObject},
	{Name: "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", Value: statusErrorInvalidSymbolName},
	{Name: "HSA_STATUS_ERROR_EXCEPTION", Value: statusErrorException},
	{Name: "HSA_STATUS_ERROR_INVALID_ISA_NAME", Value: statusErrorInvalidISAName},
	{Name: "HSA_STATUS_ERROR_FATAL", Value: statusErrorFatal},
	{Name: "HSA_SYSTEM_INFO_VERSION_MAJOR", Value: systemInfoVersionMajor},
	{Name: "HSA_SYSTEM_INFO_VERSION_MINOR", Value: systemInfoVersionMinor},
	{Name: "HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY", Value: systemInfoTimestampFrequency},
	{Name: "HSA_AMD_SYSTEM_INFO_BUILD_VERSION", Value: amdSystemInfoBuildVersion},
	{Name: "HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED", Value: amdSystemInfoDmabufSupported},
	{Name: "HSA_AMD_SYSTEM_INFO_XNACK_ENABLED", Value: amdSystemInfoXnackEnabled},
	{Name: "HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR", Value: amdSystemInfoExtVersionMajor},
	{Name: "HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR", Value: amdSystemInfoExtVersionMinor},
	{Name: "HSA_AGENT_INFO_NAME", Value: agentInfoName},
	{Name: "HSA_AGENT_INFO_VENDOR_NAME", Value: agentInfoVendorName},
	{Name: "HSA_AGENT_INFO_QUEUE_MAX_SIZE", Value: agentInfoQueueMaxSize},
	{Name: "HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", Value: amdAgentInfoCUCount},
	{Name: "HSA_AMD_AGENT_INFO_BDFID", Value: amdAgentInfoBDFID},
	{Name: "HSA_AMD_AGENT_INFO_PRODUCT_NAME", Value: amdAgentInfoProductName},
	{Name: "HSA_AMD_AGENT_INFO_DOMAIN", Value: amdAgentInfoDomain},
	{Name: "HSA_AMD_AGENT_INFO_MEMORY_AVAIL", Value: amdAgentInfoMemoryAvail},
	{Name: "HSA_AMD_AGENT_INFO_DRIVER_UID", Value: amdAgentInfoDriverUID},
	{Name: "HSA_AMD_AGENT_INFO_NEAREST_CPU", Value: amdAgentInfoNearestCPU},
	{Name: "HSA_ISA_INFO_NAME_LENGTH", Value: isaInfoNameLength},
	{Name: "HSA_ISA_INFO_NAME", Value: isaInfoName},
	{Name: "HSA_AMD_MEMORY_POOL_INFO_SIZE", Value: poolInfoSize},
	{Name: "HSA_AMD_MEMORY_POOL_INFO_LOCATION", Value: poolInfoLocation},
	{Name: "HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS", Value: agentPoolInfoAccess},
	{Name: "HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS", Value: agentPoolInfoNumLinkHops},
	{Name: "HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO", Value: agentPoolInfoLinkInfo},
	{Name: "HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED", Value: poolAccessNeverAllowed},
	{Name: "HSA_AMD_LINK_INFO_TYPE_HYPERTRANSPORT", Value: linkTypeHyperTransport},
	{Name: "HSA_AMD_LINK_INFO_TYPE_QPI", Value: linkTypeQPI},
	{Name: "HSA_AMD_LINK_INFO_TYPE_PCIE", Value: linkTypePCIe},
	{Name: "HSA_AMD_LINK_INFO_TYPE_INFINBAND", Value: linkTypeInfiniband},
	{Name: "HSA_AMD_LINK_INFO_TYPE_XGMI", Value: linkTypeXGMI},
	{Name: "HSA_PROFILE_FULL", Value: profileFull},
	{Name: "HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT", Value: floatRoundingModeDefault},
	{Name: "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE", Value: symInfoKernargSegmentSize},
	{Name: "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT", Value: symInfoKernargSegmentAlign},
	{Name: "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE", Value: symInfoGroupSegmentSize},
	{Name: "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE", Value: symInfoPrivateSegmentSize},
	{Name: "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT", Value: symInfoKernelObject},
	{Name: "HSA_QUEUE_TYPE_MULTI", Value: queueTypeMulti},
	{Name: "HSA_QUEUE_TYPE_SINGLE", Value: queueTypeSingle},
	{Name: "HSA_PACKET_TYPE_INVALID", Value: packetTypeInvalid},
	{Name: "HSA_PACKET_TYPE_KERNEL_DISPATCH", Value: packetTypeKernelDispatch},
	{Name: "HSA_PACKET_HEADER_TYPE", Value: packetHeaderType},
	{Name: "HSA_PACKET_HEADER_BARRIER", Value: packetHeaderBarrier},
	{Name: "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE", Value: packetHeaderAcquireScope},
	{Name: "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE", Value: packetHeaderReleaseScope},
	{Name: "HSA_FENCE_SCOPE_NONE", Value: fenceScopeNone},
	{Name: "HSA_FENCE_SCOPE_AGENT", Value: fenceScopeAgent},
	{Name: "HSA_FENCE_SCOPE_SYSTEM", Value: fenceScopeSystem},
	{Name: "HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS", Value: dispatchSetupDimensions},
	{Name: "HSA_SIGNAL_CONDITION_EQ", Value: signalConditionEQ},
	{Name: "HSA_SIGNAL_CONDITION_LT", Value: signalConditionLT},
	{Name: "HSA_WAIT_STATE_BLOCKED", Value: waitStateBlocked},
	{Name: "HSA_WAIT_STATE_ACTIVE", Value: waitStateActive},
	{Name: "HSA_AMD_GPU_MEMORY_FAULT_EVENT", Value: eventMemoryFault},
	{Name: "HSA_AMD_GPU_HW_EXCEPTION_EVENT", Value: eventHWException},
	{Name: "HSA_AMD_GPU_MEMORY_ERROR_EVENT", Value: eventMemoryError},
	{Name: "HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG", Value: hwCauseGPUHang},
	{Name: "HSA_AMD_HW_EXCEPTION_CAUSE_ECC", Value: hwCauseECC},
	{Name: "HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT", Value: faultPageNotPresent},
	{Name: "HSA_AMD_MEMORY_FAULT_READ_ONLY", Value: faultReadOnly},
	{Name: "HSA_AMD_MEMORY_FAULT_NX", Value: faultNX},
	{Name: "HSA_AMD_MEMORY_FAULT_HOST_ONLY", Value: faultHostOnly},
	{Name: "HSA_AMD_MEMORY_FAULT_DRAMECC", Value: faultDRAMECC},
	{Name: "HSA_AMD_MEMORY_FAULT_IMPRECISE", Value: faultImprecise},
	{Name: "HSA_AMD_MEMORY_FAULT_SRAMECC", Value: faultSRAMECC},
	{Name: "HSA_AMD_MEMORY_FAULT_HANG", Value: faultHang},
}

// abiTable is every fact TestABI checks: this package's and the ones it
// shares with rank/hip (internal/hsaabi), each name once.
func abiTable() amdabi.Table { return slices.Concat(layoutTable, constTable, hsaabi.Table()) }
