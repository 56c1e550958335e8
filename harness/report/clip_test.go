package report

import (
	"strings"
	"testing"
)

// Issue 49 U13: a clipped id list ends on a whole id ("… host.memfd.waitflag.bo..."
// was printed), and a clip never splits a UTF-8 character.
func TestClipKeepsWholeIDs(t *testing.T) {
	ids := strings.Repeat("host.memfd.waitflag.bounded_sys ", 10)
	got := clip(ids, 160)
	if !strings.HasSuffix(got, "host.memfd.waitflag.bounded_sys …") || len(got) > 160+len(" …") {
		t.Errorf("clip cut an id: %q", got)
	}
	if got := clip("é"+strings.Repeat("x", 300), 10); !strings.HasPrefix(got, "é") || len(got) != 302 {
		t.Errorf("clip of one long word: %q", got)
	}
}
