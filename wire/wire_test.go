package wire

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func pair(t *testing.T) (int, int) {
	t.Helper()
	a, b, err := Socketpair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(a); unix.Close(b) })
	return a, b
}

func TestRoundTripWithFd(t *testing.T) {
	a, b := pair(t)
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	if err := Send(a, TAlloc, 7, Alloc{Kind: "memfd", Size: 42}, int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	m, err := Recv(b, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer m.CloseFds()
	var got Alloc
	if err := m.Decode(&got); err != nil || got.Size != 42 || m.Seq != 7 || m.Type != TAlloc {
		t.Fatalf("got %+v %v seq %d type %v", got, err, m.Seq, m.Type)
	}
	if len(m.Fds) != 1 {
		t.Fatalf("fds: %v", m.Fds)
	}
	buf := make([]byte, 5)
	if n, _ := unix.Pread(m.Fds[0], buf, 0); n != 5 || string(buf) != "hello" {
		t.Fatalf("the fd that arrived reads %q", buf[:n])
	}
}

func TestMalformed(t *testing.T) {
	hdr := func(magic uint32, version, typ uint16, ln uint32, body string) []byte {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint32(b, magic)
		binary.LittleEndian.PutUint16(b[4:], version)
		binary.LittleEndian.PutUint16(b[6:], typ)
		binary.LittleEndian.PutUint32(b[12:], ln)
		return append(b, body...)
	}
	cases := map[string]struct {
		pkt  []byte
		want string
	}{
		"short":       {[]byte("P2PA\x01\x00garbage"), "shorter than the 16-byte header"},
		"bad magic":   {hdr(0xdeadbeef, Version, 1, 0, ""), "bad magic"},
		"bad version": {hdr(magic, 9, 1, 0, ""), "protocol version 9"},
		"length":      {hdr(magic, Version, 1, 10, "{}"), "header says 10 body bytes, packet has 2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t)
			if err := SendRaw(a, c.pkt); err != nil {
				t.Fatal(err)
			}
			_, err := Recv(b, time.Now().Add(time.Second))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrMalformed mentioning %q", err, c.want)
			}
		})
	}
	t.Run("bad json", func(t *testing.T) {
		a, b := pair(t)
		SendRaw(a, hdr(magic, Version, uint16(TReply), 5, "{oops"))
		m, err := Recv(b, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var r Reply
		if err := m.Decode(&r); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "7b6f6f7073") {
			t.Fatalf("decode err = %v, want the bytes described in hex", err)
		}
	})
}

func TestDeadlineAndClose(t *testing.T) {
	a, b := pair(t)
	t0 := time.Now()
	if _, err := Recv(b, time.Now().Add(50*time.Millisecond)); !errors.Is(err, ErrDeadline) {
		t.Fatalf("err = %v, want ErrDeadline", err)
	}
	if d := time.Since(t0); d < 40*time.Millisecond || d > 2*time.Second {
		t.Fatalf("deadline took %v", d)
	}
	unix.Close(a)
	if _, err := Recv(b, time.Now().Add(time.Second)); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	x, y, _ := Socketpair()
	defer unix.Close(x)
	defer unix.Close(y)
	for i := 0; i < b.N; i++ {
		Send(x, TRead, uint32(i), Read{Buf: 1, Len: 8})
		m, _ := Recv(y, time.Time{})
		Send(y, TReply, m.Seq, Reply{OK: true})
		Recv(x, time.Time{})
	}
}

// A reply queued before the wait begins is read even when the deadline
// has already passed (a suite stopped past its deadline while the rank
// answered): the socket is polled once before the deadline is judged.
// Fails with the deadline checked before the poll.
func TestRecvReadsQueuedReplyPastDeadline(t *testing.T) {
	a, b := pair(t)
	if err := Send(a, TReply, 9, Reply{OK: true}); err != nil {
		t.Fatal(err)
	}
	m, err := Recv(b, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatalf("a queued reply past the deadline: %v", err)
	}
	if m.Seq != 9 || m.Type != TReply {
		t.Fatalf("got %s %d", m.Type, m.Seq)
	}
	// Nothing queued: the passed deadline is judged after the one poll.
	if _, err := Recv(b, time.Now().Add(-time.Hour)); !errors.Is(err, ErrDeadline) {
		t.Fatalf("an empty socket past the deadline: %v, want ErrDeadline", err)
	}
}
