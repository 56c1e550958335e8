package rank

import (
	"fmt"
	"strings"
	"time"

	"p2patomics/internal/inject"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
	"p2patomics/trace"
	"p2patomics/wire"
)

// handler answers one request: its result (JSON in the reply), the fds to
// pass back with it (closed once sent), or an error.
type handler func(s *server, m *wire.Msg) (any, []int, error)

// handlers is every request the rank serves but exit, which serve answers
// itself because it ends the loop. TestEveryRequestHasAHandler fails for a
// wire request type missing here.
var handlers = map[wire.Type]handler{
	wire.THello:   decoded((*server).hello),  // the one request before the backend
	wire.TCanary:  decoded((*server).canary), // canaries test the harness, backend or not
	wire.TAlloc:   opened(decoded((*server).alloc)),
	wire.TImport:  opened(decoded((*server).importBuf)),
	wire.TLaunch:  opened(decoded((*server).launch)),
	wire.TRead:    opened(decoded((*server).read)),
	wire.TWrite:   opened(decoded((*server).write)),
	wire.TSum:     opened(decoded((*server).sum)),
	wire.TFree:    opened(decoded((*server).free)),
	wire.TCopy:    opened(decoded((*server).copy)),
	wire.TMemInfo: opened((*server).memInfo),
	wire.TFdInfo:  opened((*server).fdInfo),
	wire.TTrace:   opened((*server).traceReply),
}

func (s *server) handle(m *wire.Msg) (any, []int, error) {
	h, ok := handlers[m.Type]
	if !ok {
		return nil, nil, fmt.Errorf("%w: unknown request %s", wire.ErrMalformed, m.Type)
	}
	return h(s, m)
}

// decoded is a handler that first decodes the request's body as a Req.
func decoded[Req any](f func(s *server, req Req, m *wire.Msg) (any, []int, error)) handler {
	return func(s *server, m *wire.Msg) (any, []int, error) {
		var req Req
		if err := m.Decode(&req); err != nil {
			return nil, nil, err
		}
		return f(s, req, m)
	}
}

// opened is a handler that needs the backend the hello opened.
func opened(h handler) handler {
	return func(s *server, m *wire.Msg) (any, []int, error) {
		if err := s.needOpen(); err != nil {
			return nil, nil, err
		}
		return h(s, m)
	}
}

func (s *server) canary(c wire.Canary, _ *wire.Msg) (any, []int, error) {
	return nil, nil, canary(s, c.How)
}

// alloc allocates a buffer and exports it; the export's fd, if any, goes
// back with the reply.
func (s *server) alloc(a wire.Alloc, _ *wire.Msg) (any, []int, error) {
	b, exp, err := s.be.Alloc(a.Kind, a.Size)
	if err != nil {
		return nil, nil, err
	}
	r := wire.AllocReply{Buf: s.add(b), Size: exp.Size, Handle: exp.Handle, Meta: exp.Meta}
	var fds []int
	if exp.Fd >= 0 {
		r.HasFd = true
		fds = []int{exp.Fd} // closed after the reply is sent
	}
	return r, fds, nil
}

// importBuf maps a peer's export, from the fd that came with the request
// when it names one.
func (s *server) importBuf(a wire.Import, m *wire.Msg) (any, []int, error) {
	exp := backend.Export{Fd: -1, Handle: a.Handle, Size: a.Size, Meta: a.Meta}
	if a.HasFd {
		if len(m.Fds) != 1 {
			return nil, nil, fmt.Errorf("%w: import names an fd but %d arrived", wire.ErrMalformed, len(m.Fds))
		}
		exp.Fd = m.Fds[0]
		m.Fds = nil // the backend owns it now
	}
	b, err := s.be.Import(a.Kind, exp, a.Grant)
	if err != nil {
		return nil, nil, err
	}
	return wire.BufReply{Buf: s.add(b), Addr: b.Addr()}, nil, nil
}

// launch runs a manifest kernel, with the CPU's share and the clock sampler
// alongside when the request asks, and times it on the shared clock.
func (s *server) launch(l wire.Launch, _ *wire.Msg) (any, []int, error) {
	k, args, err := s.launchArgs(l)
	if err != nil {
		return nil, nil, err
	}
	var cpu func() error
	if l.CPU != nil {
		if cpu, err = s.cpuAtomics(l.CPU); err != nil {
			return nil, nil, err
		}
	}
	var clocks func() *wire.ClockStats
	if l.Clocks {
		clocks = s.sampleClocks()
	}
	t0 := monotonicNs()
	res, dropped, err := s.runKernel(k, l, args)
	t1 := monotonicNs()
	var clk *wire.ClockStats
	if clocks != nil {
		clk = clocks()
	}
	if cpu != nil {
		if cerr := cpu(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return wire.Timing{ElapsedNs: res.Elapsed.Nanoseconds(), Method: res.Method, Clock: clk, StartNs: t0, EndNs: t1, Dropped: dropped}, nil, nil
}

// launchArgs finds the kernel and turns the request's arguments into the
// backend's: values as given, buffers as device addresses. The pointer
// check is the rank's, for every backend: a GPU backend hands the address
// to the driver unchecked (TestRankChecksEveryRange).
func (s *server) launchArgs(l wire.Launch) (kernels.Kernel, []uint64, error) {
	k, ok := kernels.Lookup(l.Kernel)
	if !ok {
		return k, nil, fmt.Errorf("kernel %q is not in the manifest", l.Kernel)
	}
	if len(l.Args) != len(k.Args) {
		return k, nil, fmt.Errorf("kernel %s takes %d arguments, got %d", k.Name, len(k.Args), len(l.Args))
	}
	args := make([]uint64, len(l.Args))
	for i, a := range l.Args {
		if a.Buf < 0 {
			args[i] = a.Val
			continue
		}
		b, err := s.buf(a.Buf)
		if err != nil {
			return k, nil, fmt.Errorf("argument %s: %w", k.Args[i].Name, err)
		}
		if !backend.Within(a.Off, 1, b.Size()) {
			return k, nil, fmt.Errorf("argument %s: offset %d past the %d-byte buffer", k.Args[i].Name, a.Off, b.Size())
		}
		args[i] = b.Addr() + a.Off
	}
	return k, args, nil
}

// runKernel launches k, unless the injector drops it: the driver that
// accepts a launch and does nothing gives success, no work, a timing as a
// fast launch would. The trace says so, so the case's evidence shows which
// launch was dropped, and so does the reply (dropped: the rule), so the
// harness knows which of a case's kernels never ran.
func (s *server) runKernel(k kernels.Kernel, l wire.Launch, args []uint64) (backend.LaunchResult, string, error) {
	if r, drop := inject.DropLaunch(k.Name); drop {
		sp := trace.Begin("inject."+r.Kind, func() string { return "kernel=" + k.Name + " rule=" + r.String() })
		sp.End(0, "dropped", nil)
		return backend.LaunchResult{Elapsed: time.Microsecond, Method: "wall"}, r.String(), nil
	}
	res, err := s.be.Launch(k, l.Grid, l.Block, args)
	return res, "", err
}

func (s *server) read(r wire.Read, _ *wire.Msg) (any, []int, error) {
	b, err := s.buf(r.Buf)
	if err != nil {
		return nil, nil, err
	}
	if r.Len > wire.MaxData || !backend.Within(r.Off, r.Len, b.Size()) {
		return nil, nil, fmt.Errorf("read of %d bytes at %d: outside the %d-byte buffer or over %d", r.Len, r.Off, b.Size(), wire.MaxData)
	}
	p := make([]byte, r.Len)
	if err := s.readDevice(b, r.Off, p); err != nil {
		return nil, nil, err
	}
	return wire.Data{Data: p}, nil, nil
}

func (s *server) write(w wire.Write, _ *wire.Msg) (any, []int, error) {
	b, err := s.buf(w.Buf)
	if err != nil {
		return nil, nil, err
	}
	if !backend.Within(w.Off, uint64(len(w.Data)), b.Size()) {
		return nil, nil, fmt.Errorf("write of %d bytes at %d: outside the %d-byte buffer", len(w.Data), w.Off, b.Size())
	}
	return nil, nil, s.be.Write(b, w.Off, w.Data)
}

func (s *server) free(f wire.Free, _ *wire.Msg) (any, []int, error) {
	b, err := s.buf(f.Buf)
	if err != nil {
		return nil, nil, err
	}
	delete(s.bufs, f.Buf)
	return nil, nil, s.be.Free(b)
}

// copy is the backend's copy engine between two buffers of this rank,
// timed, with the clock sampler alongside when asked.
func (s *server) copy(c wire.Copy, _ *wire.Msg) (any, []int, error) {
	dst, err := s.buf(c.Dst)
	if err != nil {
		return nil, nil, err
	}
	src, err := s.buf(c.Src)
	if err != nil {
		return nil, nil, err
	}
	if !backend.Within(c.DstOff, c.N, dst.Size()) || !backend.Within(c.SrcOff, c.N, src.Size()) {
		return nil, nil, fmt.Errorf("copy of %d bytes: destination [%d, +%d) or source [%d, +%d) outside its buffer (%d, %d bytes)",
			c.N, c.DstOff, c.N, c.SrcOff, c.N, dst.Size(), src.Size())
	}
	var clocks func() *wire.ClockStats
	if c.Clocks {
		clocks = s.sampleClocks()
	}
	t0 := monotonicNs()
	res, err := s.be.Copy(dst, c.DstOff, src, c.SrcOff, c.N)
	t1 := monotonicNs()
	var clk *wire.ClockStats
	if clocks != nil {
		clk = clocks()
	}
	if err != nil {
		return nil, nil, err
	}
	return wire.Timing{ElapsedNs: res.Elapsed.Nanoseconds(), Method: res.Method, Clock: clk, StartNs: t0, EndNs: t1}, nil, nil
}

func (s *server) memInfo(*wire.Msg) (any, []int, error) {
	if s.sticky != nil {
		return nil, nil, s.sticky
	}
	free, total, err := s.be.MemInfo()
	if err != nil {
		return nil, nil, err
	}
	return wire.MemInfo{Free: free, Total: total, Fds: countFds(), Bufs: len(s.bufs)}, nil, nil
}

// fdInfo reads /proc's fdinfo of the one fd that came with the request.
func (s *server) fdInfo(m *wire.Msg) (any, []int, error) {
	if len(m.Fds) != 1 {
		return nil, nil, fmt.Errorf("%w: fdinfo needs exactly one fd, %d arrived", wire.ErrMalformed, len(m.Fds))
	}
	info, err := FdInfo(m.Fds[0])
	if err != nil {
		return nil, nil, err
	}
	return wire.FdInfoReply{Info: info}, nil, nil
}

func (s *server) traceReply(*wire.Msg) (any, []int, error) {
	var sb strings.Builder
	trace.Format(&sb, trace.Snapshot(), true)
	return wire.TraceReply{Text: sb.String()}, nil, nil
}
