package harness

import (
	"bytes"
	"fmt"
	"p2patomics/harness/backends"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/report"
	"p2patomics/wire"
)

// A read that succeeded but whose device sum the rank refused is the
// case's error, and never RankRefused: a lifetime case that accepts a
// refused read must not accept a read it could not verify. A plain refusal
// still is one. (Planted: RankRefused without its isIntegrity test read
// the wrapped refusal as refused: red.)
func TestUnverifiedReadIsNotRefused(t *testing.T) {
	refused := &RemoteError{Rank: 1, What: "launch", Msg: "invalid argument"}
	if !RankRefused(refused) {
		t.Fatal("a plain refusal is not RankRefused")
	}
	err := checkFailed(1, 3, 0, 1, refused)
	if RankRefused(err) || RankRefused(fmt.Errorf("body: %w", err)) {
		t.Fatalf("%v reads as RankRefused", err)
	}
	if ce := classOf(err); ce.outcome() != report.Error || ce.fatal() {
		t.Fatalf("%v: %s fatal=%v, want a non-fatal error", err, ce.outcome(), ce.fatal())
	}
	dead := &DeadError{Rank: 1}
	if got := classOf(checkFailed(1, 3, 0, 1, dead)); !got.fatal() {
		t.Fatalf("a death during the check lost its class: %T", got)
	}
}

// The comparison itself: bytes that differ from the memory by one bit in
// any word (a read path that spared the check's frame) fail with both sums
// named; the bytes as read pass. (Planted: wordSum skipping the last word
// let the last row through: red.)
func TestVerifyReadComparesSums(t *testing.T) {
	r := NewRunner(backends.HostName, wire.DefaultSettings, 1)
	defer r.Close()
	var outs []error
	res := r.Run(&Case{ID: "verify_compare", Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: 1}, Expected: report.Pass,
		Timeout: 20 * time.Second, Grace: time.Second, Run: func(c *Ctx) error {
			b, err := c.Local(0, 4096)
			if err != nil {
				return err
			}
			pat := make([]byte, 4096)
			for i := range pat {
				pat[i] = byte(i * 13)
			}
			if err := c.Write(0, b, 0, pat); err != nil {
				return err
			}
			outs = append(outs, c.reads.verify(c, 0, b, 0, pat))
			for _, at := range []int{0, 9, 4095} {
				bad := bytes.Clone(pat)
				bad[at] ^= 4
				outs = append(outs, c.reads.verify(c, 0, b, 0, bad))
			}
			return nil
		}})
	if res.Outcome != report.Pass || len(outs) != 4 {
		t.Fatalf("%s (%s), %d checks", res.Outcome, res.Detail, len(outs))
	}
	if outs[0] != nil {
		t.Fatalf("the bytes as written: %v", outs[0])
	}
	for i, err := range outs[1:] {
		if ce := classOf(err); ce.outcome() != report.Fail || !strings.Contains(err.Error(), "device sum 0x") || !strings.Contains(err.Error(), "bytes read sum 0x") {
			t.Errorf("altered copy %d: %v, want a fail naming both sums", i, err)
		}
	}
}
