package hsa

import (
	"errors"
	"os"
	"strings"
	"testing"

	"p2patomics/rank/backend"
)

// TestOpenWithoutGPU loads whatever libhsa-runtime64.so.1 is installed
// (bookworm: ROCm 5.2, from scripts/amd-headers.sh in CI) on a machine with
// no AMD GPU and checks that Open ends in a clear ErrNotSupported: the vmem
// symbols are missing (ROCm < 6.0), or hsa_init fails without /dev/kfd.
func TestOpenWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("/dev/kfd exists: this is an AMD GPU machine")
	}
	l, err := load()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must have bookworm's libhsa-runtime64-1 (scripts/amd-headers.sh installs it): %v", err)
		}
		if !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("load error is not ErrNotSupported: %v", err)
		}
		t.Skipf("%s not installed: %v", libName, err)
	}
	t.Logf("loaded %s; optional symbols missing: %d", libName, len(l.missing))
	b, err := backend.New("hsa")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Open(backend.Config{Rank: 0, Ranks: 2, Device: 0})
	if err == nil {
		t.Fatal("Open succeeded without a GPU")
	}
	if !errors.Is(err, backend.ErrNotSupported) {
		t.Fatalf("Open error is not ErrNotSupported: %v", err)
	}
	msg := err.Error()
	switch {
	case len(l.missing) > 0:
		if !strings.Contains(msg, "hsa_amd_vmem_") || !strings.Contains(msg, "ROCm >= 6.0") {
			t.Fatalf("want the missing vmem symbol and ROCm >= 6.0 named: %v", err)
		}
	default:
		if !strings.Contains(msg, "no /dev/kfd (no AMD GPU)") {
			t.Fatalf("want \"no /dev/kfd (no AMD GPU)\": %v", err)
		}
	}
	t.Logf("skip reason: %v", err)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestInitWithoutKFD calls hsa_init directly (bypassing the vmem gate) to
// show the 0x1008 → "no /dev/kfd" path on the installed runtime.
func TestInitWithoutKFD(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("/dev/kfd exists")
	}
	l, err := load()
	if err != nil {
		t.Skipf("%s not installed: %v", libName, err)
	}
	err = hsaInit(l)
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "no /dev/kfd (no AMD GPU)") || !strings.Contains(err.Error(), "0x1008") {
		t.Fatalf("hsa_init: %v", err)
	}
	t.Log(err)
}
