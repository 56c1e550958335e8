package harness

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/internal/device"
)

// TestNeedPeer: the case skips with the rank's own reason when a pair of
// devices lacks access (or atomics, when asked), and reads nothing but the
// typed answer: ranks on one device need nothing.
func TestNeedPeer(t *testing.T) {
	info := func(self int, access, atomics device.Cap) device.Info {
		return device.Info{Caps: device.Caps{Peers: device.AllPeers(self, 2, access, atomics)}}
	}
	yes, noAtomics, noAccess := device.Yes("fine"), device.No("no atomics here"), device.No("no access here")
	mk := func(i0, i1 device.Info, d0, d1 int) *Ctx {
		return &Ctx{W: &World{Infos: []device.Info{i0, i1}, Procs: []*Proc{{Device: d0}, {Device: d1}}}}
	}
	if err := mk(info(0, yes, yes), info(1, yes, yes), 0, 1).NeedPeer(true); err != nil {
		t.Fatalf("every answer yes: %v", err)
	}
	err := mk(info(0, yes, noAtomics), info(1, yes, yes), 0, 1).NeedPeer(true)
	if se, ok := err.(*SkipError); !ok || se.Reason != "no atomics here" {
		t.Fatalf("atomics refused must skip with the rank's reason, got %v", err)
	}
	if err := mk(info(0, yes, noAtomics), info(1, yes, yes), 0, 1).NeedPeer(false); err != nil {
		t.Fatalf("no atomics needed: %v", err)
	}
	if err := mk(info(0, yes, yes), info(1, noAccess, noAccess), 0, 1).NeedPeer(false); err == nil || err.Error() != "no access here" {
		t.Fatalf("rank 1 refused access: want its reason, got %v", err)
	}
	if err := mk(info(0, noAccess, noAccess), info(0, noAccess, noAccess), 0, 0).NeedPeer(true); err != nil {
		t.Fatalf("ranks on one device need nothing: %v", err)
	}
	if err := mk(device.Info{}, device.Info{}, 0, 1).NeedPeer(false); err == nil || !strings.Contains(err.Error(), "reported nothing about device 1") {
		t.Fatalf("a backend that says nothing about a peer must skip saying so, got %v", err)
	}
}

// TestNeedHostAtomics: a rank whose backend refuses host atomics skips with
// its reason; yes everywhere passes.
func TestNeedHostAtomics(t *testing.T) {
	info := func(c device.Cap) device.Info { return device.Info{Caps: device.Caps{HostAtomics: c}} }
	mk := func(i0, i1 device.Info) *Ctx {
		return &Ctx{W: &World{Infos: []device.Info{i0, i1}, Procs: []*Proc{{Device: 0}, {Device: 1}}}}
	}
	if err := mk(info(device.Yes("ok")), info(device.Yes("ok"))).NeedHostAtomics(); err != nil {
		t.Fatalf("yes on both: %v", err)
	}
	err := mk(info(device.Yes("ok")), info(device.No("device 1: nope"))).NeedHostAtomics()
	if se, ok := err.(*SkipError); !ok || se.Reason != "device 1: nope" {
		t.Fatalf("a refusal must skip with its reason, got %v", err)
	}
}

// TestCloseLater: the suite's copies of exported fds are closed, off the
// caller's path, and -1 entries are ignored.
func TestCloseLater(t *testing.T) {
	var fds []int
	for range 3 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(p[1])
		fds = append(fds, p[0])
	}
	closeLater(append(fds, -1)...)
	deadline := time.Now().Add(2 * time.Second)
	for _, fd := range fds {
		for {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == unix.EBADF {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fd %d still open", fd)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
