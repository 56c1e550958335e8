package harness

import "p2patomics/harness/backends"

// Backends is the one list of backends: the descriptors of
// harness/backends (one file per backend), GPU backends in the order
// --backend=auto probes them and host, the fallback, last. Matrix,
// GPUBackends and BackendNames derive from it; each rank's backend reports
// the same kinds at hello (checked there, and by TestMatrixMatchesBackends
// without a world).
var Backends = backends.All

// Matrix maps each backend to its allocation kinds (from Backends). The
// suite plans cases from it without loading any backend.
var Matrix = func() map[string][]string {
	m := map[string][]string{}
	for _, b := range Backends {
		m[b.Name] = b.KindNames()
	}
	return m
}()

// GPUBackends are the backends --backend=auto probes, in order.
func GPUBackends() []string {
	var names []string
	for _, b := range Backends {
		if b.GPU {
			names = append(names, b.Name)
		}
	}
	return names
}

// BackendNames lists every backend, the ones without a GPU (host) first
// (as --backend's usage and errors name them), then the GPU backends in
// probe order.
func BackendNames() []string {
	var names []string
	for _, b := range Backends {
		if !b.GPU {
			names = append(names, b.Name)
		}
	}
	return append(names, GPUBackends()...)
}
