package backends

import "testing"

// TestRowsNameTheirDriverLibrary: every GPU backend's row names the driver
// library --ab's library SPEC checks (harness/ab asks the row, not the
// name), and the CPU backend names none; CPUVendor is the host's vendor
// only.
func TestRowsNameTheirDriverLibrary(t *testing.T) {
	for _, b := range All {
		if b.GPU != (b.Library != nil) {
			t.Errorf("%s: GPU %v but library %v", b.Name, b.GPU, b.Library)
			continue
		}
		if l := b.Library; l != nil && (l.Soname == nil || l.InitSymbol == "" || len(l.InRoot) == 0) {
			t.Errorf("%s: library row incomplete: %+v", b.Name, *l)
		}
		if CPUVendor(b.Vendor) == b.GPU {
			t.Errorf("%s: CPUVendor(%q) = %v, but GPU is %v", b.Name, b.Vendor, CPUVendor(b.Vendor), b.GPU)
		}
	}
	if CPUVendor("") {
		t.Error(`CPUVendor("") is true`)
	}
}
