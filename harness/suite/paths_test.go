package suite

import (
	"path/filepath"
	"testing"
)

// Issue 38 item 6: under go tool ginkgo the suite runs in specs/, where
// --expectations=expectations/host-amd64 (typed at the checkout's root, as
// README shows) was not found. This test runs in harness/suite/, another
// folder of the checkout below its root: the same situation.
func TestRelativeExpectationsFromTheRoot(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "expectations/host-amd64") + "," + filepath.Join(root, "expectations/host-amd64-verdicts")
	if got := resolvePaths("expectations/host-amd64, expectations/host-amd64-verdicts"); got != want {
		t.Errorf("relative to the root: %q, want %q", got, want)
	}
	// A path that exists here, an absolute one and one found nowhere stay
	// as typed (the last is the usage error it was).
	for _, p := range []string{"outdir.go", "/nonexistent/dir", "no/such/folder"} {
		if got := resolvePaths(p); got != p {
			t.Errorf("%s became %s", p, got)
		}
	}
}
