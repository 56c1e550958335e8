package hip

import (
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/internal/amdabi"
)

// TestABI compares abi.go with scripts/amdabi/hip_abi.c compiled against
// each ROCm header set (P2PAT_AMD_ABI from scripts/amd-headers.sh).
func TestABI(t *testing.T) { amdabi.CheckAll(t, "hip", abiTable()) }

// TestABIPlantedBug perturbs a copy of the Uncached value and of
// hipMemAccessDesc's size and expects the comparator to report both.
func TestABIPlantedBug(t *testing.T) {
	dir := amdabi.Dir(t)
	vs, err := amdabi.Versions(dir, "hip")
	if err != nil {
		t.Fatal(err)
	}
	newest := vs[len(vs)-1]
	got, err := amdabi.Load(filepath.Join(dir, "hip-"+newest+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	tab := abiTable()
	for i := range tab {
		switch tab[i].Name {
		case "hipMemAllocationTypeUncached":
			tab[i].Value = 0x80000000
		case "sizeof.hipMemAccessDesc":
			tab[i].Value = 16 // the HSA desc's stride: the classic mix-up
		}
	}
	d := strings.Join(amdabi.Compare(tab, got, newest), "\n")
	for _, want := range []string{"hipMemAllocationTypeUncached: Go 2147483648", "sizeof.hipMemAccessDesc: Go 16"} {
		if !strings.Contains(d, want) {
			t.Errorf("planted bug not reported: want %q in\n%s", want, d)
		}
	}
}

// TestSymbols: every registered symbol is exported by the real 6.4 and 7.2
// libamdhip64 (readelf lists from the unpacked packages, never loaded).
func TestSymbols(t *testing.T) {
	dir := amdabi.Dir(t)
	vs, err := amdabi.Versions(dir, "syms-hip")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		syms, err := amdabi.Symbols(filepath.Join(dir, "syms-hip-"+v+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range requiredSymbols {
			if !syms[s] {
				t.Errorf("ROCm %s: libamdhip64 lacks required %s", v, s)
			}
		}
		for s, since := range optionalSymbols {
			if !syms[s] && !amdabi.Less(v, since) {
				t.Errorf("ROCm %s: libamdhip64 lacks %s, which Go says exists since %s", v, s, since)
			}
		}
	}
}
