package backends

import "p2patomics/internal/inject"

// HostName is the host backend's name (rank/host): memfd + mmap and Go's
// atomics on the CPU. It is the one literal of the name in the parent;
// everything else asks a row (GPU, Kind(...).HostMemory) or uses this.
const HostName = "host"

// Memfd is host's one kind: a memfd mapped MAP_SHARED, the CPU's own memory.
const Memfd Kind = "memfd"

// Host is the CPU backend's row: no GPU, no runtime to pass variables to,
// no device node, no fault lines of a runtime (a host rank's faults are Go's).
var Host = Backend{
	Name: HostName, GPU: false, Vendor: HostName, NoDriver: true, SpeedRules: true, InjectSymbols: inject.HostSymbols,
	Kinds: []KindSpec{{Name: Memfd, DeviceMemory: true}},
}

func init() { register(&Host) }
