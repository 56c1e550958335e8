package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// Issue 24: a run the injector touched says so on its verdict line, also
// when the summary is told again from a results.json read back (p2preport).
func TestVerdictLineNamesInjectedRules(t *testing.T) {
	res := []Result{{Case: ParseCase("a", nil), Outcome: Fail, Expected: Pass}}
	s := Summarize(res, "", "out")
	if strings.Contains(s.Line, "injected") {
		t.Fatalf("no rules, yet %q", s.Line)
	}
	var env Environment
	if err := json.Unmarshal([]byte(`{"inject":["drop:fill_u64_plain_dev","fail:dup=95"]}`), &env); err != nil {
		t.Fatal(err)
	}
	s.MarkInjected(env.Inject)
	if !strings.HasSuffix(s.Line, " [driver faults injected: drop:fill_u64_plain_dev,fail:dup=95]") || !strings.HasPrefix(s.Line, "p2patomics: FAIL — ") {
		t.Fatalf("line %q", s.Line)
	}
	if strings.Join(s.Inject, ",") != "drop:fill_u64_plain_dev,fail:dup=95" {
		t.Fatalf("summary.inject %v", s.Inject)
	}
	if got := EnvironmentOf(map[string]any{"inject": []string{"noop:mprotect"}}).Inject; len(got) != 1 {
		t.Fatalf("typed env: %v", got)
	}
}
package report

import (
	"strings"
	"testing"
)

// A rule that never fired is named on the verdict line and in the summary;
// a record without counts (older) claims nothing.
func TestMarkFired(t *testing.T) {
	s := Summary{Verdict: VerdictPass}
	rules := []string{"noop:munmap", "fail-every:mmap=5/200"}
	s.MarkInjected(rules)
	s.MarkFired(rules, map[string]uint64{"noop:munmap": 379})
	if len(s.NeverFired) != 1 || !strings.HasSuffix(s.Line, "[driver faults injected: noop:munmap,fail-every:mmap=5/200]; rule fail-every:mmap=5/200 never fired") {
		t.Errorf("line %q, never fired %v", s.Line, s.NeverFired)
	}
	old := Summary{Verdict: VerdictPass}
	old.MarkInjected(rules)
	old.MarkFired(rules, nil)
	if old.NeverFired != nil || strings.Contains(old.Line, "never fired") {
		t.Errorf("a record without counts: %q", old.Line)
	}
}
