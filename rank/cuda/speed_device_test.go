package cuda

import (
	"testing"
	"time"

	"p2patomics/internal/inject"
	"p2patomics/kernels"
)

// The speed rules on a real device (skipped without a driver): under
// copy-times:2 a copy-engine copy's event-timed window doubles, under
// stretch:copy_b128_plain_dev=3 the copy kernel's triples; each against
// the same call with the rules removed, on one device, one after the
// other. The margins (1.5 and 2.5) leave room for the clock and the
// stretch's host turn-around.
func TestDeviceSpeedRules(t *testing.T) {
	rules, err := inject.Parse("copy-times:2,stretch:copy_b128_plain_dev=3")
	if err != nil {
		t.Fatal(err)
	}
	inject.Set(rules) // before Open: the stretch's spin words are allocated there
	t.Cleanup(func() { inject.Set(nil) })
	w := newWorker(t)
	b, info := openDevice(t, w, 0)
	const size = 256 << 20
	var e [4]time.Duration
	w.do(func() {
		dst, _, err := b.Alloc(KindIPC, size)
		if err != nil {
			t.Error(err)
			return
		}
		src, _, err := b.Alloc(KindIPC, size)
		if err != nil {
			t.Error(err)
			return
		}
		k := kernels.MustLookup("copy_b128_plain_dev")
		grid := uint32(info.Units * 4)
		args := []uint64{dst.Addr(), src.Addr(), size, 256, uint64(grid) * 256}
		for i, on := range []bool{true, false} {
			if on {
				inject.Set(rules)
			} else {
				inject.Set(nil)
			}
			for range 2 { // the first of each warms
				r, err := b.Copy(dst, 0, src, 0, size)
				if err != nil {
					t.Error(err)
					return
				}
				e[i] = r.Elapsed
				if r, err = b.Launch(k, grid, 256, args); err != nil {
					t.Error(err)
					return
				}
				e[2+i] = r.Elapsed
			}
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("copy engine %v under copy-times:2, %v without; copy kernel %v under stretch=3, %v without", e[0], e[1], e[2], e[3])
	if e[0] < time.Duration(1.5*float64(e[1])) {
		t.Errorf("copy-times:2: the copy took %v, %v without", e[0], e[1])
	}
	if e[2] < time.Duration(2.5*float64(e[3])) {
		t.Errorf("stretch:copy_b128_plain_dev=3: the kernel took %v, %v without", e[2], e[3])
	}
}
