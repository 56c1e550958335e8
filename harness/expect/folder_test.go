package expect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 49 (the review's notes on expectation folders): a folder's files
// are read by their exact names. A stray old-flakes.txt joined the gate, a
// folder named flakes.txt was skipped without a word, and a flakes.txt
// symlink to /etc/passwd was read (PASS). Each is now one line naming
// the entry, and a folder of plain files (with a sub-folder of another
// name, like amd-gfx942-reported/rocm6) still loads.
func TestLoadRefusesWhatAFolderMustNotHold(t *testing.T) {
	mk := func(t *testing.T, plant func(dir string) error) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, CasesFile), []byte("host.memfd.a.b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := plant(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		name, want string
		plant      func(dir string) error
	}{
		{"old-flakes.txt", `"old-flakes.txt" is not an expectation file name`, func(d string) error {
			return os.WriteFile(filepath.Join(d, "old-flakes.txt"), []byte("host\\..*\n"), 0o644)
		}},
		{"a folder named flakes.txt", `"flakes.txt" is a folder`, func(d string) error {
			return os.Mkdir(filepath.Join(d, FlakesFile), 0o755)
		}},
		{"a flakes.txt link to /etc/passwd", `"flakes.txt" is a symlink`, func(d string) error {
			return os.Symlink("/etc/passwd", filepath.Join(d, FlakesFile))
		}},
	} {
		_, err := Load([]string{mk(t, c.plant)})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
	ok := mk(t, func(d string) error { return os.Mkdir(filepath.Join(d, "rocm6"), 0o755) })
	if s, err := Load([]string{ok}); err != nil || !s.Cases["host.memfd.a.b"] {
		t.Errorf("a plain folder with a sub-folder: %v", err)
	}
}
