package cuda

import (
	"fmt"
	"strconv"

	"p2patomics/internal/device"
)

// The attributes that decide the capabilities, by the key describe records
// them under in DeviceInfo.Attrs and the name a skip gives them.
var (
	hostAtomicAttr = attrName{"host_native_atomic_supported", "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED"}
	// Peer access needs both: cuDeviceCanAccessPeer says a context may
	// enable it, the P2P attribute that the link carries it.
	peerAccessAttrs = []attrName{
		{"can_access", "cuDeviceCanAccessPeer"},
		{"access_supported", "CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED"},
	}
	peerAtomicAttr = attrName{"native_atomic", "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED"}
	mpsAttr        = attrName{"mps_enabled", "CU_DEVICE_ATTRIBUTE_MPS_ENABLED"}
)

type attrName struct{ key, name string }

// capsFrom answers the capability questions from the attributes describe
// recorded for device self of count. An attribute that is not 1 (0, or a
// query error) is a no whose reason names it and its value.
//
// Host atomics: on PCIe H100/H200 HOST_NATIVE_ATOMIC_SUPPORTED is 0, and GPU
// atomics to host memory are then not atomic with the CPU's or with another
// GPU's.
func capsFrom(self, count int, attrs map[string]string) device.Caps {
	var c device.Caps
	if v := attrs[hostAtomicAttr.key]; v == "1" {
		c.HostAtomics = device.Yes("device %d: %s is 1", self, hostAtomicAttr.name)
	} else {
		c.HostAtomics = device.No("device %d: %s is %q, need 1 for CPU and GPU system-scope atomics on one word", self, hostAtomicAttr.name, v)
	}
	// MPS: a failed query is not a no (ranks on one GPU would then be
	// judged time-sliced on a guess); it stays unknown, the error in Attrs.
	switch v := attrs[mpsAttr.key]; v {
	case "1":
		c.MPS = device.Yes("device %d: %s is 1 (this context is an MPS client)", self, mpsAttr.name)
	case "0":
		c.MPS = device.No("device %d: %s is 0 (no MPS server: kernels of ranks sharing the GPU are time-sliced)", self, mpsAttr.name)
	}
	for q := 0; q < count; q++ {
		if q == self {
			continue
		}
		pre := fmt.Sprintf("%s%d.", peerAttrPrefix, q)
		check := func(a attrName) device.Cap {
			if v := attrs[pre+a.key]; v != "1" {
				return device.No("device %d to device %d: %s is %q, need 1", self, q, a.name, v)
			}
			return device.Yes("device %d to device %d: %s is 1", self, q, a.name)
		}
		p := device.Peer{Ordinal: q}
		for _, a := range peerAccessAttrs {
			if p.Access = check(a); !p.Access.OK {
				break
			}
		}
		if p.Atomics = p.Access; p.Access.OK {
			p.Atomics = check(peerAtomicAttr)
		}
		c.Peers = append(c.Peers, p)
	}
	return c
}

// ceilingsFrom types the ceilings describe recorded (ceilings: *_gbps and
// *_basis), so the parent reads numbers, never attribute names. A ceiling
// that is absent, unparsable or not positive is not known (zero), which
// only loosens the bound the parent computes.
func ceilingsFrom(attrs map[string]string) device.Ceilings {
	bw := func(key string) device.Bandwidth {
		v, err := strconv.ParseFloat(attrs[key+"_gbps"], 64)
		if err != nil || v <= 0 {
			return device.Bandwidth{}
		}
		return device.Bandwidth{GBps: v, Basis: attrs[key+"_basis"]}
	}
	return device.Ceilings{HBM: bw("hbm"), NVLink: bw("nvlink"), PCIe: bw("pcie")}
}
