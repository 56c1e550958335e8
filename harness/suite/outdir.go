package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/internal/safefile"
)

// OutMarker is the file every --out folder the suite creates holds: only a
// folder that holds it (or a p2patomics results.json, or nothing) is ever moved aside
// or removed, so a mistyped --out=$HOME is refused, never renamed.
const OutMarker = ".p2patomics-out"

// OutDir is the run's --out folder, created fresh and locked for the
// life of the process.
type OutDir struct {
	Path string
	lock *os.File // the folder itself, flock'd; never closed (exit releases it)
}

// PrepareOut readies path for a run, before anything runs:
//   - a second suite on the same folder is refused, naming the holder's pid
//     (an exclusive flock on the folder, held until this process exits);
//   - the previous run's folder is kept as <path>.prev (the one before it
//     is removed), so the new run starts empty and two runs never mix;
//   - the folder is created 0755 by this process, so nobody else can plant
//     a symlink inside it;
//   - every way the folder cannot be written (a file, a path under a file,
//     a read-only file system, /dev/full, an over-long name) is found here.
//
// Every error is one line naming the folder; the caller exits 2.
func PrepareOut(path string) (*OutDir, error) {
	path = filepath.Clean(path)
	if err := safeAncestors(path); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		od, err := setAside(path, fi)
		if err != nil || od != nil {
			return od, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--out=%s: %v", quote(path), err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("--out=%s: %v", quote(path), err)
	}
	// Again once the way exists: a folder another user made (or swapped
	// for a link) where MkdirAll found or made one is refused now.
	if err := safeAncestors(path); err != nil {
		return nil, err
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("--out=%s was created by someone else while this suite moved the previous run aside", quote(path))
		}
		return nil, fmt.Errorf("--out=%s: %v", quote(path), err)
	}
	d, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	return finishOut(path, d)
}

// setAside deals with an --out that exists (fi): a private empty folder
// is used as it is (the OutDir returned); a previous run is locked and
// renamed to <path>.prev, so PrepareOut creates path afresh (nil, nil);
// anything else is refused.
func setAside(path string, fi os.FileInfo) (*OutDir, error) {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, fmt.Errorf("--out=%s is a symlink: give the folder itself (the suite does not write through links)", quote(path))
	case !fi.IsDir():
		return nil, fmt.Errorf("--out=%s exists and is not a folder", quote(path))
	}
	old, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	if private(old) {
		// An empty folder of this user's that no one else may write
		// (mktemp -d): nothing to keep, and no one could have planted
		// anything in it. Use it as it is.
		return finishOut(path, old)
	}
	if !ours(path) {
		old.Close()
		return nil, fmt.Errorf("--out=%s holds files that are not a p2patomics run (no %s, and no results.json that reads as a p2patomics record): give a new or empty folder", quote(path), OutMarker)
	}
	prev := path + ".prev"
	p, err := clearPrev(path, prev)
	if p != nil {
		defer p.Close() // held until the rename below is done
	}
	if err != nil {
		old.Close()
		return nil, err
	}
	// Renamed while locked: a suite that opened the old folder before
	// the rename still finds it locked, and the lock goes with it.
	err = os.Rename(path, prev)
	old.Close()
	if err != nil {
		return nil, fmt.Errorf("--out=%s: keeping the previous run as %s: %v", quote(path), quote(prev), err)
	}
	return nil, nil
}

// clearPrev removes the run before the previous one (<path>.prev) when it
// is a p2patomics run; a suite may be running on it, so its folder is
// locked first and the lock returned, for the caller to hold until it
// has renamed path over it.
func clearPrev(path, prev string) (*os.File, error) {
	fi, err := os.Lstat(prev)
	if err != nil {
		return nil, nil
	}
	if !ours(prev) {
		return nil, fmt.Errorf("--out=%s: %s is in the way and is not a p2patomics run: move it", quote(path), quote(prev))
	}
	var p *os.File
	if fi.IsDir() {
		p, err = lockDir(prev)
		if err != nil {
			return nil, fmt.Errorf("--out=%s: %s: %v", quote(path), quote(prev), strings.TrimPrefix(err.Error(), "--out="+quote(prev)+" "))
		}
	}
	if err := os.RemoveAll(prev); err != nil {
		return p, fmt.Errorf("--out=%s: removing the run before the previous one: %v", quote(path), err)
	}
	return p, nil
}

// private reports whether the locked folder d is empty, this user's and
// writable by no one else.
func private(d *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(d.Fd()), &st) != nil || int(st.Uid) != os.Getuid() || st.Mode&0o022 != 0 {
		return false
	}
	names, err := d.Readdirnames(1)
	_, _ = d.Seek(0, 0)
	return err != nil && len(names) == 0
}

// finishOut makes the locked folder the run's: mode 0755 and the marker.
func finishOut(path string, d *os.File) (*OutDir, error) {
	// 0755 whatever the umask: the reports are for whoever reads them, and
	// only this user may write here.
	if err := d.Chmod(0o755); err != nil {
		d.Close()
		return nil, fmt.Errorf("--out=%s: %v", quote(path), err)
	}
	marker := filepath.Join(path, OutMarker)
	f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "p2patomics suite pid %d\n", os.Getpid())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("--out=%s cannot be written: %v", quote(path), err)
	}
	return &OutDir{Path: path, lock: d}, nil
}

// lockDir opens path as a folder (not through a symlink) and takes the
// suite's exclusive lock on it.
func lockDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("--out=%s: %v", quote(path), err)
	}
	d := os.NewFile(uintptr(fd), path)
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if lockHook != nil {
		lockHook(path)
	}
	if err == nil && !samePath(d, path) {
		// Between the open and the lock another suite moved this folder
		// aside (to <out>.prev) and made a new one: the lock taken is on
		// the old folder, not on what the path names now. Lock that.
		d.Close()
		return lockDir(path)
	}
	if err != nil {
		holder := "another process"
		if pid := harness.FlockHolder(d); pid > 0 {
			holder = "pid " + strconv.Itoa(pid)
		}
		d.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("--out=%s is in use by another p2patomics suite (%s): wait for it or choose another folder", quote(path), holder)
		}
		return nil, fmt.Errorf("--out=%s: lock: %v", quote(path), err)
	}
	return d, nil
}

// safeAncestors refuses a --out that anyone but the runner or root could
// redirect: internal/safefile's walk (every folder and symlink on the way,
// from /), the one every file a p2patomics program writes goes through
// (issue 49 B6). Its errors are one line naming --out.
func safeAncestors(path string) error { return safefile.Ancestors("--out", path) }

// lockHook runs between a folder's flock and the check that the path
// still names it (tests make the race happen there).
var lockHook func(path string)

// samePath reports whether path still names the folder d has open.
func samePath(d *os.File, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(d.Fd()), &a) != nil || unix.Lstat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// ours reports whether a folder may be moved aside or removed: it holds
// the suite's marker (a regular file, as finishOut writes it), or a
// results.json that reads as a p2patomics record (report.Read: our schema,
// our ids and outcomes), or nothing at all. A results.json is a common
// name for other tools' output: a folder holding {"tool":"other"} beside a
// user's files was renamed to <out>.prev and removed by the next run
// (issue 49 B5), so a name alone is never enough.
func ours(path string) bool {
	ents, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	if len(ents) == 0 {
		return true
	}
	for _, e := range ents {
		if e.Name() == OutMarker && e.Type().IsRegular() {
			return true
		}
	}
	for _, e := range ents {
		if e.Name() == "results.json" && e.Type().IsRegular() {
			_, err := report.Read(filepath.Join(path, e.Name()))
			return err == nil
		}
	}
	return false
}

// quote renders a user-given value for a one-line message: as is when it
// is plain, Go-quoted when it holds a newline, an escape code or other
// control or non-UTF-8 bytes (a value echoed raw could split the line or
// drive the terminal).
func quote(s string) string {
	if strconv.CanBackquote(s) && !strings.ContainsAny(s, " \t\"'") && s != "" {
		return s
	}
	return strconv.Quote(s)
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// oneLine folds a library's multi-line, coloured message (Ginkgo's label
// filter errors) into one plain line.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(ansi.ReplaceAllString(s, ""), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Learn more at") {
			parts = append(parts, l)
		}
	}
	return quoteControls(strings.Join(parts, "; "))
}

// quoteControls escapes control bytes left in a message.
func quoteControls(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// DefaultOut is out/ at the root of the p2patomics checkout the working
// directory is in (go tool ginkgo runs the binary in specs/, make run in
// the root), else ./out.
func DefaultOut() string {
	if root, ok := checkoutRoot(); ok {
		return filepath.Join(root, "out")
	}
	return "./out"
}

// checkoutRoot is the root of the p2patomics checkout the working
// directory is in: the nearest folder up with a go.mod, when that go.mod
// is p2patomics'.
func checkoutRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			return d, strings.HasPrefix(strings.TrimSpace(string(b)), "module p2patomics")
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// resolvePaths resolves --expectations' comma-separated paths as the user
// typed them. go tool ginkgo runs the suite binary in the package's folder
// (specs/) and passes on no trace of the folder it was run from (Ginkgo's
// ginkgo/internal/run.go sets cmd.Dir = suite.Path; the child's PWD is that
// folder too), so a relative path that does not exist from the working
// directory but does from the checkout's root is taken from the root, the
// folder README's commands run from. Any other path is left as typed.
func resolvePaths(list string) string {
	root, ok := checkoutRoot()
	if !ok || list == "" {
		return list
	}
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || filepath.IsAbs(p) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			parts[i] = filepath.Join(root, p)
		}
	}
	return strings.Join(parts, ",")
}
