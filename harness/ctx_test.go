package harness

import (
	"errors"
	"fmt"
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

// TestLaunchArgsStrict: a launch whose argument names do not match the
// manifest fails before anything is sent, in one line naming the kernel
// and the argument; a complete launch orders its arguments as the manifest.
func TestLaunchArgsStrict(t *testing.T) {
	const k = "add_u64_relaxed_sys" // target, out, operand, iters, block, salt
	good := func() map[string]Arg {
		return map[string]Arg{"target": P(3, 8), "out": Null(), "operand": V(1), "iters": V(2), "block": V(3), "salt": V(4)}
	}
	w, err := Launch{Kernel: k, Args: good()}.wire()
	if err != nil {
		t.Fatalf("complete launch: %v", err)
	}
	if len(w.Args) != 6 || w.Args[0] != P(3, 8) || w.Args[1] != Null() || w.Args[5] != V(4) {
		t.Fatalf("arguments out of manifest order: %+v", w.Args)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]Arg)
		want string
	}{
		{"misspelled pointer", func(a map[string]Arg) { a["tagret"] = a["target"]; delete(a, "target") }, `kernel add_u64_relaxed_sys has no argument "tagret"`},
		{"missing pointer", func(a map[string]Arg) { delete(a, "out") }, "kernel add_u64_relaxed_sys: argument out not given"},
		{"missing value", func(a map[string]Arg) { delete(a, "iters") }, "kernel add_u64_relaxed_sys: argument iters not given"},
		{"unknown", func(a map[string]Arg) { a["nthreads"] = V(1) }, `kernel add_u64_relaxed_sys has no argument "nthreads"`},
		{"pointer given a value", func(a map[string]Arg) { a["target"] = V(0x1000) }, "kernel add_u64_relaxed_sys: pointer argument target given the value 0x1000"},
		{"value given a buffer", func(a map[string]Arg) { a["operand"] = P(1, 0) }, "kernel add_u64_relaxed_sys: value argument operand given buffer 1"},
	} {
		a := good()
		c.edit(a)
		_, err := Launch{Kernel: k, Args: a}.wire()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want one line starting %q, got %v", c.name, c.want, err)
		}
	}
	if _, err := (Launch{Kernel: "add_u64_relaxed_system", Args: good()}).wire(); err == nil || !strings.Contains(err.Error(), `kernel "add_u64_relaxed_system" is not in the manifest`) {
		t.Errorf("unknown kernel: %v", err)
	}
}

// TestWorstErr: of the launches' errors, the one that explains the most
// wins whatever the order: a GPU fault over a death, a death over a
// timeout, a timeout over a plain error, any error over none.
func TestWorstErr(t *testing.T) {
	fault := &RemoteError{Rank: 1, What: "launch", Msg: "fault", Fault: &device.Fault{Vendor: "nvidia", Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}}
	remote := &RemoteError{Rank: 0, What: "launch", Msg: "bad argument"}
	dead := &DeadError{Rank: 0, What: "launch"}
	timeout := &TimeoutError{Rank: 1, What: "launch"}
	ranked := []error{fault, dead, timeout, remote} // most explanatory first
	for i, want := range ranked {
		lesser := append([]error{nil}, ranked[i+1:]...)
		for rot := range lesser {
			errs := append(append([]error{}, lesser[rot:]...), lesser[:rot]...)
			errs = append(errs[:rot:rot], append([]error{want}, errs[rot:]...)...)
			if got := worstErr(errs); got != want {
				t.Errorf("worstErr(%v) = %v, want %v", errs, got, want)
			}
		}
	}
	if got := worstErr([]error{nil, nil}); got != nil {
		t.Errorf("no errors: %v", got)
	}
	if got := worstErr([]error{fmt.Errorf("wrapped: %w", dead), timeout}); !errors.Is(got, dead) {
		t.Errorf("a wrapped death must still beat a timeout, got %v", got)
	}
}
