// Package safefile is the one check every file a p2patomics program
// writes goes through (the suite's --out, p2pcensus --out, p2pfleet
// --html/--json, p2pbaseline's folder, --update-expectations): nobody but
// the runner or root may be able to redirect the path (Ancestors), and the
// file itself is written without following a link (WriteFile). Issue 49
// B6: the suite's --out had the ancestor walk, the tools did not, and
// p2pcensus, p2pfleet and p2pbaseline wrote through another user's
// symlink in a sticky folder (root's file overwritten with a census).
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafe: the path could be redirected by another user, or names a
// link or something that is not a regular file (errors.Is; the message is
// the refusal's own line, without these words).
var ErrUnsafe = errors.New("unsafe path")

// unsafeError is a refusal: its own one-line message, ErrUnsafe to
// errors.Is.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }
func (e *unsafeError) Unwrap() error { return ErrUnsafe }

func unsafef(format string, a ...any) error {
	return &unsafeError{fmt.Sprintf(format, a...)}
}

// Quote renders a user-given path for a one-line message: as is when it
// is plain, Go-quoted when it holds a newline, an escape code, a space or
// a quote (a value echoed raw could split the line or drive the terminal).
func Quote(s string) string {
	if strconv.CanBackquote(s) && !strings.ContainsAny(s, " \t\"'") && s != "" {
		return s
	}
	return strconv.Quote(s)
}

// label is how a message names what was given: "--out=PATH" for a flag,
// "NAME PATH" otherwise ("the expectation folder /x").
func label(flag, path string) string {
	if strings.HasPrefix(flag, "-") {
		return flag + "=" + Quote(path)
	}
	return flag + " " + Quote(path)
}

// Ancestors refuses a path that anyone but the runner or root could
// redirect: every folder on the way to it, from /, and every symlink
// followed on the way (with its target's own way), must belong to the
// runner or root and be writable by no one else unless sticky (/tmp:
// others may add entries there but not rename or remove ours). Another
// user who owns or may write any of them could swap the next component
// for a link between the checks and the writes, which go through the
// path, and every file would be written where that user points. The path
// itself is not checked (the caller creates it, or WriteFile refuses a
// link there). The walk stops at the first missing component: the rest is
// made by this user (a caller that makes folders checks again after). flag
// is what the messages call the path ("--out"); an error is one line.
func Ancestors(flag, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", label(flag, path), err)
	}
	rest := strings.Split(strings.TrimPrefix(filepath.Dir(abs), "/"), "/")
	cur, links := "/", 0
	if err := entry(flag, path, cur, false); err != nil {
		return err
	}
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			return nil // missing (made by this user), or the caller's own error
		}
		if err := entry(flag, path, next, st.Mode&unix.S_IFMT == unix.S_IFLNK); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if links++; links > 40 {
				return unsafef("%s: too many symlinks on the way (a loop?)", label(flag, path))
			}
			target, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("%s: %w", label(flag, path), err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), rest...)
		case unix.S_IFDIR:
			cur = next
		default:
			return nil // not a folder: the caller's write says so
		}
	}
	return nil
}

// entry: the folder (or symlink, link) at p on out's way belongs to the
// runner or root, and a folder is writable by no one else unless sticky.
// A link's own mode means nothing; who owns it matters where it lies in a
// sticky folder (its owner may replace it there).
func entry(flag, out, p string, link bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return nil
	}
	uid := uint32(os.Geteuid())
	what := "its folder"
	if filepath.Clean(p) != filepath.Dir(filepath.Clean(out)) {
		what = "the folder above it"
	}
	if link {
		what = "the symlink on its way"
	}
	switch {
	case st.Uid != uid && st.Uid != 0:
		return unsafef("%s: %s %s belongs to uid %d, who could replace what %s names with a link: choose a folder of yours", label(flag, out), what, Quote(p), st.Uid, flag)
	case !link && st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		return unsafef("%s: %s %s is writable by others (mode %#o, not sticky), who could replace what %s names with a link: choose a folder of yours", label(flag, out), what, Quote(p), st.Mode&0o7777, flag)
	}
	return nil
}

// WriteFile replaces path with data (mode perm), or leaves it as it was,
// after Ancestors: a link at path (anyone's) or anything but a regular
// file there is refused (ErrUnsafe), never followed; the data goes to a
// temporary file created beside it with O_EXCL|O_NOFOLLOW, is synced, and
// is renamed over path (rename replaces, never follows). On any failure
// the temporary file is removed. The error is one line naming path.
func WriteFile(flag, path string, data []byte, perm os.FileMode) (err error) {
	if err := Ancestors(flag, path); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return unsafef("%s is a symlink: not written through (remove it, or choose another name)", label(flag, path))
		case !fi.Mode().IsRegular():
			return unsafef("%s is not a regular file (%s)", label(flag, path), fi.Mode().Type())
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", label(flag, path), err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var tmp string
	var fd int
	for i := 0; ; i++ {
		var r [6]byte
		if _, err := rand.Read(r[:]); err != nil {
			return fmt.Errorf("%s: %w", label(flag, path), err)
		}
		tmp = filepath.Join(dir, "."+base+"."+hex.EncodeToString(r[:])+".tmp")
		fd, err = unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || i > 8 {
			return fmt.Errorf("%s: %w", label(flag, path), &os.PathError{Op: "open", Path: tmp, Err: err})
		}
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("%s: %w", label(flag, path), err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm.Perm()); err != nil { // the umask took bits off the open's mode
		return err
	}
	// Without the sync a crash after the rename can leave an empty file
	// where the last good one was.
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
