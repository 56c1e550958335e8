package wire

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Issue 18 item 13: a zero-length packet is a malformed message, not the
// peer's close.
func TestZeroLengthPacketIsNotClose(t *testing.T) {
	a, b := pair(t)
	if err := SendRaw(a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Recv(b, time.Now().Add(time.Second)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("zero-length packet: %v, want ErrMalformed", err)
	}
	if err := SendRaw(a, nil); err != nil {
		t.Fatal(err)
	}
	unix.Close(a)
	// Queued data is still read first; then the close.
	if _, err := Recv(b, time.Now().Add(time.Second)); err == nil {
		t.Fatal("no error for a zero-length packet before the close")
	}
	if _, err := Recv(b, time.Now().Add(time.Second)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the peer closed: %v, want ErrClosed", err)
	}
}

// FuzzRecv: whatever bytes arrive as one packet, Recv returns a message or
// an error wrapping ErrMalformed, never panics, and a message it returns
// decodes or errors.
func FuzzRecv(f *testing.F) {
	hdr := func(t Type, seq uint32, body string) []byte {
		b := make([]byte, headerLen, headerLen+len(body))
		binary.LittleEndian.PutUint32(b, magic)
		binary.LittleEndian.PutUint16(b[4:], Version)
		binary.LittleEndian.PutUint16(b[6:], uint16(t))
		binary.LittleEndian.PutUint32(b[8:], seq)
		binary.LittleEndian.PutUint32(b[12:], uint32(len(body)))
		return append(b, body...)
	}
	f.Add(hdr(TAlloc, 1, `{"kind":"memfd","size":4096}`))
	f.Add(hdr(TReply, 2, `{"ok":false,"error":"x"}`))
	f.Add(hdr(TRead, 3, `{"buf":1,"off":18446744073709551608,"len":8}`))
	f.Add([]byte("P2PA\x01\x00garbage"))
	f.Add([]byte{})
	f.Add(hdr(TReply, 4, "")[:headerLen-1])
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if len(pkt) > MaxPacket {
			return
		}
		a, b := pair(t)
		if err := SendRaw(a, pkt); err != nil {
			t.Skip(err)
		}
		m, err := Recv(b, time.Now().Add(time.Second))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		defer m.CloseFds()
		var r Reply
		_ = m.Decode(&r)
	})
}
