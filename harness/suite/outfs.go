package suite

import "golang.org/x/sys/unix"

// outFileSystem refuses an --out whose file system (st, found at dir, the
// nearest folder of it that exists) cannot hold any record whatever its
// free space: a read-only mount, or one that stores no files (/proc,
// /sys: 0 blocks). CheckRoom asks it before the space: "has 0 KiB free"
// blamed space for --out=/proc/p2pout, and "has 64 KiB free" for a
// read-only tmpfs (issue 49 U24).
func outFileSystem(out, dir string, st *unix.Statfs_t) error {
	switch {
	case st.Flags&unix.ST_RDONLY != 0:
		return usagef("--out=%s is on a read-only file system (%s): give a folder on a writable one", quote(out), quote(dir))
	case st.Blocks == 0:
		return usagef("--out=%s is on a file system that stores no files (%s, type %#x, like /proc or /sys): give a folder on a disk", quote(out), quote(dir), st.Type)
	}
	return nil
}
