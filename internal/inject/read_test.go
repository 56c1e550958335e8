package inject

import (
	"errors"
	"testing"
)

// corrupt-read parses to its bit and reads back as given; a bit outside
// the reply's first word, a missing or signed one, is a rule error.
func TestParseCorruptRead(t *testing.T) {
	for _, tc := range []struct {
		in  string
		bit uint8
	}{{"corrupt-read:0", 0}, {"corrupt-read:7", 7}, {"corrupt-read:63", 63}} {
		rules, err := Parse(tc.in)
		if err != nil || len(rules) != 1 || rules[0].Kind != CorruptRead || rules[0].Bit != tc.bit || rules[0].String() != tc.in {
			t.Errorf("%q: %+v %v", tc.in, rules, err)
		}
	}
	two, err := Parse("corrupt-read:0,corrupt-read:9")
	if err != nil || len(two) != 2 {
		t.Errorf("two bits: %v %v", two, err)
	}
	for _, bad := range []string{"corrupt-read", "corrupt-read:", "corrupt-read:64", "corrupt-read:-1", "corrupt-read:+1",
		"corrupt-read:x", "corrupt-read:1,corrupt-read:1", "corrupt-read:256"} {
		if _, err := Parse(bad); !errors.Is(err, ErrRule) {
			t.Errorf("%q: %v, want a rule error", bad, err)
		}
	}
}

// The read seam flips the rule's bit in every read, short or long, and
// nothing else; without the rule, or beside other rules only, it changes
// nothing. It is not a launch, call or speed rule.
func TestCorruptReadSeam(t *testing.T) {
	defer Set(nil)
	p := []byte{0x10, 0x20}
	if _, ok := CorruptReadIn(p); ok || p[0] != 0x10 {
		t.Fatalf("no rules: %v %x", ok, p)
	}
	others, _ := Parse("drop:k,fail:a=5,noop:b")
	Set(others)
	if _, ok := CorruptReadIn(p); ok || p[0] != 0x10 || p[1] != 0x20 {
		t.Fatalf("other rules: %v %x", ok, p)
	}
	rules, _ := Parse("fail:a=5,corrupt-read:0,corrupt-read:9")
	Set(rules)
	one := []byte{0xfe}
	if r, ok := CorruptReadIn(one); !ok || one[0] != 0xff || r.Bit != 0 || r.Kind != CorruptRead {
		t.Fatalf("1-byte read: %v %v %x", r, ok, one)
	}
	if _, ok := CorruptReadIn(p); !ok || p[0] != 0x11 || p[1] != 0x22 {
		t.Fatalf("2-byte read: %x, want 11 22", p)
	}
	if _, skip, _ := Call("a"); !skip {
		t.Fatal("fail:a no longer fires beside corrupt-read")
	}
	if _, drop := DropLaunch("k2"); drop {
		t.Fatal("corrupt-read dropped a launch")
	}
	for _, r := range rules[1:] {
		if r.Launch() || r.Speed() {
			t.Fatalf("%s is a launch or speed rule", r)
		}
	}
}
