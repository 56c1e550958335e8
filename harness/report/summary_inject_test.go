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
