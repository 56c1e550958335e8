package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sticky makes a sticky 01777 folder (like /tmp) holding a link named
// name of uid 65534 to target, as another user may plant there; root only
// (fs.protected_symlinks may be 0, as on the machines the review used).
func sticky(t *testing.T, name, target string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test plants a link of uid 65534")
	}
	dir := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, name)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return link
}

// Issue 49 B6: WriteFile never writes through another user's link: not
// at the path itself (a file link in a sticky folder), not on its way (a
// folder link); the target keeps its bytes, the refusal is one line and
// errors.Is ErrUnsafe, and no temporary file is left. A plain write
// replaces the file atomically with the mode asked.
func TestWriteFileRefusesForeignLinks(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileLink := sticky(t, "census.txt", victim)
	err := WriteFile("--out", fileLink, []byte("census\n"), 0o644)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "is a symlink") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a link at the path: %v", err)
	}
	victimDir := t.TempDir()
	dirLink := sticky(t, "bl", victimDir)
	err = WriteFile("the expectation file", filepath.Join(dirLink, "cases.txt"), []byte("x\n"), 0o644)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "the symlink on its way "+dirLink+" belongs to uid 65534") {
		t.Errorf("a foreign link on the way: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if ents, _ := os.ReadDir(victimDir); len(ents) != 0 {
		t.Errorf("the folder link's target holds %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Dir(fileLink)); len(ents) != 1 {
		t.Errorf("the sticky folder holds %d entries (a temp file left?)", len(ents))
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		if err := WriteFile("--html", fifo, []byte("x"), 0o644); !errors.Is(err, ErrUnsafe) {
			t.Errorf("a FIFO: %v", err)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain.txt")
	for _, body := range []string{"one\n", "two\n"} {
		if err := WriteFile("--out", plain, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(plain)
	if b, _ := os.ReadFile(plain); err != nil || string(b) != "two\n" || st.Mode().Perm() != 0o640 {
		t.Errorf("a plain write: %q, mode %v, %v", b, st.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(plain)); len(ents) != 1 {
		t.Errorf("a plain write left %d entries", len(ents))
	}
}

// Ancestors refuses a folder of another user or one anyone may write (not
// sticky) anywhere on the way, with the flag's name in its one line.
func TestAncestorsNamesTheFlag(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	err := Ancestors("--html", filepath.Join(open, "sub", "fleet.html"))
	if !errors.Is(err, ErrUnsafe) || !strings.HasPrefix(err.Error(), "--html="+filepath.Join(open, "sub", "fleet.html")+": the folder above it "+open+" is writable by others") {
		t.Errorf("a world-writable ancestor: %v", err)
	}
	if err := Ancestors("--out", filepath.Join(t.TempDir(), "a", "b")); err != nil {
		t.Errorf("a folder of ours: %v", err)
	}
}
