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

// The speed rules read back as given, refuse an F that plants nothing or
// a hang, and refuse a second copy-times or a second stretch of a kernel.
func TestParseSpeed(t *testing.T) {
	rules, err := Parse("copy-times:2, stretch:spread_u64_relaxed_sys=1.5,stretch:copy_b128_plain_dev=2")
	if err != nil {
		t.Fatal(err)
	}
	want := "copy-times:2,stretch:spread_u64_relaxed_sys=1.5,stretch:copy_b128_plain_dev=2"
	if got := stringsJoin(Strings(rules)); got != want {
		t.Fatalf("parsed %s, want %s", got, want)
	}
	if r, err := Parse("copy-times:1.2"); err != nil || r[0].Factor != 1.2 || r[0].String() != "copy-times:1.2" || !r[0].Speed() || r[0].Launch() {
		t.Errorf("copy-times:1.2: %+v %v", r, err)
	}
	for _, bad := range []string{"copy-times:", "copy-times:1", "copy-times:0.5", "copy-times:x", "copy-times:NaN", "copy-times:+Inf",
		"copy-times:101", "stretch:k", "stretch:=2", "stretch:k=1", "stretch:a-b=2", "copy-times:2,copy-times:3",
		"stretch:k=2,stretch:k=3"} {
		if _, err := Parse(bad); !errors.Is(err, ErrRule) {
			t.Errorf("%q: %v, want a rule error", bad, err)
		}
	}
	if _, err := Parse("stretch:k=2,stretch:j=3"); err != nil {
		t.Errorf("two kernels stretched: %v", err)
	}
}

// The seams: copy-times splits F into whole copies and a 16-byte-granular
// extra; stretch answers for its kernel only; neither touches Call.
func TestSpeedSeams(t *testing.T) {
	defer Set(nil)
	if w, x, _, ok := CopyPlan(1 << 20); ok || w != 1 || x != 0 {
		t.Fatalf("no rules: %d copies + %d bytes, ok %v", w, x, ok)
	}
	for _, tc := range []struct {
		rule  string
		whole int
		extra uint64
	}{
		{"copy-times:2", 2, 0},
		{"copy-times:1.2", 1, 209712}, // 0.2 x 1 MiB = 209715.2, down to a multiple of 16
		{"copy-times:3.5", 3, 1 << 19},
	} {
		rules, err := Parse(tc.rule + ",stretch:k=2.5")
		if err != nil {
			t.Fatal(err)
		}
		Set(rules)
		w, x, r, ok := CopyPlan(1 << 20)
		if !ok || w != tc.whole || x != tc.extra || r.Kind != CopyTimes {
			t.Errorf("%s: %d copies + %d bytes (%v), want %d + %d", tc.rule, w, x, ok, tc.whole, tc.extra)
		}
		if f, _, ok := StretchOf("k"); !ok || f != 2.5 {
			t.Errorf("stretch:k=2.5 answers %v %v for k", f, ok)
		}
		if _, _, ok := StretchOf("j"); ok {
			t.Errorf("stretch:k stretched j")
		}
		if _, skip, _ := Call("k"); skip {
			t.Errorf("a speed rule skipped a call of its kernel's name")
		}
	}
}

// CheckBackend refuses a speed rule where no backend applies it, and lets
// the other rules through everywhere.
func TestCheckBackend(t *testing.T) {
	speed, _ := Parse("copy-times:2")
	other, _ := Parse("drop:k,fail:hsa_init=4096")
	if err := CheckBackend("a", true, speed); err != nil {
		t.Errorf("applies: %v", err)
	}
	if err := CheckBackend("b", false, speed); !errors.Is(err, ErrNotSupported) {
		t.Errorf("does not apply: copy-times accepted (%v)", err)
	}
	if err := CheckBackend("b", false, other); err != nil {
		t.Errorf("does not apply, no speed rule: %v", err)
	}
}
