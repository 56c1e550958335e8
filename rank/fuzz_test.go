package rank

import (
	"encoding/json"
	"testing"

	"golang.org/x/sys/unix"

	"p2patomics/rank/backend"
	"p2patomics/rank/host"
	"p2patomics/wire"
)

// FuzzHandle feeds the rank's request handling any request type and body
// on an opened host backend holding one 4 KiB buffer: every request gets a
// result or an error, never a panic (issue 18: an offset near 2^64 panicked
// a rank). Canary, exit and hello are left out: the first two end the
// process on purpose, and hello is the one request before the backend.
func FuzzHandle(f *testing.F) {
	seeds := []struct {
		t    wire.Type
		body string
	}{
		{wire.TRead, `{"buf":1,"off":0,"len":8}`},
		{wire.TRead, `{"buf":1,"off":18446744073709551608,"len":8}`},
		{wire.TWrite, `{"buf":1,"off":4090,"data":"AAAAAAAAAAA="}`},
		{wire.TSum, `{"buf":1,"off":8,"n":2305843009213693951,"width":64}`},
		{wire.TCopy, `{"dst":1,"dst_off":0,"src":1,"src_off":18446744073709551600,"n":16}`},
		{wire.TFree, `{"buf":1}`},
		{wire.TMemInfo, ``},
		{wire.TLaunch, `{"kernel":"add_u64_relaxed_sys","grid":1,"block":1,"cpu":{"target":{"buf":1,"off":18446744073709551608},"threads":1,"iters":1}}`},
		{wire.TAlloc, `{"kind":"memfd","size":0}`},
	}
	for _, s := range seeds {
		f.Add(uint16(s.t), []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, typ uint16, body []byte) {
		switch wire.Type(typ) {
		case wire.TCanary, wire.TExit, wire.THello:
			return
		}
		be, err := backend.New(host.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := be.Open(backend.Config{Rank: 0, Ranks: 2}); err != nil {
			t.Fatal(err)
		}
		s := &server{sock: -1, be: be, bufs: map[int]backend.Buffer{}, next: 1, ranks: 2}
		defer s.freeAll()
		raw, _ := json.Marshal(wire.Alloc{Kind: "memfd", Size: 4096})
		if _, fds, err := s.handle(&wire.Msg{Type: wire.TAlloc, Body: raw}); err != nil {
			t.Fatal(err)
		} else {
			closeFds(fds)
		}
		m := &wire.Msg{Type: wire.Type(typ), Body: body}
		_, fds, _ := s.handle(m)
		closeFds(fds)
	})
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
