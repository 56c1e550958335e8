package host

import (
	"testing"

	"p2patomics/kernels"
	"p2patomics/rank/backend"
)

func open(t testing.TB) *Backend {
	h := &Backend{}
	if _, err := h.Open(backend.Config{Rank: 0, Ranks: 1}); err != nil {
		t.Fatal(err)
	}
	return h
}

// The planted racy kernel must lose updates with two threads, while the
// atomic add with the same shape must not: both verification directions.
func TestRacyLosesAtomicDoesNot(t *testing.T) {
	h := open(t)
	b, exp, err := h.Alloc(Kind, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free(b)
	_ = closeFd(exp.Fd)
	racy := kernels.MustLookup("racy_u64_plain_sys")
	// Two blocks of one thread each meet at a barrier (word 1) first, so
	// the two increments always overlap.
	if _, err := h.Launch(racy, 2, 1, []uint64{b.Addr(), b.Addr() + 8, 20000, 1, 200, 2, uint64(5e9)}); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	h.Read(b, 0, p)
	if got := le(p); got >= 40000 {
		t.Fatalf("racy counter counted %d of 40000: the planted race lost nothing", got)
	}
	h.Write(b, 0, make([]byte, 8))
	add := kernels.MustLookup("add_u64_relaxed_sys")
	if _, err := h.Launch(add, 1, 2, []uint64{b.Addr(), 0, 1, 20000, 2, 0}); err != nil {
		t.Fatal(err)
	}
	h.Read(b, 0, p)
	if got := le(p); got != 40000 {
		t.Fatalf("atomic add counted %d, want 40000", got)
	}
}

func TestEveryManifestKernelHasAHostBody(t *testing.T) {
	h := open(t)
	for _, k := range kernels.All() {
		ptr := map[string]unsafePtr{}
		_ = ptr
		if _, err := h.body(k, fakePtrs(k), map[string]uint64{}, 1, 1); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	h := open(b)
	buf, exp, _ := h.Alloc(Kind, 4096)
	_ = closeFd(exp.Fd)
	add := kernels.MustLookup("add_u64_relaxed_sys")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Launch(add, 1, 2, []uint64{buf.Addr(), 0, 1, 100000, 2, 0})
	}
	b.ReportMetric(float64(b.N)*200000/b.Elapsed().Seconds()/1e6, "Mops/s")
}
