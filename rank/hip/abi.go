package hip

import (
	"unsafe"

	"p2patomics/internal/amdabi"
)

// Values and layouts from HIP include/hip/hip_runtime_api.h (docs/AMD.md).
// abi_test.go checks every one against
// Debian's ROCm 6.4 and 7.2 headers (scripts/amd-headers.sh).

// hipError_t
const (
	errSuccess           = 0
	errInvalidValue      = 1
	errOutOfMemory       = 2
	errNotInitialized    = 3
	errNoDevice          = 100
	errInvalidDevice     = 101
	errInvalidImage      = 200
	errNoBinaryForGpu    = 209
	errInvalidKernelFile = 218
	errNotFound          = 500
	errNotReady          = 600
	errIllegalAddress    = 700
	errLaunchFailure     = 719
	errNotSupported      = 801
	errUnknown           = 999
)

// VMem enums
const (
	allocTypeInvalid       = 0
	allocTypePinned        = 1
	allocTypeUncached      = 0x40000000 // headers >= 7.x (rocm-systems PR #747)
	handleTypeNone         = 0
	handleTypePosixFD      = 1
	locationTypeDevice     = 1
	accessProtNone         = 0
	accessProtReadWrite    = 3
	granularityMinimum     = 0
	granularityRecommended = 1
)

// device attributes, P2P attributes, events
const (
	attrMultiprocessorCount = 63
	attrVMMSupported        = 89
	attrPciBusID            = 67
	attrPciDomainID         = 69
	attrHostNativeAtomic    = 15
	attrFineGrainSupport    = 10016
	p2pAttrAccessSupported  = 1
	p2pAttrNativeAtomic     = 2
	eventDefault            = 0
)

// memLocation mirrors hipMemLocation.
type memLocation struct {
	Type int32
	ID   int32
}

// allocProp mirrors hipMemAllocationProp (32 bytes; requestedHandleType
// became a union with requestedHandleTypes in 7.0, same offset).
type allocProp struct {
	Type                 uint32
	RequestedHandleType  uint32
	Location             memLocation
	Win32HandleMetaData  uintptr
	CompressionType      uint8
	GPUDirectRDMACapable uint8
	Usage                uint16
	_                    uint32
}

// accessDesc mirrors hipMemAccessDesc (12 bytes, no padding).
type accessDesc struct {
	Location memLocation
	Flags    uint32
}

// hipDeviceProp_tR0600 (hipGetDevicePropertiesR0600, HIP >= 6.0) and the
// legacy layout filled by the unversioned hipGetDeviceProperties export.
// Only the fields read are mirrored, by offset.
const (
	propR0600Size      = 1472
	propR0600Name      = 0
	propR0600UUID      = 256
	propR0600TotalMem  = 288
	propR0600MPCount   = 388
	propR0600PciBus    = 584
	propR0600PciDevice = 588
	propR0600PciDomain = 592
	propR0600GcnArch   = 1160
	propR0000Size      = 792
	propR0000Name      = 0
	propR0000TotalMem  = 256
	propR0000MPCount   = 336
	propR0000GcnArch   = 396
	propBufSize        = 4096 // oversized zeroed buffer for either layout
)

func u(v uintptr) uint64 { return uint64(v) }

func abiTable() amdabi.Table {
	var p allocProp
	var d accessDesc
	var m memLocation
	t := amdabi.Table{
		{Name: "sizeof.hipMemLocation", Value: u(unsafe.Sizeof(m))},
		{Name: "offsetof.hipMemLocation.type", Value: u(unsafe.Offsetof(m.Type))},
		{Name: "offsetof.hipMemLocation.id", Value: u(unsafe.Offsetof(m.ID))},
		{Name: "sizeof.hipMemAllocationProp", Value: u(unsafe.Sizeof(p))},
		{Name: "offsetof.hipMemAllocationProp.type", Value: u(unsafe.Offsetof(p.Type))},
		{Name: "offsetof.hipMemAllocationProp.requestedHandleType", Value: u(unsafe.Offsetof(p.RequestedHandleType))},
		{Name: "offsetof.hipMemAllocationProp.location", Value: u(unsafe.Offsetof(p.Location))},
		{Name: "offsetof.hipMemAllocationProp.win32HandleMetaData", Value: u(unsafe.Offsetof(p.Win32HandleMetaData))},
		{Name: "offsetof.hipMemAllocationProp.allocFlags", Value: u(unsafe.Offsetof(p.CompressionType))},
		{Name: "offsetof.hipMemAllocationProp.allocFlags.compressionType", Value: u(unsafe.Offsetof(p.CompressionType))},
		{Name: "offsetof.hipMemAllocationProp.allocFlags.gpuDirectRDMACapable", Value: u(unsafe.Offsetof(p.GPUDirectRDMACapable))},
		{Name: "offsetof.hipMemAllocationProp.allocFlags.usage", Value: u(unsafe.Offsetof(p.Usage))},
		{Name: "sizeof.hipMemAccessDesc", Value: u(unsafe.Sizeof(d))},
		{Name: "offsetof.hipMemAccessDesc.location", Value: u(unsafe.Offsetof(d.Location))},
		{Name: "offsetof.hipMemAccessDesc.flags", Value: u(unsafe.Offsetof(d.Flags))},
		{Name: "sizeof.hipMemGenericAllocationHandle_t", Value: u(unsafe.Sizeof(uintptr(0)))},
		{Name: "sizeof.hipError_t", Value: 4}, {Name: "sizeof.hipMemAllocationType", Value: 4},
		{Name: "sizeof.hipMemAllocationHandleType", Value: 4},
		{Name: "sizeof.hipDeviceProp_tR0600", Value: propR0600Size},
		{Name: "offsetof.hipDeviceProp_tR0600.name", Value: propR0600Name},
		{Name: "offsetof.hipDeviceProp_tR0600.uuid", Value: propR0600UUID},
		{Name: "offsetof.hipDeviceProp_tR0600.totalGlobalMem", Value: propR0600TotalMem},
		{Name: "offsetof.hipDeviceProp_tR0600.multiProcessorCount", Value: propR0600MPCount},
		{Name: "offsetof.hipDeviceProp_tR0600.pciBusID", Value: propR0600PciBus},
		{Name: "offsetof.hipDeviceProp_tR0600.pciDeviceID", Value: propR0600PciDevice},
		{Name: "offsetof.hipDeviceProp_tR0600.pciDomainID", Value: propR0600PciDomain},
		{Name: "offsetof.hipDeviceProp_tR0600.gcnArchName", Value: propR0600GcnArch},
		{Name: "sizeof.hipDeviceProp_tR0000", Value: propR0000Size},
		{Name: "offsetof.hipDeviceProp_tR0000.name", Value: propR0000Name},
		{Name: "offsetof.hipDeviceProp_tR0000.totalGlobalMem", Value: propR0000TotalMem},
		{Name: "offsetof.hipDeviceProp_tR0000.multiProcessorCount", Value: propR0000MPCount},
		{Name: "offsetof.hipDeviceProp_tR0000.gcnArchName", Value: propR0000GcnArch},
	}
	c := func(name string, v uint64) { t = append(t, amdabi.Item{Name: name, Value: v}) }
	c("hipMemAllocationTypeInvalid", allocTypeInvalid)
	c("hipMemAllocationTypePinned", allocTypePinned)
	t = append(t, amdabi.Item{Name: "hipMemAllocationTypeUncached", Value: allocTypeUncached, Since: "7.0"})
	c("hipMemHandleTypeNone", handleTypeNone)
	c("hipMemHandleTypePosixFileDescriptor", handleTypePosixFD)
	c("hipMemLocationTypeDevice", locationTypeDevice)
	c("hipMemAccessFlagsProtNone", accessProtNone)
	c("hipMemAccessFlagsProtReadWrite", accessProtReadWrite)
	c("hipMemAllocationGranularityMinimum", granularityMinimum)
	c("hipMemAllocationGranularityRecommended", granularityRecommended)
	c("hipSuccess", errSuccess)
	c("hipErrorInvalidValue", errInvalidValue)
	c("hipErrorOutOfMemory", errOutOfMemory)
	c("hipErrorNotInitialized", errNotInitialized)
	c("hipErrorNoDevice", errNoDevice)
	c("hipErrorInvalidDevice", errInvalidDevice)
	c("hipErrorInvalidImage", errInvalidImage)
	c("hipErrorNoBinaryForGpu", errNoBinaryForGpu)
	c("hipErrorInvalidKernelFile", errInvalidKernelFile)
	c("hipErrorNotFound", errNotFound)
	c("hipErrorNotReady", errNotReady)
	c("hipErrorIllegalAddress", errIllegalAddress)
	c("hipErrorLaunchFailure", errLaunchFailure)
	c("hipErrorNotSupported", errNotSupported)
	c("hipErrorUnknown", errUnknown)
	c("hipDeviceAttributeMultiprocessorCount", attrMultiprocessorCount)
	c("hipDeviceAttributeVirtualMemoryManagementSupported", attrVMMSupported)
	c("hipDeviceAttributePciBusId", attrPciBusID)
	c("hipDeviceAttributePciDomainID", attrPciDomainID)
	c("hipDeviceAttributeHostNativeAtomicSupported", attrHostNativeAtomic)
	c("hipDeviceAttributeFineGrainSupport", attrFineGrainSupport)
	c("hipDevP2PAttrAccessSupported", p2pAttrAccessSupported)
	c("hipDevP2PAttrNativeAtomicSupported", p2pAttrNativeAtomic)
	c("hipEventDefault", eventDefault)
	return t
}
