package harness

import (
	"errors"
	"strings"
	"testing"
)

// A witness is {elements, this launch's nonce} or the check did not run:
// a short count (a launch that ran in part) and a stale nonce (an earlier
// launch's words left in place) are both refused, naming the kernel.
func TestWitnessJudge(t *testing.T) {
	w := Witness{Kernel: "sum_u64_relaxed_dev", Rank: 1, Nonce: 0xabc}
	for _, tc := range []struct {
		seen, nonce uint64
		msg         string
	}{
		{134217728, 0xabc, ""},
		{0, 0, "sum_u64_relaxed_dev in rank 1 visited 0 of 134217728 words"},
		{134217727, 0xabc, "visited 134217727 of 134217728"},
		{134217728, 0xabd, "left nonce 0xabd, not this launch's 0xabc"},
	} {
		err := w.judge(tc.seen, tc.nonce, 134217728, "words")
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%+v: %v", tc, err)
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg) || !errors.Is(err, ErrUnwitnessed)):
			t.Errorf("%+v: %v, want ErrUnwitnessed naming %q", tc, err, tc.msg)
		}
	}
	if a, b := nextNonce(), nextNonce(); a == b || a == 0 || b == 0 {
		t.Errorf("nonces %#x %#x", a, b)
	}
}
