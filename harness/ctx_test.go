package harness

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestNeedPeer(t *testing.T) {
	info := func(peer string, atomic string) map[string]any {
		return map[string]any{"vendor": "nvidia", "attrs": map[string]any{
			"peer." + peer + ".can_access": "1", "peer." + peer + ".access_supported": "1", "peer." + peer + ".native_atomic": atomic}}
	}
	mk := func(i0, i1 map[string]any, d0, d1 int) *Ctx {
		return &Ctx{W: &World{Infos: []map[string]any{i0, i1}, Procs: []*Proc{{Device: d0}, {Device: d1}}}}
	}
	if err := mk(info("1", "1"), info("0", "1"), 0, 1).NeedPeer(true); err != nil {
		t.Fatalf("all attributes 1: %v", err)
	}
	err := mk(info("1", "0"), info("0", "1"), 0, 1).NeedPeer(true)
	if se, ok := err.(*SkipError); !ok || !strings.Contains(se.Reason, "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED") {
		t.Fatalf("native atomics 0 must skip naming the attribute, got %v", err)
	}
	if err := mk(info("1", "0"), info("0", "1"), 0, 1).NeedPeer(false); err != nil {
		t.Fatalf("no atomics needed: %v", err)
	}
	noPeer := map[string]any{"vendor": "nvidia", "attrs": map[string]any{}}
	if err := mk(noPeer, noPeer, 0, 1).NeedPeer(false); err == nil || !strings.Contains(err.Error(), "cuDeviceCanAccessPeer") {
		t.Fatalf("missing peer access must skip naming cuDeviceCanAccessPeer, got %v", err)
	}
	if err := mk(noPeer, noPeer, 0, 0).NeedPeer(true); err != nil {
		t.Fatalf("ranks on one device need nothing: %v", err)
	}
	host := map[string]any{"vendor": "host"}
	if err := mk(host, host, 0, 1).NeedPeer(true); err != nil {
		t.Fatalf("host: %v", err)
	}
}

// TestNeedHostAtomics: an NVIDIA rank whose device lacks host-native
// atomics skips naming the attribute; 1 everywhere passes; host passes.
func TestNeedHostAtomics(t *testing.T) {
	info := func(v string) map[string]any {
		return map[string]any{"vendor": "nvidia", "attrs": map[string]any{"host_native_atomic_supported": v}}
	}
	mk := func(i0, i1 map[string]any) *Ctx {
		return &Ctx{W: &World{Infos: []map[string]any{i0, i1}, Procs: []*Proc{{Device: 0}, {Device: 1}}}}
	}
	if err := mk(info("1"), info("1")).NeedHostAtomics(); err != nil {
		t.Fatalf("attribute 1 on both: %v", err)
	}
	err := mk(info("1"), info("0")).NeedHostAtomics()
	if se, ok := err.(*SkipError); !ok || !strings.Contains(se.Reason, "device 1: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is \"0\"") {
		t.Fatalf("attribute 0 must skip naming it and the device, got %v", err)
	}
	host := map[string]any{"vendor": "host"}
	if err := mk(host, host).NeedHostAtomics(); err != nil {
		t.Fatalf("host: %v", err)
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
