package rank

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"p2patomics/internal/inject"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
	"p2patomics/rank/host"
	"p2patomics/wire"
)

// unhandled lists the wire request types hs has no handler for; exit is
// serve's own (it ends the loop after its reply).
func unhandled(hs map[wire.Type]handler) []wire.Type {
	var miss []wire.Type
	for _, t := range wire.Requests() {
		if t != wire.TExit && hs[t] == nil {
			miss = append(miss, t)
		}
	}
	return miss
}

// Every request type the protocol names has a handler; a table with one
// taken out must be reported.
func TestEveryRequestHasAHandler(t *testing.T) {
	if miss := unhandled(handlers); len(miss) != 0 {
		t.Errorf("wire request types with no handler in rank.handlers: %v", miss)
	}
	less := maps.Clone(handlers)
	delete(less, wire.TTrace)
	if miss := unhandled(less); !slices.Equal(miss, []wire.Type{wire.TTrace}) {
		t.Errorf("trace taken out of the table: reported %v", miss)
	}
}

// trusting is a backend that checks no range: it records what reaches it
// and touches no memory, as a GPU backend hands an address to the driver
// unchecked (the host backend checks again, which hid a missing rank check
// from TestOutOfRangeRequests). Allocation and the rest are the host's.
type trusting struct {
	backend.Backend
	calls []string
}

func (b *trusting) Launch(k kernels.Kernel, _, _ uint32, _ []uint64) (backend.LaunchResult, error) {
	b.calls = append(b.calls, "launch "+k.Name)
	return backend.LaunchResult{Method: "wall"}, nil
}

func (b *trusting) Read(_ backend.Buffer, _ uint64, _ []byte) error {
	b.calls = append(b.calls, "read")
	return nil
}

func (b *trusting) Write(_ backend.Buffer, _ uint64, _ []byte) error {
	b.calls = append(b.calls, "write")
	return nil
}

func (b *trusting) Copy(_ backend.Buffer, _ uint64, _ backend.Buffer, _ uint64, _ uint64) (backend.LaunchResult, error) {
	b.calls = append(b.calls, "copy")
	return backend.LaunchResult{Method: "wall"}, nil
}

// The rank refuses every request that names bytes outside a buffer before
// its backend sees it: a GPU backend would pass the address on. With the
// rank's own checks removed (launchArgs' pointer check, read's, write's,
// copy's, sum's), the trusting backend records the request and this fails.
func TestRankChecksEveryRange(t *testing.T) {
	host, err := backend.New(host.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.Open(backend.Config{Rank: 0, Ranks: 1}); err != nil {
		t.Fatal(err)
	}
	be := &trusting{Backend: host}
	s := &server{sock: -1, be: be, bufs: map[int]backend.Buffer{}, next: 1, ranks: 1}
	defer s.freeAll()
	req := func(typ wire.Type, body any) error {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		_, fds, err := s.handle(&wire.Msg{Type: typ, Body: raw})
		closeFds(fds)
		return err
	}
	if err := req(wire.TAlloc, wire.Alloc{Kind: "memfd", Size: 4096}); err != nil {
		t.Fatal(err)
	}
	fill := func(dst uint64) wire.Launch { // fill_u64_plain_dev: dst, value, n, block, nthreads, wit, nonce
		v := func(x uint64) wire.Arg { return wire.Arg{Buf: -1, Val: x} }
		return wire.Launch{Kernel: "fill_u64_plain_dev", Grid: 1, Block: 1,
			Args: []wire.Arg{{Buf: 1, Off: dst}, v(7), v(1), v(1), v(1), {Buf: 1, Off: 16}, v(1)}}
	}
	bad := []struct {
		name string
		typ  wire.Type
		body any
	}{
		{"launch pointer at the end", wire.TLaunch, fill(4096)},
		{"launch pointer wraps", wire.TLaunch, fill(1<<64 - 8)},
		{"read past the end", wire.TRead, wire.Read{Buf: 1, Off: 1<<64 - 1, Len: 1}},
		{"read over MaxData", wire.TRead, wire.Read{Buf: 1, Len: wire.MaxData + 1}},
		{"write past the end", wire.TWrite, wire.Write{Buf: 1, Off: 4090, Data: make([]byte, 16)}},
		{"copy offset wraps", wire.TCopy, wire.Copy{Dst: 1, DstOff: 1<<64 - 8, Src: 1, N: 16}},
		{"sum count wraps", wire.TSum, wire.Sum{Buf: 1, N: 1 << 61, Width: 64}},
	}
	for _, b := range bad {
		be.calls = nil
		if err := req(b.typ, b.body); err == nil || len(be.calls) != 0 {
			t.Errorf("%s: error %v, and the backend saw %v (want an error and no call)", b.name, err, be.calls)
		}
	}
	// The control: in range, each request reaches the backend.
	be.calls = nil
	for _, r := range []struct {
		typ  wire.Type
		body any
	}{
		{wire.TLaunch, fill(4088)}, {wire.TRead, wire.Read{Buf: 1, Off: 4095, Len: 1}},
		{wire.TWrite, wire.Write{Buf: 1, Off: 4080, Data: make([]byte, 16)}},
		{wire.TCopy, wire.Copy{Dst: 1, DstOff: 4080, Src: 1, N: 16}},
	} {
		if err := req(r.typ, r.body); err != nil {
			t.Errorf("%s in range: %v", r.typ, err)
		}
	}
	if want := []string{"launch fill_u64_plain_dev", "read", "write", "copy"}; !slices.Equal(be.calls, want) {
		t.Errorf("in-range requests reached the backend as %v, want %v", be.calls, want)
	}
}

// A speed rule the backend cannot apply is refused at the hello, before
// the backend opens (with --backend=auto the parent could not tell);
// on a backend that applies it the hello goes on.
func TestHelloRefusesSpeedRuleItCannotApply(t *testing.T) {
	defer inject.Set(nil)
	for _, tc := range []struct {
		backend string
		refused bool
	}{{"hsa", true}, {"hip", true}, {host.Name, false}} {
		s := &server{sock: -1, bufs: map[int]backend.Buffer{}, next: 1}
		set := wire.DefaultSettings
		set.Inject = []string{"copy-times:2"}
		_, _, err := s.hello(wire.Hello{Version: wire.Version, Backend: tc.backend, Ranks: 1, Settings: set}, nil)
		if got := errors.Is(err, inject.ErrNotSupported); got != tc.refused {
			t.Errorf("%s: hello said %v, want refused %v", tc.backend, err, tc.refused)
		}
		if s.be != nil {
			s.be.Close()
		}
	}
}
