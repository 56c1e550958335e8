package harness_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// readBack writes a pattern into rank 1's buffer and reads part of it back
// through Ctx.Read (an unaligned start and length, so the covering words
// are checked) and Ctx.Sum; the bytes must be the pattern's.
func readBack(id string) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass,
		Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *harness.Ctx) error {
			m, err := c.Shared(0, 1<<16, true)
			if err != nil {
				return err
			}
			pat := make([]byte, 1<<16)
			for i := range pat {
				pat[i] = byte(i*7 + 3)
			}
			if err := c.Write(0, m.Bufs[0], 0, pat); err != nil {
				return err
			}
			got, err := c.Read(1, m.Bufs[1], 5, 40000)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, pat[5:40005]) {
				return harness.Failf("read back other bytes than were written")
			}
			if _, err := c.U64(1, m.Bufs[1], 8); err != nil {
				return err
			}
			_, err = c.Sum(1, m.Bufs[1], 0, 1<<13, 64)
			return err
		}}
}

// Issue 37 item 1: a read path that changes what it reads and says success
// fails the case, whichever bit of the reply's first word it flips (the
// device's sum of the same words disagrees, or the check's own frame reads
// back altered); healthy, the same reads pass. Planted: verifyRead
// returning nil at once turned every corrupt-read row pass (red), and
// Ctx.Sum without its device sum turned the sum row pass.
func TestCorruptReadFailsTheCase(t *testing.T) {
	for _, tc := range []struct {
		rules []string
		want  report.Outcome
	}{
		{nil, report.Pass},
		{[]string{"corrupt-read:0"}, report.Fail},
		{[]string{"corrupt-read:13"}, report.Fail},
		{[]string{"corrupt-read:63"}, report.Fail},
	} {
		set := wire.DefaultSettings
		set.Inject = tc.rules
		r := harness.NewRunner(backends.HostName, set, 1)
		res := r.Run(readBack("readback"))
		r.Close()
		if res.Outcome != tc.want || (tc.want == report.Fail && !strings.HasPrefix(res.Detail, "read-back integrity: ")) {
			t.Errorf("%v: %s (%s), want %s (read-back integrity)", tc.rules, res.Outcome, res.Detail, tc.want)
		}
		t.Logf("%v: %s %s", tc.rules, res.Outcome, res.Detail)
	}
}

// The rank-side sum (wire.TSum) is verified too: under corrupt-read a case
// that only sums, and never reads, fails (its device sum's frame reads
// back altered before the two sums are compared). Planted: Ctx.Sum
// without its device sum passed (red).
func TestCorruptReadFailsTheSum(t *testing.T) {
	set := wire.DefaultSettings
	set.Inject = []string{"corrupt-read:0"}
	r := harness.NewRunner(backends.HostName, set, 1)
	defer r.Close()
	res := r.Run(&harness.Case{ID: "sumonly", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 2}, Expected: report.Pass,
		Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *harness.Ctx) error {
			b, err := c.Local(0, 4096)
			if err != nil {
				return err
			}
			if err := c.Zero(0, b, 0, 4096); err != nil {
				return err
			}
			_, err = c.Sum(0, b, 0, 512, 64)
			return err
		}})
	if res.Outcome != report.Fail || !strings.HasPrefix(res.Detail, "read-back integrity: ") {
		t.Fatalf("%s (%s), want fail, read-back integrity", res.Outcome, res.Detail)
	}
}
