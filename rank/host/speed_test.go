package host

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"p2patomics/internal/inject"
	"p2patomics/kernels"
)

func setRules(t *testing.T, s string) {
	t.Helper()
	rules, err := inject.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	inject.Set(rules)
	t.Cleanup(func() { inject.Set(nil) })
}

// stretch:<kernel>=F makes the launch's window at least F times what the
// kernel took, for that kernel only; by construction, so the bound is
// asserted, not a wall-clock ratio.
func TestStretchLaunch(t *testing.T) {
	setRules(t, "stretch:k=2.5")
	el := 3 * time.Millisecond
	if got := stretchLaunch("k", time.Now(), el); got < time.Duration(2.5*float64(el)) {
		t.Errorf("stretch:k=2.5 of a %v launch: window %v, want at least %v", el, got, time.Duration(2.5*float64(el)))
	}
	if got := stretchLaunch("j", time.Now(), el); got != el {
		t.Errorf("stretch:k stretched j: %v", got)
	}
}

// The speed rules change no result: the copy under copy-times:1.2 leaves
// the destination as one copy does, and a stretched add still counts
// every operation.
func TestSpeedRulesKeepResults(t *testing.T) {
	setRules(t, "copy-times:1.2,stretch:add_u64_relaxed_sys=2")
	h := open(t)
	defer h.Close()
	const n = 1 << 16
	src, _, err := h.Alloc(Kind, n)
	if err != nil {
		t.Fatal(err)
	}
	dst, _, err := h.Alloc(Kind, n)
	if err != nil {
		t.Fatal(err)
	}
	pat := make([]byte, n)
	for i := range pat {
		pat[i] = byte(i*7 + 1)
	}
	h.Write(src, 0, pat)
	if _, err := h.Copy(dst, 0, src, 0, n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	h.Read(dst, 0, got)
	if !bytes.Equal(got, pat) {
		t.Fatal("copy-times:1.2 changed the destination")
	}
	h.Write(dst, 0, make([]byte, 8))
	add := kernels.MustLookup("add_u64_relaxed_sys")
	if _, err := h.Launch(add, 1, 2, []uint64{dst.Addr(), 0, 1, 20000, 2, 0}); err != nil {
		t.Fatal(err)
	}
	h.Read(dst, 0, got[:8])
	if c := binary.LittleEndian.Uint64(got); c != 40000 {
		t.Fatalf("a stretched add counted %d, want 40000", c)
	}
}
