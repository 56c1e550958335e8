package specs

import (
	"testing"

	"p2patomics/harness"
	"p2patomics/kernels"
)

// allocCount records what allocEnv asked for: the kinds are the Ctx's
// (Shared and Local: the case's kind; ScratchWords: device memory).
type allocCount struct{ shared, local, scratch int }

func (a *allocCount) Shared(owner int, size uint64, grant bool) (*harness.Mem, error) {
	a.shared++
	return &harness.Mem{Bufs: []int{1, 2}}, nil
}

func (a *allocCount) Local(r int, size uint64) (int, error) { a.local++; return 3, nil }

func (a *allocCount) ScratchWords(r int, size uint64) (int, error) {
	if size != kernels.TallyBins*8 {
		panic("tally histogram of the wrong size")
	}
	a.scratch++
	return 4, nil
}

// Issue 52: a litmus environment's tally histogram lives in device memory
// (ScratchWords), not in the case's kind: on vmm-host its atomic adds
// crossed PCIe one by one (0.1-0.27 s a launch on one H100, 1.56 s of the
// suite). The arena stays the case's kind, shared from rank 0: that is
// what the case tests. Planted: the histogram by c.Local (the code
// before) fails the counts.
func TestLitmusTallyInDeviceMemory(t *testing.T) {
	var a allocCount
	mem, out, err := allocEnv(&a, 1<<20)
	if err != nil || mem == nil || out != 4 {
		t.Fatalf("allocEnv: %v, %v, buffer %d", mem, err, out)
	}
	if a.shared != 1 || a.scratch != 1 || a.local != 0 {
		t.Errorf("allocations: %d shared of the case's kind, %d scratch, %d local of the case's kind; want 1, 1, 0", a.shared, a.scratch, a.local)
	}
}
