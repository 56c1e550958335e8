package suite

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// A pass with weak evidence reads "pass (weak evidence)" in the table and
// in junit's system-out; a strong-evidence pass and an ordinary pass do not.
func TestWeakEvidenceShown(t *testing.T) {
	rs := []report.Result{
		{ID: "host.memfd.litmus.a", Outcome: report.Pass, Expected: report.Pass, Evidence: report.EvidenceWeak},
		{ID: "host.memfd.litmus.b", Outcome: report.Pass, Expected: report.Pass, Evidence: report.EvidenceStrong},
		{ID: "host.memfd.counter.c", Outcome: report.Pass, Expected: report.Pass},
	}
	var b bytes.Buffer
	PrintTable(&b, rs, nil)
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(path, rs); err != nil {
		t.Fatal(err)
	}
	j, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{b.String(), string(j)} {
		if n := strings.Count(out, "pass (weak evidence)"); n != 1 {
			t.Errorf("want exactly one \"pass (weak evidence)\" (case a), have %d in:\n%s", n, out)
		}
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "weak evidence") && !strings.HasPrefix(l, "host.memfd.litmus.a") {
			t.Errorf("weak evidence shown on the wrong case: %s", l)
		}
	}
}
