package cuda

import (
	"fmt"

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
