package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 18 item 11: GPU locks live in a private folder, are never opened
// through a symlink, and a busy one names its holder.
func TestDeviceLocksArePrivate(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir, err := LockDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("lock folder %s: %v %v", dir, fi.Mode(), err)
	}
	victim := filepath.Join(xdg, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	planted := filepath.Join(dir, "gpu-planted.lock")
	os.Symlink(victim, planted)
	if err := acquire(planted, "planted", time.Now()); err == nil {
		release(planted)
		t.Fatal("a lock path planted as a symlink was opened")
	}
	busy := filepath.Join(dir, "gpu-busy.lock")
	holder := exec.Command("flock", "-x", busy, "-c", "echo locked; sleep 30")
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Skip("flock(1):", err)
	}
	defer holder.Process.Kill()
	if _, err := stdout.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	err = acquire(busy, "GPU-busy", time.Now().Add(200*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(holder.Process.Pid)) {
		t.Fatalf("busy lock: %v, want the holder's pid %d named", err, holder.Process.Pid)
	}
	// A lock folder others can write is refused.
	os.Chmod(dir, 0o777)
	if _, err := LockDir(); err == nil || !strings.Contains(err.Error(), "open to other users") {
		t.Fatalf("a 0777 lock folder: %v", err)
	}
}
