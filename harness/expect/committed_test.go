package expect

import (
	"os"
	"path/filepath"
	"testing"
)

// Every committed expectation folder must load: a typo in a baseline must
// fail CI, not the gate of the next driver upgrade.
func TestCommittedExpectationsLoad(t *testing.T) {
	dirs, err := filepath.Glob("../../expectations/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no expectation folders found (%v)", err)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		s, err := Load([]string{d})
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if len(s.Cases) == 0 {
			t.Errorf("%s: no cases.txt entries", d)
		}
		t.Logf("%s: %d cases, %d listed failures, stack %v", filepath.Base(d), len(s.Cases), len(s.Fails), s.Stack)
	}
}
