package inject

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The run's counters are shared: two installs on one memfd (two ranks'
// mappings) count fail-every's calls and drop-every's launches together,
// so the N-th of the run fires even when no one process makes N calls,
// and ReadFired (the suite's read of the memfd) sees every fire.
func TestSharedCounters(t *testing.T) {
	defer Set(nil)
	rules, err := Parse("fail-every:mmap=5/4,drop-every:3,noop:dup,fail:never=1")
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewCounters(rules)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Two "ranks": each installs the run's counters afresh, as a rank does
	// at its hello, and makes 2 mmaps and 2 launches; per process none
	// would reach the 4th mmap or the 3rd launch.
	failed, dropped := 0, 0
	for rank := 0; rank < 2; rank++ {
		if err := SetShared(rules, int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, skip, _ := Call("mmap"); skip {
				failed++
			}
			if _, d := DropLaunch("k"); d {
				dropped++
			}
		}
		Call("dup")
	}
	if failed != 1 || dropped != 1 {
		t.Errorf("across the run's 4 mmaps and 4 launches: %d failed (want 1), %d dropped (want 1)", failed, dropped)
	}
	fired, err := ReadFired(f, len(rules))
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{1, 1, 2, 0}; !equal(fired, want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
	if got := Fired(); !equal(got, fired) {
		t.Errorf("the process reads %v, the memfd %v", got, fired)
	}
	if err := SetShared(rules[:2], int(f.Fd())); !errors.Is(err, ErrCounters) {
		t.Errorf("counters made for 4 rules accepted 2: %v", err)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CheckSymbols refuses a call rule whose symbol the backend does not bind
// behind the injector, naming symbol and backend; a _vN-less name of a
// bound one and drops and speed rules pass.
func TestCheckSymbols(t *testing.T) {
	ok, _ := Parse("fail:cuMemGetInfo=2,noop:cuMemExportToShareableHandle,drop:anything,copy-times:2")
	all := append(append(append(slices.Clone(CUDASymbols), HIPSymbols...), HSASymbols...), HostSymbols...)
	if err := CheckSymbols("a", CUDASymbols, ok); err != nil {
		t.Errorf("cuda's list: %v", err)
	}
	if err := CheckSymbols("auto", all, ok); err != nil {
		t.Errorf("auto: %v", err)
	}
	for _, tc := range []struct {
		backend string
		names   []string
		rules   string
		want    string
	}{
		{"a", CUDASymbols, "fail:cuMemExportToShareableHandel=801", "backend a binds no call named cuMemExportToShareableHandel"},
		{"b", HostSymbols, "noop:cuMemMap", "backend b binds no call named cuMemMap"},
		{"c", HSASymbols, "fail-every:hsa_signal_load_relaxed=1/2", "backend c binds no call named hsa_signal_load_relaxed"},
		{"d", nil, "hang:x", "backend d has no call behind the injector"},
		{"auto", all, "fail:nosuch=5", "no backend binds a call named nosuch"},
	} {
		rules, err := Parse(tc.rules)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSymbols(tc.backend, tc.names, rules)
		if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s: %v, want %q", tc.rules, tc.backend, err, tc.want)
		}
	}
}
