package suite

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 49 U24: --out=/proc/p2pout said "has 0 KiB free; the record … needs
// at least", and a read-only 64 KiB tmpfs "has 64 KiB free": both blamed
// space. Each now names its real cause, in one line, as a usage error.
func TestCheckRoomNamesTheRealCause(t *testing.T) {
	p := &Plan{Opts: &Options{Out: "/proc/p2pout"}}
	err := p.CheckRoom()
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "stores no files") || strings.Contains(err.Error(), "KiB free") {
		t.Errorf("--out=/proc/p2pout: %v", err)
	}
	// A read-only mount (as statfs reports one), with room to spare.
	st := unix.Statfs_t{Flags: unix.ST_RDONLY, Blocks: 16, Bavail: 16, Bsize: 4096}
	err = outFileSystem("/ro/out", "/ro", &st)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "read-only file system") || strings.Contains(err.Error(), "\n") {
		t.Errorf("read-only: %v", err)
	}
	// A writable disk is left to the space check.
	p = &Plan{Opts: &Options{Out: filepath.Join(t.TempDir(), "out")}}
	if err := p.CheckRoom(); err != nil {
		t.Errorf("a writable temporary folder: %v", err)
	}
}
