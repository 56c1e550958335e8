package host

import (
	"math"
	"testing"

	"p2patomics/rank/backend"
)

// Issue 18 item 12: offsets near 2^64 are refused with an error, never a
// panic (off+8 > size wrapped for off = 2^64-8).
func TestRangeChecksDoNotWrap(t *testing.T) {
	h := &Backend{}
	if _, err := h.Open(backend.Config{}); err != nil {
		t.Fatal(err)
	}
	b, exp, err := h.Alloc(Kind, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free(b)
	defer closeFd(exp.Fd)
	for _, off := range []uint64{math.MaxUint64 - 7, math.MaxUint64 - 4095, 4096, 4089} {
		if _, err := h.CPUWord(b, off); err == nil {
			t.Errorf("CPUWord at %d of a 4096-byte buffer: no error", off)
		}
	}
	if _, err := h.CPUWord(b, 4088); err != nil {
		t.Errorf("CPUWord at the last word: %v", err)
	}
	if _, err := h.Copy(b, math.MaxUint64-15, b, 0, 16); err == nil {
		t.Error("Copy to offset 2^64-16: no error")
	}
	if _, err := h.Copy(b, 0, b, 8, math.MaxUint64-7); err == nil {
		t.Error("Copy of 2^64-8 bytes: no error")
	}
}
