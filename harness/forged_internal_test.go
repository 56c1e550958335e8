package harness

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/wire"
)

// fakeRank is the suite's end of a socketpair whose other end the test
// answers by hand: a rank that misbehaves in ways a real one does not.
func fakeRank(t *testing.T, answer func(req wire.Msg) (body any, fds []int)) *Proc {
	t.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Rank: 1, sock: sp[0], done: make(chan struct{}), Stderr: &tail{}, Stdout: &tail{}}
	go func() {
		defer unix.Close(sp[1])
		for {
			m, err := wire.Recv(sp[1], time.Now().Add(time.Minute))
			if err != nil {
				return
			}
			body, fds := answer(m)
			if err := wire.Send(sp[1], wire.TReply, m.Seq, body, fds...); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { unix.Close(sp[0]) })
	return p
}

func openFds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Issue 26 item 11: a read answered with fewer bytes than asked is the
// rank's protocol error (it panicked Ctx.U64: index out of range), and an
// fd attached to a reply that carries none is closed, not kept. Both fail
// at a44624c: the first panics, the second leaves 4 fds open.
func TestForgedRepliesAreCaught(t *testing.T) {
	short := fakeRank(t, func(wire.Msg) (any, []int) {
		return wire.Reply{OK: true, Result: []byte(`{"x":"AAAA"}`)}, nil
	})
	c := &Ctx{W: &World{Procs: []*Proc{short, short}}, Deadline: time.Now().Add(10 * time.Second)}
	_, err := c.U64(1, 1, 0)
	var pe *ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "answered with 0") {
		t.Fatalf("short read reply: got %v, want a protocol error", err)
	}

	var sent []int
	leaky := fakeRank(t, func(wire.Msg) (any, []int) {
		fd, err := unix.MemfdCreate("leak", unix.MFD_CLOEXEC)
		if err != nil {
			t.Error(err)
			return wire.Reply{OK: true}, nil
		}
		sent = append(sent, fd)
		return wire.Reply{OK: true, Result: []byte(`{"bufs":0,"fds":3,"free":1}`)}, []int{fd}
	})
	c.W.Procs[1] = leaky
	before := openFds(t)
	for range 4 {
		if _, err := memInfo(c, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, fd := range sent {
		unix.Close(fd) // the test's own copies
	}
	if after := openFds(t); after > before {
		t.Fatalf("%d fds attached to meminfo replies stayed open in the suite", after-before)
	}
}
