package cuda

import (
	"testing"

	"p2patomics/rank/backend"
)

// Issue 52: Open starts NVML's load before it opens the driver, so that
// nvmlInit_v2 runs beside cuInit and the context, not after them. On a
// machine without libcuda the open fails at openDriver: the load has
// started all the same, once per Open. Planted: Open without
// loadNVMLAside (the code before) fails the count.
func TestOpenLoadsNVMLAside(t *testing.T) {
	before := nvmlAsides.Load()
	b := &Backend{}
	_, err := b.Open(backend.Config{})
	if err == nil {
		b.Close()
	}
	if got := nvmlAsides.Load() - before; got != 1 {
		t.Errorf("Open started %d NVML loads aside, want 1", got)
	}
	// The load it started and readCeilings' share one initialisation.
	n1, e1 := openNVML()
	n2, e2 := openNVML()
	if n1 != n2 || e1 != e2 {
		t.Errorf("two openNVML calls gave (%p, %v) and (%p, %v)", n1, e1, n2, e2)
	}
}
