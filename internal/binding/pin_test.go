package binding

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinNamesOneFile: a pinned library (an A/B run's stack B) is the one
// candidate and the one path a fixed soname resolves to; unpinned, the
// search is as before.
func TestPinNamesOneFile(t *testing.T) {
	Pin("/opt/b/libcuda.so.1")
	t.Cleanup(func() { Pin("") })
	if got := Candidates([]string{"liba.so.1"}, nil, []string{t.TempDir()}); len(got) != 1 || got[0] != "/opt/b/libcuda.so.1" {
		t.Fatalf("pinned Candidates = %v", got)
	}
	if got := Library("libcuda.so.1"); got != "/opt/b/libcuda.so.1" {
		t.Fatalf("pinned Library = %q", got)
	}
	Pin("")
	if got := Library("libcuda.so.1"); got != "libcuda.so.1" {
		t.Fatalf("unpinned Library = %q", got)
	}
}

// TestCheckMapped: the named file (through its symlink) must be the one
// mapped; another file of the same name mapped instead is ErrNotMapped,
// and the error names what was mapped.
func TestCheckMapped(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "libcuda.so.550.54.15")
	if err := os.WriteFile(real, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "libcuda.so.1")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	maps := filepath.Join(dir, "maps")
	write := func(lines ...string) {
		if err := os.WriteFile(maps, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/libc.so.6",
		"7f20-7f30 r-xp 00000000 08:01 13 "+real)
	if err := checkMapped(link, maps); err != nil {
		t.Fatalf("the named file is mapped: %v", err)
	}
	write("7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05")
	err := checkMapped(link, maps)
	if !errors.Is(err, ErrNotMapped) || !strings.Contains(err.Error(), "mapped /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05") {
		t.Fatalf("another libcuda mapped: %v", err)
	}
}

// TestDlopenChecksPinned: Dlopen of the pinned file checks the process's
// own maps (libc, which every process maps, passes).
func TestDlopenChecksPinned(t *testing.T) {
	p := Loaded("libc.so")
	if p == "" {
		t.Skip("no libc mapped")
	}
	Pin(p)
	t.Cleanup(func() { Pin("") })
	if _, err := Dlopen(p, 2, "RTLD_NOW", true); err != nil {
		t.Fatalf("the pinned, mapped libc: %v", err)
	}
}
