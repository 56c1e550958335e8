package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockDir is where the per-GPU locks live: $XDG_RUNTIME_DIR/p2patomics, or
// $TMPDIR/p2patomics-<uid>; either is created 0700 and must be a real
// folder owned by this user with no access for others. A lock file in a
// shared folder could be planted as a symlink (the suite would open some
// other file) or held by anyone to block every GPU suite. Suites of two
// users therefore do not exclude each other on one GPU; the GPU's compute
// mode is the guard across users.
func LockDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("p2patomics-%d", os.Getuid()))
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		dir = filepath.Join(x, "p2patomics")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("lock folder %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("lock folder %s: %w", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", fmt.Errorf("lock folder %s is not a folder (a symlink?): remove it", dir)
	case int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("lock folder %s belongs to uid %d, not to this user (%d): remove it", dir, st.Uid, os.Getuid())
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("lock folder %s is open to other users (mode %#o): remove it", dir, st.Mode&0o777)
	}
	return dir, nil
}

// openLock opens (creating) a lock file without following a symlink.
func openLock(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("device lock %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// FlockHolder finds the pid holding a flock on f in /proc/locks
// ("1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"); 0 if unknown or if
// only this process holds it.
func FlockHolder(f *os.File) int {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return 0
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		// A blocked waiter's line has "->" after the index: 6 fields in
		// a different place, so the FLOCK test skips it.
		if len(fs) >= 6 && fs[1] == "FLOCK" && fs[5] == want {
			if pid, err := strconv.Atoi(fs[4]); err == nil && pid != os.Getpid() {
				return pid
			}
		}
	}
	return 0
}
