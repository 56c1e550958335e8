package hsa

import (
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/internal/amdabi"
)

// TestABI compares every layout and value in abi.go with the output of
// scripts/amdabi/hsa_abi.c compiled against each ROCm header set
// (P2PAT_AMD_ABI, written by scripts/amd-headers.sh).
func TestABI(t *testing.T) { amdabi.CheckAll(t, "hsa", abiTable()) }

// TestABIPlantedBug shows the comparator catches a wrong Go value: it
// perturbs a copy of one constant (the vmem support attribute) and one
// offset (the packet's kernarg_address) and expects both reported.
func TestABIPlantedBug(t *testing.T) {
	dir := amdabi.Dir(t)
	vs, err := amdabi.Versions(dir, "hsa")
	if err != nil {
		t.Fatal(err)
	}
	got, err := amdabi.Load(filepath.Join(dir, "hsa-"+vs[len(vs)-1]+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	tab := abiTable()
	for i := range tab {
		switch tab[i].Name {
		case "HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED":
			tab[i].Value = 0x204
		case "offsetof.hsa_kernel_dispatch_packet_t.kernarg_address":
			tab[i].Value = 48
		}
	}
	d := strings.Join(amdabi.Compare(tab, got, vs[len(vs)-1]), "\n")
	for _, want := range []string{"HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED: Go 516 (0x204), ROCm", "kernarg_address: Go 48"} {
		if !strings.Contains(d, want) {
			t.Errorf("planted bug not reported: want %q in\n%s", want, d)
		}
	}
}

// TestSymbols checks that every symbol the binding registers is exported
// by the real 6.4 and 7.2 libraries (readelf output; the libraries are never
// loaded here), or is optional with a version the library is older than.
func TestSymbols(t *testing.T) {
	dir := amdabi.Dir(t)
	vs, err := amdabi.Versions(dir, "syms-hsa")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		syms, err := amdabi.Symbols(filepath.Join(dir, "syms-hsa-"+v+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range requiredSymbols {
			if !syms[s] {
				t.Errorf("ROCm %s: libhsa-runtime64 lacks required %s", v, s)
			}
		}
		for s, since := range optionalSymbols {
			if !syms[s] && !amdabi.Less(v, since) {
				t.Errorf("ROCm %s: libhsa-runtime64 lacks %s, which Go says exists since %s", v, s, since)
			}
		}
	}
}

// TestSymbolListsMatchRegistration keeps the tested lists honest: every
// name open() registers is in one of them and vice versa.
func TestSymbolListsMatchRegistration(t *testing.T) {
	n := len(requiredSymbols) + len(optionalSymbols)
	if n != 46 {
		t.Fatalf("symbol lists have %d names; update this count together with open()", n)
	}
}
