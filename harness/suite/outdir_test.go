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

// Issue 26 item 6: a suite running on <out>.prev keeps its folder (at
// a44624c a suite on <out> removed it live), and a lock taken on a folder
// that was moved aside between the open and the flock is not taken for
// the folder the path names now.
func TestPrepareOutNeverRemovesALiveFolder(t *testing.T) {
	pv := filepath.Join(t.TempDir(), "pv")
	a, err := PrepareOut(pv)
	if err != nil {
		t.Fatal(err)
	}
	a.lock.Close() // that run ended
	b, err := PrepareOut(pv + ".prev")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.Path, "results.json"), []byte("{}"), 0o644)
	if _, err := PrepareOut(pv); err == nil || !strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a suite on %s.prev is live: %v", pv, err)
	}
	if _, err := os.Stat(filepath.Join(b.Path, "results.json")); err != nil {
		t.Fatalf("the live suite's folder was removed: %v", err)
	}
	b.lock.Close()

	// The delayed flock: another suite moves the folder aside and locks a
	// new one between this suite's open and its flock.
	q := filepath.Join(t.TempDir(), "q")
	c, err := PrepareOut(q)
	if err != nil {
		t.Fatal(err)
	}
	c.lock.Close()
	var holder *os.File
	fired := false
	lockHook = func(path string) {
		if path != q || fired {
			return
		}
		fired = true
		os.RemoveAll(q + ".prev")
		os.Rename(q, q+".prev")
		os.Mkdir(q, 0o755)
		if holder, err = lockDir(q); err != nil {
			t.Error(err)
		}
	}
	defer func() { lockHook = nil }()
	if _, err := PrepareOut(q); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("the folder was swapped between open and flock: %v", err)
	}
	holder.Close()
}

// Issue 26 item 7: --out under a folder another user owns (or anyone may
// write, not sticky) is refused; at a44624c that user could swap --out
// for a link and the suite wrote every report there.
func TestPrepareOutRefusesAnUnsafeParent(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, err := PrepareOut(filepath.Join(open, "o")); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("world-writable parent: %v", err)
	}
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o777)
	syscall.Chmod(sticky, 0o1777)
	if _, err := PrepareOut(filepath.Join(sticky, "o")); err != nil {
		t.Errorf("sticky parent (like /tmp) refused: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o755)
		os.Chown(other, 65534, 65534)
		if _, err := PrepareOut(filepath.Join(other, "o")); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("parent owned by nobody: %v", err)
		}
	}
}

// Issue 37 item 7: a folder another user owns or may write anywhere on
// --out's way, not only its parent, is refused in one line, and so is a
// symlink on the way that leads through one or that another user owns in
// a sticky folder; a symlink of the runner's to a folder of the runner's
// is followed. At ce5f99b only the parent was checked: with --out two
// levels under a folder of uid 65534, that user swapped the parent for a
// link mid-run and root's reports landed in their target.
func TestPrepareOutRefusesAForeignAncestor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes folders of uid 65534")
	}
	base := foreignTree(t)
	evil, group, theirs := filepath.Join(base, "evil"), filepath.Join(base, "group"), filepath.Join(base, "sticky", "theirs")
	for _, c := range []struct{ out, want string }{
		{filepath.Join(evil, "sub", "o"), "the folder above it " + evil + " belongs to uid 65534"},
		{filepath.Join(evil, "newsub", "o"), "belongs to uid 65534"},
		{filepath.Join(group, "sub", "o"), group + " is writable by others"},
		{filepath.Join(base, "tosub", "o"), evil + " belongs to uid 65534"},
		{filepath.Join(theirs, "o"), "the symlink on its way " + theirs + " belongs to uid 65534"},
	} {
		_, err := PrepareOut(c.out)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--out=%s: %v, want one line with %q", c.out, err, c.want)
		}
		if _, serr := os.Lstat(c.out); serr == nil {
			t.Errorf("--out=%s was created", c.out)
		}
	}
	if _, err := os.Stat(filepath.Join(evil, "newsub")); err == nil {
		t.Error("a folder was made under the foreign folder")
	}
	od, err := PrepareOut(filepath.Join(base, "good", "o"))
	if err != nil {
		t.Fatalf("a symlink of the runner's to a folder of the runner's: %v", err)
	}
	defer od.lock.Close()
	if _, err := os.Stat(filepath.Join(base, "real", "o", OutMarker)); err != nil {
		t.Errorf("the run was not made through the link: %v", err)
	}
}

// foreignTree makes, in a temporary folder: evil/ (uid 65534) holding
// root's sub/; group/ (0775) holding sub/; real/; sticky/ (1777) holding
// theirs, a link of uid 65534 to real; tosub, a link to evil/sub; good, a
// link to real.
func foreignTree(t *testing.T) string {
	base := t.TempDir()
	mk := func(p string, mode os.FileMode, uid int) string {
		t.Helper()
		for _, err := range []error{os.Mkdir(p, mode), os.Chmod(p, mode), os.Lchown(p, uid, uid)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	evil := mk(filepath.Join(base, "evil"), 0o755, 65534)
	mk(filepath.Join(evil, "sub"), 0o755, 0)
	mk(filepath.Join(mk(filepath.Join(base, "group"), 0o775, 0), "sub"), 0o755, 0)
	real := mk(filepath.Join(base, "real"), 0o755, 0)
	sticky := mk(filepath.Join(base, "sticky"), 0o777|os.ModeSticky, 0)
	for _, l := range [][2]string{{filepath.Join(base, "tosub"), filepath.Join(evil, "sub")}, {filepath.Join(base, "good"), "real"}, {filepath.Join(sticky, "theirs"), real}} {
		if err := os.Symlink(l[1], l[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(filepath.Join(sticky, "theirs"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return base
}

// Issue 49 B5: a folder is the suite's to move aside only when it holds
// the marker or a results.json that reads as a p2patomics record. Another
// tool's results.json beside a user's files was renamed to <out>.prev by
// the first run and removed by the second (ours() took the name alone).
func TestPrepareOutRefusesAForeignResultsJSON(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "results.json"), []byte(`{"tool":"other"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "important.txt"), []byte("precious\n"), 0o644)
	for run := 1; run <= 2; run++ {
		_, err := PrepareOut(proj)
		if err == nil || !strings.Contains(err.Error(), "not a p2patomics run") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("run %d on a folder with a foreign results.json: %v, want one line refusing it", run, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(proj, "important.txt")); err != nil || string(b) != "precious\n" {
		t.Fatalf("the user's file: %q, %v", b, err)
	}
	if _, err := os.Lstat(proj + ".prev"); !os.IsNotExist(err) {
		t.Fatalf("the user's folder was moved aside: %v", err)
	}
	// A marker that is not a regular file (a folder of that name) is no
	// marker either.
	odd := filepath.Join(dir, "odd")
	os.MkdirAll(filepath.Join(odd, OutMarker), 0o755)
	os.WriteFile(filepath.Join(odd, "notes.txt"), nil, 0o644)
	if _, err := PrepareOut(odd); err == nil {
		t.Fatal("a folder whose marker is a folder was taken as a run")
	}
	// A p2patomics record without the marker (an older run, or one copied
	// by hand) is still a run: kept as .prev.
	rec := filepath.Join(dir, "rec")
	os.Mkdir(rec, 0o755)
	os.WriteFile(filepath.Join(rec, "results.json"), []byte(`{"schema":1,"environment":{},"results":[]}`+"\n"), 0o644)
	od, err := PrepareOut(rec)
	if err != nil {
		t.Fatalf("a folder holding a p2patomics record: %v", err)
	}
	od.lock.Close()
	if _, err := os.Stat(filepath.Join(rec+".prev", "results.json")); err != nil {
		t.Fatalf("the recorded run was not kept as .prev: %v", err)
	}
	// A foreign folder in the way as <out>.prev is never removed.
	os.Rename(proj, rec+".prev.tmp")
	os.RemoveAll(rec + ".prev")
	os.Rename(rec+".prev.tmp", rec+".prev")
	if _, err := PrepareOut(rec); err == nil || !strings.Contains(err.Error(), "in the way") {
		t.Fatalf("a foreign <out>.prev: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rec+".prev", "important.txt")); err != nil {
		t.Fatalf("the foreign .prev was removed: %v", err)
	}
}
