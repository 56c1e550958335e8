package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestPrepareOutKeepsThePreviousRunAside(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	od, err := PrepareOut(out)
	if err != nil {
		t.Fatal(err)
	}
	od.lock.Close() // as if that suite had exited
	os.WriteFile(filepath.Join(out, "results.json"), []byte("first"), 0o644)
	od, err = PrepareOut(out)
	if err != nil {
		t.Fatal(err)
	}
	od.lock.Close()
	if b, _ := os.ReadFile(filepath.Join(out+".prev", "results.json")); string(b) != "first" {
		t.Fatalf("previous run not kept as out.prev: %q", b)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); !os.IsNotExist(err) {
		t.Fatalf("the new out/ is not clean: %v", err)
	}
	// The run before the previous one is dropped, never mixed in.
	if _, err = PrepareOut(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out+".prev", "results.json")); !os.IsNotExist(err) {
		t.Fatalf("out.prev holds an older run's results.json: %v", err)
	}
	// An empty private folder (mktemp -d) is used in place.
	tmp, _ := os.MkdirTemp(dir, "mk")
	od, err = PrepareOut(tmp)
	if err != nil {
		t.Fatal(err)
	}
	od.lock.Close()
	if _, err := os.Stat(tmp + ".prev"); !os.IsNotExist(err) {
		t.Fatalf("an empty private folder was moved aside: %v", err)
	}
	if fi, _ := os.Stat(tmp); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestPrepareOutIsPrivateToOneSuite(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := PrepareOut(out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("out/ mode %v (%v), want 0755 whatever the umask", fi.Mode(), err)
	}
	// A second suite is refused; another process holding the lock is named.
	if _, err := PrepareOut(out); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second suite on one --out: %v", err)
	}
	out2 := filepath.Join(t.TempDir(), "out")
	os.Mkdir(out2, 0o755)
	holder := exec.Command("flock", "-x", out2, "-c", "echo locked; sleep 30")
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Skip("flock(1):", err)
	}
	defer holder.Process.Kill()
	if _, err := stdout.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	_, err = PrepareOut(out2)
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(holder.Process.Pid)) {
		t.Fatalf("lock held by pid %d: %v", holder.Process.Pid, err)
	}
}

func TestPrepareOutRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	notOurs := filepath.Join(dir, "home")
	os.Mkdir(notOurs, 0o755)
	os.WriteFile(filepath.Join(notOurs, "thesis.tex"), nil, 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(dir, link)
	for _, c := range []struct{ out, want string }{
		{file, "not a folder"},
		{filepath.Join(file, "x"), "not a directory"},
		{"/dev/full", "not a folder"},
		{notOurs, "not a p2patomics run"},
		{link, "symlink"},
		{filepath.Join(dir, strings.Repeat("a", 300)), "file name too long"},
		{filepath.Join(dir, "a\nb\x1b[31m"), `"`},
	} {
		_, err := PrepareOut(c.out)
		if c.want == `"` {
			// Accepted (a legal name), but never echoed raw.
			if err != nil || strings.ContainsAny(quote(c.out), "\n\x1b") {
				t.Errorf("%q: %v; quoted as %s", c.out, err, quote(c.out))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--out=%q: %v, want one line saying %q", c.out, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(notOurs, "thesis.tex")); err != nil {
		t.Fatalf("a folder that is not a run was touched: %v", err)
	}
}
