package inject

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The hang rules: a wedged driver, the call that never returns (issue 37
// item 4). They plant what a fail rule cannot: a case that gets no answer
// at all, so the harness's deadlines and the naming of the stuck call can
// be measured.
//
//	hang:<symbol>        every call of <symbol> never returns
//	hang-at:<symbol>=<N> the N-th call of <symbol> in each rank process never returns
//
// They are kept apart from the other rules (their own parser, seam and
// counters) because the choke point must trace the call as begun and then
// block in it, where the others return a status instead of calling.
const (
	Hang   = "hang"
	HangAt = "hang-at"
)

// Hangs reports whether the rule is a hang rule (hang, hang-at).
func (r Rule) Hangs() bool { return r.Kind == Hang || r.Kind == HangAt }

func hangString(r Rule) string {
	if r.Kind == HangAt {
		return fmt.Sprintf("%s:%s=%d", HangAt, r.Target, r.Every)
	}
	return Hang + ":" + r.Target
}

// parseHang reads a hang rule; ok is false for another kind.
func parseHang(kind, arg string) (r Rule, ok bool, err error) {
	switch kind {
	case Hang:
		if !name(arg) {
			return Rule{}, true, errors.New("want hang:<symbol>")
		}
		return Rule{Kind: Hang, Target: arg}, true, nil
	case HangAt:
		sym, nText, cut := strings.Cut(arg, "=")
		if !cut || !name(sym) {
			return Rule{}, true, errors.New("want hang-at:<symbol>=<N>, the N-th call of each rank process")
		}
		n, err := strconv.ParseUint(nText, 10, 32)
		if err != nil || n < 1 {
			return Rule{}, true, fmt.Errorf("N %q: want a whole number of at least 1", nText)
		}
		return Rule{Kind: HangAt, Target: sym, Every: n}, true, nil
	}
	return Rule{}, false, nil
}

// hangCounts is the hang rules' own per-process call counts, for one set
// of installed rules: hang-at's N-th call is counted in the rank process
// whatever the other rules count.
type hangCounts struct {
	in *installed
	n  []atomic.Uint64
}

var hangState atomic.Pointer[hangCounts]

func countsFor(in *installed) *hangCounts {
	for {
		hc := hangState.Load()
		if hc != nil && hc.in == in {
			return hc
		}
		fresh := &hangCounts{in: in, n: make([]atomic.Uint64, len(in.rules))}
		if hangState.CompareAndSwap(hc, fresh) {
			return fresh
		}
	}
}

// Wedge is the hang seam, asked at the choke point before a call under
// names (as Call matches them): it reports the hang rule that says this
// call never returns. The caller traces the call as begun (so the record
// is in flight, naming the call) and then calls Block.
func Wedge(bound string, names ...string) (Rule, bool) {
	in := active.Load()
	if in == nil {
		return Rule{}, false
	}
	var hc *hangCounts
	for i, r := range in.rules {
		if !r.Hangs() || (!matchName(r.Target, bound) && !matches(r.Target, names)) {
			continue
		}
		if hc == nil {
			hc = countsFor(in)
		}
		n := hc.n[i].Add(1)
		if r.Kind == Hang || n == r.Every {
			in.fired(i) // counted before the call wedges: the rank never returns to count it
			return r, true
		}
	}
	return Rule{}, false
}

// Block never returns: the wedged call. Only a signal ends the process
// (the harness's SIGQUIT, then SIGKILL). It sleeps rather than select{}s
// so the Go runtime never takes a rank with every goroutine blocked for a
// deadlock and exits: a driver's hang does not end itself either.
func Block() {
	for {
		time.Sleep(time.Hour)
	}
}
