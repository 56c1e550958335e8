package stream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReserveFile holds the final results.json's space while the run goes on.
const ReserveFile = ".p2patomics-reserve"

// Reserve is the disk reserve: a full --out must not cost the record.
// results.json keeps Need bytes of room on Dir's file system (twice the
// record's estimated final size: an atomic rewrite holds the old file and
// the new one at once), and evidence is what gives way. On RunStarted it
// takes that room in a file (up to half the free space), so nothing the
// run writes meanwhile (evidence, logs, another process) can take it; on
// RunDone it gives the room back just before the record sink, fed after
// it, writes the final record. Room says whether the room is still free;
// once it is not it never is again in this run (a folder written later
// would take what the record needs), and that is said once on Stderr.
type Reserve struct {
	Dir    string
	Need   uint64
	Stderr io.Writer
	// Free is the bytes free to an unprivileged writer on Dir's file
	// system (statfs when nil).
	Free func(dir string) (uint64, error)

	mu       sync.Mutex
	full     atomic.Bool
	reserved atomic.Uint64
}

// Handle takes the room on RunStarted and gives it back on RunDone.
func (r *Reserve) Handle(e Event) {
	switch e.(type) {
	case RunStarted:
		r.take()
	case RunDone:
		r.Release()
	}
}

func (r *Reserve) free() (uint64, error) {
	if r.Free != nil {
		return r.Free(r.Dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// take fills the reserve file with the record's room, or half the free
// space when that is less.
func (r *Reserve) take() {
	r.mu.Lock()
	defer r.mu.Unlock()
	free, err := r.free()
	if err != nil {
		return
	}
	size := min(r.Need, free/2)
	f, err := os.OpenFile(filepath.Join(r.Dir, ReserveFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		// No fallocate here (or no space): zeros, as far as they go.
		if _, err = f.Write(make([]byte, size)); err != nil {
			if fi, _ := f.Stat(); fi != nil {
				size = uint64(fi.Size())
			}
		}
	}
	r.reserved.Store(size)
}

// Release gives the room back (removes the reserve file).
func (r *Reserve) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved.Store(0)
	if r.Dir != "" {
		os.Remove(filepath.Join(r.Dir, ReserveFile))
	}
}

// Reserved is the reserve file's size now (0 when released).
func (r *Reserve) Reserved() uint64 { return r.reserved.Load() }

// Room reports whether Dir still has the record's room free: what the
// reserve holds counts as kept, and the checkpoints need 64 KiB besides.
func (r *Reserve) Room() bool {
	if r.full.Load() {
		return false
	}
	free, err := r.free()
	if err != nil {
		return true // not knowable: the writes will tell
	}
	need := 64<<10 + r.Need - min(r.reserved.Load(), r.Need)
	if free >= need {
		return true
	}
	// The room kept is twice the record's estimated final size (an
	// atomic rewrite holds two copies), not results.json's size: the line
	// gives both, so "keeps 1490 KiB" never reads as a 1490 KiB file on
	// a 500 KiB disk (issue 49 U15).
	now := "not written yet"
	if fi, err := os.Stat(filepath.Join(r.Dir, "results.json")); err == nil {
		now = fmt.Sprintf("%d KiB now", fi.Size()>>10)
	}
	r.MarkFull(fmt.Sprintf("%d KiB free, under the %d KiB kept for the final results.json (%s; room for two copies of its estimated final size)", free>>10, need>>10, now))
	return false
}

// MarkFull records that Dir has no room left (said once on Stderr).
func (r *Reserve) MarkFull(why string) {
	if r.full.CompareAndSwap(false, true) && r.Stderr != nil {
		fmt.Fprintf(r.Stderr, "p2patomics: --out is nearly full (%s): case folders are no longer written, every result still is\n", why)
	}
}

// Full reports whether MarkFull was called.
func (r *Reserve) Full() bool { return r.full.Load() }

// NoSpace reports whether err is a write that failed for want of space (a
// full disk, a quota, a file-size limit).
func NoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}
