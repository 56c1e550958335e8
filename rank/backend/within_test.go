package backend

import (
	"math"
	"testing"
)

func TestWithin(t *testing.T) {
	cases := []struct {
		off, n, size uint64
		want         bool
	}{
		{0, 0, 0, true},
		{0, 8, 8, true},
		{8, 0, 8, true},
		{1, 8, 8, false},
		{9, 0, 8, false},
		{math.MaxUint64 - 7, 8, 4096, false}, // off+n wraps to 0
		{math.MaxUint64, 1, 4096, false},
		{8, math.MaxUint64, 4096, false},
		{0, math.MaxUint64, math.MaxUint64, true},
	}
	for _, c := range cases {
		if got := Within(c.off, c.n, c.size); got != c.want {
			t.Errorf("Within(%d, %d, %d) = %v, want %v", c.off, c.n, c.size, got, c.want)
		}
	}
}
