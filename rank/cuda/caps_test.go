package cuda

import (
	"strings"
	"testing"
)

// TestCapsFrom: the capabilities follow the attributes describe records,
// and each no names the attribute and value that decided it.
func TestCapsFrom(t *testing.T) {
	attrs := func(hostNative, atomic string) map[string]string {
		return map[string]string{"host_native_atomic_supported": hostNative,
			"peer.1.can_access": "1", "peer.1.access_supported": "1", "peer.1.native_atomic": atomic}
	}
	c := capsFrom(0, 2, attrs("1", "1"))
	if !c.HostAtomics.OK || len(c.Peers) != 1 || c.Peers[0].Ordinal != 1 || !c.Peers[0].Access.OK || !c.Peers[0].Atomics.OK {
		t.Fatalf("every attribute 1: %+v", c)
	}
	c = capsFrom(0, 2, attrs("0", "0"))
	if c.HostAtomics.OK || c.HostAtomics.Reason != `device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0", need 1 for CPU and GPU system-scope atomics on one word` {
		t.Errorf("host native atomics 0: %+v", c.HostAtomics)
	}
	if p := c.Peer(0, 1); !p.Access.OK || p.Atomics.OK || p.Atomics.Reason != `device 0 to device 1: CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED is "0", need 1` {
		t.Errorf("native atomics 0: %+v", p)
	}
	c = capsFrom(1, 2, map[string]string{"peer.0.can_access": "error: CUDA_ERROR_INVALID_DEVICE"})
	if p := c.Peer(1, 0); p.Access.OK || p.Atomics.OK || !strings.Contains(p.Access.Reason, `device 1 to device 0: cuDeviceCanAccessPeer is "error: CUDA_ERROR_INVALID_DEVICE"`) {
		t.Errorf("a failed query is a no naming the attribute: %+v", p)
	}
	c = capsFrom(0, 2, map[string]string{"peer.1.can_access": "1", "peer.1.access_supported": "0", "peer.1.native_atomic": "1"})
	if p := c.Peer(0, 1); p.Access.OK || p.Atomics.OK || !strings.Contains(p.Atomics.Reason, "ACCESS_SUPPORTED") {
		t.Errorf("no access means no atomics, for the access reason: %+v", p)
	}
	if p := capsFrom(0, 1, nil).Peer(0, 0); !p.Access.OK || !p.Atomics.OK {
		t.Errorf("a device reaches itself: %+v", p)
	}
}
