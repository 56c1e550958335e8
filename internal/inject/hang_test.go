package inject

import (
	"errors"
	"strings"
	"testing"
)

// The hang rules parse, read back as written, are recorded with the
// others, and refuse what is not one.
func TestParseHang(t *testing.T) {
	rules, err := Parse("hang:cuStreamSynchronize, hang-at:mprotect=50,fail:mmap=12")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(Strings(rules), ","), "hang:cuStreamSynchronize,hang-at:mprotect=50,fail:mmap=12"; got != want {
		t.Fatalf("parsed %s, want %s", got, want)
	}
	if !rules[0].Hangs() || !rules[1].Hangs() || rules[2].Hangs() || rules[1].Every != 50 {
		t.Errorf("kinds: %+v", rules)
	}
	for _, bad := range []string{"hang:", "hang:a-b", "hang-at:mmap", "hang-at:mmap=0", "hang-at:mmap=x", "hang-at:=3",
		"hang-at:mmap=-1", "hang:mmap,hang:mmap"} {
		if _, err := Parse(bad); !errors.Is(err, ErrRule) {
			t.Errorf("%q: %v, want a rule error", bad, err)
		}
	}
}

// Wedge: hang wedges every call of its symbol (by its bound or table
// name), hang-at only the N-th of the process; Call never skips a call
// for a hang rule (the call is made until it wedges), and installing the
// rules again starts the count again.
func TestWedge(t *testing.T) {
	defer Set(nil)
	if _, w := Wedge("mprotect"); w {
		t.Fatal("no rules, yet a wedge")
	}
	rules, _ := Parse("hang-at:mprotect=3,hang:cuStreamSynchronize")
	Set(rules)
	var at []int
	for i := 1; i <= 7; i++ {
		if r, w := Wedge("mprotect"); w {
			if r.String() != "hang-at:mprotect=3" {
				t.Errorf("call %d wedged by %s", i, r)
			}
			at = append(at, i)
		}
		if _, skip, _ := Call("mprotect"); skip {
			t.Errorf("call %d skipped by a hang rule", i)
		}
	}
	if len(at) != 1 || at[0] != 3 {
		t.Errorf("hang-at:mprotect=3 wedged calls %v, want [3]", at)
	}
	if _, w := Wedge("cuStreamSynchronize_v2"); !w {
		t.Error("hang:cuStreamSynchronize did not wedge cuStreamSynchronize_v2")
	}
	if _, w := Wedge("other", "cuStreamSynchronize"); !w {
		t.Error("hang:cuStreamSynchronize did not wedge its table name")
	}
	if _, w := Wedge("munmap"); w {
		t.Error("munmap wedged")
	}
	Set(rules)
	Wedge("mprotect")
	Wedge("mprotect")
	if _, w := Wedge("mprotect"); !w {
		t.Error("after Set, the third call did not wedge: the count did not start again")
	}
}
