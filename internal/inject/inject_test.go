package inject

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	good := "drop:tally_u32_relaxed_dev, drop-every:3,fail:cuMemExportToShareableHandle=801,noop:cuMemSetAccess,fail-every:cuIpcOpenMemHandle=0x1/3"
	rules, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"drop:tally_u32_relaxed_dev", "drop-every:3", "fail:cuMemExportToShareableHandle=801", "noop:cuMemSetAccess", "fail-every:cuIpcOpenMemHandle=1/3"}
	got := Strings(rules)
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
	again, err := Parse(stringsJoin(got))
	if err != nil || len(again) != len(rules) {
		t.Fatalf("round trip: %v %v", again, err)
	}
	for _, bad := range []string{"drop", "drop:", "drop:a-b", "drop-every:0", "drop-every:x", "fail:x", "fail:x=0",
		"fail:x=abc", "fail:=1", "noop:", "fail-every:x=1", "fail-every:x=1/0", "crash:x", "drop:a,drop:a", "fail:x=99999999999"} {
		if _, err := Parse(bad); !errors.Is(err, ErrRule) {
			t.Errorf("%q: %v, want a rule error", bad, err)
		}
	}
	if r, err := Parse(" "); r != nil || err != nil {
		t.Errorf("empty: %v %v", r, err)
	}
}

func stringsJoin(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func TestSeams(t *testing.T) {
	defer Set(nil)
	if _, drop := DropLaunch("k"); drop {
		t.Fatal("no rules, yet a drop")
	}
	if _, skip, _ := Call("s"); skip {
		t.Fatal("no rules, yet a skip")
	}
	rules, _ := Parse("drop:k,fail:a=5,noop:b,fail-every:c=7/3,drop-every:4")
	Set(rules)
	var drops []int
	for i := 1; i <= 8; i++ {
		if _, d := DropLaunch("other"); d {
			drops = append(drops, i)
		}
	}
	if len(drops) != 2 || drops[0] != 4 || drops[1] != 8 {
		t.Errorf("drop-every:4 dropped launches %v", drops)
	}
	if r, d := DropLaunch("k"); !d || r.Kind != Drop {
		t.Errorf("drop:k did not drop k")
	}
	if code, skip, _ := Call("a_v2"); !skip || code != 5 {
		t.Errorf("fail:a: %d %v", code, skip)
	}
	if code, skip, _ := Call("b"); !skip || code != 0 {
		t.Errorf("noop:b: %d %v", code, skip)
	}
	var failed []int
	for i := 1; i <= 9; i++ {
		if code, skip, _ := Call("c"); skip {
			if code != 7 {
				t.Errorf("fail-every code %d", code)
			}
			failed = append(failed, i)
		}
	}
	if len(failed) != 3 || failed[0] != 3 || failed[2] != 9 {
		t.Errorf("fail-every:c=7/3 failed calls %v", failed)
	}
	if _, skip, _ := Call("bx", "b_v2x"); skip {
		t.Errorf("b matched a name that is not b or a version of it")
	}
	if _, skip, _ := Call("d"); skip {
		t.Errorf("an unnamed symbol was skipped")
	}
}
