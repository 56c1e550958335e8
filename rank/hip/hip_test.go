package hip

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"p2patomics/rank/backend"
)

func TestImportModeFor(t *testing.T) {
	for _, c := range []struct {
		v    int32
		want importMode
	}{
		{60243483, importPointer}, // 6.2
		{60443484, importPointer}, // 6.4.3 (source read)
		{70051831, importProbe},   // 7.0
		{70153211, importProbe},   // 7.1
		{70253211, importValue},   // 7.2.4 (disassembled)
		{80000000, importValue},
	} {
		if g := importModeFor(c.v); g != c.want {
			t.Errorf("HIP %s: %v, want %v", versionString(c.v), g, c.want)
		}
	}
	if versionString(70253211) != "7.2.53211" {
		t.Fatal(versionString(70253211))
	}
}

// TestFdCell: the probe's int cell lies where a fd-by-value CLR would read
// a negative (invalid) fd, and the cell is writable.
func TestFdCell(t *testing.T) {
	for _, base := range []uintptr{0x7f0000000000, 0x7f0080000000, 0x7f00fffff000, 0x55555555a000} {
		off := cellOffset(base, 4096)
		if int32(uint32(base+off)) >= 0 || off >= 1<<32 || off%4096 != 0 {
			t.Errorf("base %#x: offset %#x gives %#x", base, off, base+off)
		}
	}
	b := &Backend{}
	a, err := b.cell()
	if err != nil {
		t.Skipf("cannot reserve 4 GiB of address space here: %v", err)
	}
	defer b.fdCell.free()
	if int32(uint32(a)) >= 0 {
		t.Fatalf("cell %#x reads as a non-negative int", a)
	}
	*(*int32)(ptr(a)) = 42
	if *(*int32)(ptr(a)) != 42 {
		t.Fatal("cell not writable")
	}
}

// TestKernelParams checks the kernelParams array: pointer i points at the
// 64-bit word holding args[i], all inside the mmap'd block.
func TestKernelParams(t *testing.T) {
	m, err := newCmem(maxParams * 16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.free()
	args := []uint64{0xdead0000, 0xbeef0000, 4096, 256, 1024}
	fillParams(m, args)
	for i, a := range args {
		p := uintptr(binary.LittleEndian.Uint64(m[8*i:]))
		if p != m.addr()+uintptr(8*maxParams+8*i) || *(*uint64)(ptr(p)) != a {
			t.Errorf("param %d: ptr %#x value %#x", i, p, *(*uint64)(ptr(p)))
		}
	}
}

// TestOpenWithoutGPU loads the installed libamdhip64 (bookworm: .so.5, ROCm
// 5.2) on a machine without an AMD GPU: Open must end in ErrNotSupported
// "no AMD GPU (no /dev/kfd) (hipErrorNoDevice ...)", not a panic or a hang.
func TestOpenWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("/dev/kfd exists: this is an AMD GPU machine")
	}
	l, err := load()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must have bookworm's libamdhip64-5 (scripts/amd-headers.sh installs it): %v", err)
		}
		if !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("load error is not ErrNotSupported: %v", err)
		}
		t.Skip(err)
	}
	t.Logf("loaded %s (missing optional: %v)", l.name, l.missing)
	b, _ := backend.New("hip")
	_, err = b.Open(backend.Config{Rank: 0, Ranks: 2, Device: 0})
	if !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), "no AMD GPU (no /dev/kfd) (hipErrorNoDevice") {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("skip reason: %v", err)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Typed errors carry hipGetErrorName's text from the real library.
	e := l.check(status{Call: "probe", Code: errNoDevice}).(*Error)
	if e.Name != "hipErrorNoDevice" {
		t.Fatalf("hipGetErrorName(100) = %q", e.Name)
	}
}
