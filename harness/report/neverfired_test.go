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
