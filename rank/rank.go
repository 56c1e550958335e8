// Package rank is the child side of the harness: a process re-executed from
// the suite's own binary (argv[0] "p2patomics-rank", env P2PAT_RANK) that
// opens one backend and serves requests on the socket at fd 3 until told to
// exit. A rank knows the wire protocol, not the parent's internals.
package rank

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/internal/inject"
	"p2patomics/kernels"
	"p2patomics/rank/backend"
	"p2patomics/trace"
	"p2patomics/wire"

	// Every backend registers itself; the rank picks one by name.
	_ "p2patomics/rank/cuda"
	_ "p2patomics/rank/hip"
	_ "p2patomics/rank/host"
	_ "p2patomics/rank/hsa"
)

// Env is the sentinel that makes a process a rank (wire.RankEnv: the
// spawner sets it, so both read it from wire).
const Env = wire.RankEnv

// SockFd is where the rank finds its socket; TraceFd holds the shared trace
// ring the parent reads after any ending (wire's, as the spawner passes them).
const (
	SockFd  = wire.RankSockFd
	TraceFd = wire.RankTraceFd
)

// ExitFault is the exit status of a rank that stopped after a GPU fault.
const ExitFault = 3

// IsRank reports whether this process was started as a rank. TestMain calls
// it before flags are parsed: a rank has none of the suite's flags.
func IsRank() bool { return os.Getenv(Env) != "" }

type server struct {
	sock  int
	be    backend.Backend
	bufs  map[int]backend.Buffer
	next  int
	rank  int
	ranks int
	// clockPeriod is how often a perf launch or copy samples the device
	// clock (wire.Settings, from the hello); 0 is off.
	clockPeriod time.Duration
}

// Main serves until Exit or until the parent goes away; it returns the
// process exit status.
func Main() int {
	// Vendor contexts (CUDA's current context, HIP's current device) are per
	// OS thread: every backend call happens on this goroutine, pinned.
	runtime.LockOSThread()
	// Core dumps off (docs/ARCHITECTURE.md, Contracts): every crash canary and GPU fault ends in
	// SIGABRT under GOTRACEBACK=crash, and a GPU rank's core is its whole
	// mapped address space.
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0})
	// Pdeathsig is armed by the parent; if the parent died before it took
	// effect we would never be told, so check once (against the pid the
	// parent wrote, not 1: the suite may itself be PID 1 in a container).
	if want := os.Getenv(wire.ParentEnv); want != "" && want != strconv.Itoa(os.Getppid()) {
		return 1
	}
	r, err := strconv.Atoi(os.Getenv(Env))
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics-rank: bad %s=%q\n", Env, os.Getenv(Env))
		return 2
	}
	// Every vendor call is traced into the parent's ring (about 0.1 µs a
	// call), so a failing case always has its call sequence. On from the
	// start so the hello is traced too; the hello's settings may turn it off.
	if err := trace.AttachShared(TraceFd); err == nil {
		trace.On()
	}
	s := &server{sock: SockFd, bufs: map[int]backend.Buffer{}, next: 1, rank: r}
	return s.serve()
}

func (s *server) serve() int {
	for {
		m, err := wire.Recv(s.sock, time.Time{})
		if err != nil {
			if errors.Is(err, wire.ErrClosed) {
				return 0 // the suite went away: nothing left to serve
			}
			fmt.Fprintf(os.Stderr, "p2patomics-rank %d: %v\n", s.rank, err)
			return 2
		}
		if m.Type == wire.TExit {
			s.reply(m.Seq, nil, nil)
			if s.be != nil {
				s.freeAll()
				s.be.Close()
			}
			return 0
		}
		// Every request is a span in the trace: a rank that dies or hangs
		// inside one leaves it in flight, marked as the failing call.
		sp := trace.Begin("request."+m.Type.String(), func() string {
			body := string(m.Body)
			if len(body) > 120 {
				body = body[:120] + "…"
			}
			return fmt.Sprintf("seq=%d fds=%d body=%s", m.Seq, len(m.Fds), body)
		})
		res, fds, err := s.handle(&m)
		sp.EndErr(err, nil)
		m.CloseFds()
		s.reply(m.Seq, res, err, fds...)
		for _, fd := range fds {
			unix.Close(fd)
		}
		var f *backend.Fault
		if errors.As(err, &f) {
			// The device context is gone (CUDA sticky errors): say so on
			// stderr too, in the form the parent parses, and stop.
			fmt.Fprintln(os.Stderr, f.Line())
			os.Exit(ExitFault)
		}
	}
}

func (s *server) reply(seq uint32, res any, err error, fds ...int) {
	var r wire.Reply
	if err != nil {
		r.Error = err.Error()
		r.NotSupported = errors.Is(err, backend.ErrNotSupported)
		var f *backend.Fault
		if errors.As(err, &f) {
			r.Fault = f
		}
		fds = nil
	} else {
		r.OK = true
		if res != nil {
			b, merr := json.Marshal(res)
			if merr != nil {
				r.OK, r.Error = false, merr.Error()
			}
			r.Result = b
		}
	}
	sp := trace.Begin("sendmsg", func() string { return fmt.Sprintf("fd=%d seq=%d ok=%t scm_rights=%v", s.sock, seq, r.OK, fds) })
	serr := wire.Send(s.sock, wire.TReply, seq, r, fds...)
	sp.EndErr(serr, nil)
	if serr != nil {
		fmt.Fprintf(os.Stderr, "p2patomics-rank %d: reply: %v\n", s.rank, serr)
	}
}

func (s *server) buf(id int) (backend.Buffer, error) {
	b, ok := s.bufs[id]
	if !ok {
		return nil, fmt.Errorf("no buffer %d in rank %d", id, s.rank)
	}
	return b, nil
}

func (s *server) add(b backend.Buffer) int {
	id := s.next
	s.next++
	s.bufs[id] = b
	return id
}

func (s *server) freeAll() {
	for id, b := range s.bufs {
		_ = s.be.Free(b)
		delete(s.bufs, id)
	}
}

func (s *server) needOpen() error {
	if s.be == nil {
		return errors.New("request before hello")
	}
	return nil
}

func (s *server) handle(m *wire.Msg) (any, []int, error) {
	if m.Type == wire.THello {
		return s.hello(m)
	}
	if m.Type == wire.TCanary {
		var c wire.Canary
		if err := m.Decode(&c); err != nil {
			return nil, nil, err
		}
		return nil, nil, canary(s, c.How)
	}
	if err := s.needOpen(); err != nil {
		return nil, nil, err
	}
	switch m.Type {
	case wire.TAlloc:
		var a wire.Alloc
		if err := m.Decode(&a); err != nil {
			return nil, nil, err
		}
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
	case wire.TImport:
		var a wire.Import
		if err := m.Decode(&a); err != nil {
			return nil, nil, err
		}
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
	case wire.TLaunch:
		var l wire.Launch
		if err := m.Decode(&l); err != nil {
			return nil, nil, err
		}
		k, ok := kernels.Lookup(l.Kernel)
		if !ok {
			return nil, nil, fmt.Errorf("kernel %q is not in the manifest", l.Kernel)
		}
		if len(l.Args) != len(k.Args) {
			return nil, nil, fmt.Errorf("kernel %s takes %d arguments, got %d", k.Name, len(k.Args), len(l.Args))
		}
		args := make([]uint64, len(l.Args))
		for i, a := range l.Args {
			if a.Buf < 0 {
				args[i] = a.Val
				continue
			}
			b, err := s.buf(a.Buf)
			if err != nil {
				return nil, nil, fmt.Errorf("argument %s: %w", k.Args[i].Name, err)
			}
			if !backend.Within(a.Off, 1, b.Size()) {
				return nil, nil, fmt.Errorf("argument %s: offset %d past the %d-byte buffer", k.Args[i].Name, a.Off, b.Size())
			}
			args[i] = b.Addr() + a.Off
		}
		var cpu func() error
		if l.CPU != nil {
			var err error
			if cpu, err = s.cpuAtomics(l.CPU); err != nil {
				return nil, nil, err
			}
		}
		var clocks func() *wire.ClockStats
		if l.Clocks {
			clocks = s.sampleClocks()
		}
		t0 := monotonicNs()
		var res backend.LaunchResult
		var err error
		if r, drop := inject.DropLaunch(k.Name); drop {
			// The driver that accepts a launch and does nothing: success,
			// no work, a timing as a fast launch would give. The trace says
			// so, so the case's evidence shows which launch was dropped.
			sp := trace.Begin("inject."+r.Kind, func() string { return "kernel=" + k.Name + " rule=" + r.String() })
			sp.End(0, "dropped", nil)
			res = backend.LaunchResult{Elapsed: time.Microsecond, Method: "wall"}
		} else {
			res, err = s.be.Launch(k, l.Grid, l.Block, args)
		}
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
		return wire.Timing{ElapsedNs: res.Elapsed.Nanoseconds(), Method: res.Method, Clock: clk, StartNs: t0, EndNs: t1}, nil, nil
	case wire.TRead:
		var r wire.Read
		if err := m.Decode(&r); err != nil {
			return nil, nil, err
		}
		b, err := s.buf(r.Buf)
		if err != nil {
			return nil, nil, err
		}
		if r.Len > wire.MaxData || !backend.Within(r.Off, r.Len, b.Size()) {
			return nil, nil, fmt.Errorf("read of %d bytes at %d: outside the %d-byte buffer or over %d", r.Len, r.Off, b.Size(), wire.MaxData)
		}
		p := make([]byte, r.Len)
		if err := s.be.Read(b, r.Off, p); err != nil {
			return nil, nil, err
		}
		return wire.Data{Data: p}, nil, nil
	case wire.TWrite:
		var w wire.Write
		if err := m.Decode(&w); err != nil {
			return nil, nil, err
		}
		b, err := s.buf(w.Buf)
		if err != nil {
			return nil, nil, err
		}
		if !backend.Within(w.Off, uint64(len(w.Data)), b.Size()) {
			return nil, nil, fmt.Errorf("write of %d bytes at %d: outside the %d-byte buffer", len(w.Data), w.Off, b.Size())
		}
		return nil, nil, s.be.Write(b, w.Off, w.Data)
	case wire.TSum:
		var q wire.Sum
		if err := m.Decode(&q); err != nil {
			return nil, nil, err
		}
		return s.sum(q)
	case wire.TFree:
		var f wire.Free
		if err := m.Decode(&f); err != nil {
			return nil, nil, err
		}
		b, err := s.buf(f.Buf)
		if err != nil {
			return nil, nil, err
		}
		delete(s.bufs, f.Buf)
		return nil, nil, s.be.Free(b)
	case wire.TCopy:
		var c wire.Copy
		if err := m.Decode(&c); err != nil {
			return nil, nil, err
		}
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
	case wire.TMemInfo:
		free, total, err := s.be.MemInfo()
		if err != nil {
			return nil, nil, err
		}
		return wire.MemInfo{Free: free, Total: total, Fds: countFds(), Bufs: len(s.bufs)}, nil, nil
	case wire.TFdInfo:
		if len(m.Fds) != 1 {
			return nil, nil, fmt.Errorf("%w: fdinfo needs exactly one fd, %d arrived", wire.ErrMalformed, len(m.Fds))
		}
		info, err := FdInfo(m.Fds[0])
		if err != nil {
			return nil, nil, err
		}
		return wire.FdInfoReply{Info: info}, nil, nil
	case wire.TTrace:
		var sb strings.Builder
		trace.Format(&sb, trace.Snapshot(), true)
		return wire.TraceReply{Text: sb.String()}, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown request %s", wire.ErrMalformed, m.Type)
}

func (s *server) hello(m *wire.Msg) (any, []int, error) {
	var h wire.Hello
	if err := m.Decode(&h); err != nil {
		return nil, nil, err
	}
	if h.Version != wire.Version {
		return nil, nil, fmt.Errorf("protocol version %d, rank speaks %d", h.Version, wire.Version)
	}
	if s.be != nil {
		return nil, nil, errors.New("second hello")
	}
	if h.Settings.NoTrace {
		trace.Off()
	}
	if h.Settings.ClockPeriod < 0 {
		return nil, nil, fmt.Errorf("clock period %s is negative", h.Settings.ClockPeriod)
	}
	s.clockPeriod = h.Settings.ClockPeriod
	// The injector's rules go in before the backend opens, so its first
	// vendor call is already behind them.
	rules, err := inject.Parse(strings.Join(h.Settings.Inject, ","))
	if err != nil {
		return nil, nil, err
	}
	inject.Set(rules)
	be, err := backend.New(h.Backend)
	if err != nil {
		return nil, nil, err
	}
	s.ranks = h.Ranks
	info, err := be.Open(backend.Config{Rank: h.Rank, Ranks: h.Ranks, Device: h.Device})
	if err != nil {
		return nil, nil, err
	}
	s.be = be
	// The rank that opened it, so the fingerprint can say which ranks share
	// one device (Merge keys devices by UUID).
	info.Rank = h.Rank
	return wire.HelloReply{Version: wire.Version, Pid: os.Getpid(), Kinds: be.Kinds(), Info: info}, nil, nil
}

// sum reads words back in chunks and adds them, so verifying a per-thread
// output array never ships it across the socket.
func (s *server) sum(q wire.Sum) (any, []int, error) {
	b, err := s.buf(q.Buf)
	if err != nil {
		return nil, nil, err
	}
	w := uint64(q.Width / 8)
	if w != 4 && w != 8 {
		return nil, nil, fmt.Errorf("sum: width %d, want 32 or 64", q.Width)
	}
	if !backend.Within(q.Off, 0, b.Size()) || q.N > (b.Size()-q.Off)/w {
		return nil, nil, fmt.Errorf("sum of %d words at %d: outside the %d-byte buffer", q.N, q.Off, b.Size())
	}
	var total uint64
	chunk := make([]byte, 1<<20)
	for done := uint64(0); done < q.N*w; {
		n := min(uint64(len(chunk)), q.N*w-done)
		if err := s.be.Read(b, q.Off+done, chunk[:n]); err != nil {
			return nil, nil, err
		}
		for i := uint64(0); i < n; i += w {
			if w == 8 {
				total += leU64(chunk[i:])
			} else {
				total += uint64(leU32(chunk[i:]))
			}
		}
		done += n
	}
	return wire.SumReply{Sum: total}, nil, nil
}

// sampleClocks starts sampling the device's clock every clockPeriod (and
// once at each end) on a goroutine of its own and returns
// the stop, which gives what was seen; nil from the stop when the backend
// cannot sample. The sampler never touches the locked vendor thread.
func (s *server) sampleClocks() func() *wire.ClockStats {
	cs, ok := s.be.(backend.ClockSampler)
	if !ok || s.clockPeriod == 0 {
		return func() *wire.ClockStats { return nil }
	}
	done := make(chan struct{})
	out := make(chan *wire.ClockStats, 1)
	go func() {
		st := &wire.ClockStats{}
		seen := map[string]bool{}
		take := func() {
			mhz, reasons, err := cs.SampleClock()
			if err != nil {
				st.Error = err.Error()
				return
			}
			if st.N == 0 || mhz < st.MinMHz {
				st.MinMHz = mhz
			}
			st.MaxMHz = max(st.MaxMHz, mhz)
			st.N++
			for _, r := range reasons {
				if !seen[r] {
					seen[r] = true
					st.Reasons = append(st.Reasons, r)
				}
			}
		}
		tick := time.NewTicker(s.clockPeriod)
		defer tick.Stop()
		take()
		for {
			select {
			case <-done:
				take()
				out <- st
				return
			case <-tick.C:
				if st.Error == "" {
					take()
				}
			}
		}
	}()
	return func() *wire.ClockStats {
		close(done)
		return <-out
	}
}

// cpuAtomics starts the CPU's share of a launch (wire.CPUAtomics) on its
// own goroutines, which need no vendor context, and returns the wait. The
// goroutines begin before the kernel is launched and the word is shared
// with it, so the two overlap for as long as both run.
func (s *server) cpuAtomics(c *wire.CPUAtomics) (func() error, error) {
	cm, ok := s.be.(backend.CPUMapper)
	if !ok {
		return nil, backend.NotSupportedf("%s: the CPU cannot address this backend's memory", s.be.Name())
	}
	if c.Threads < 1 || c.Threads > 64 || c.Iters == 0 || c.Iters > 1<<24 {
		return nil, fmt.Errorf("cpu atomics: %d threads x %d iterations outside 1..64 x 1..2^24", c.Threads, c.Iters)
	}
	b, err := s.buf(c.Target.Buf)
	if err != nil {
		return nil, fmt.Errorf("cpu atomics target: %w", err)
	}
	w, err := cm.CPUWord(b, c.Target.Off)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for t := 0; t < c.Threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < c.Iters; i++ {
				if c.Racy {
					v := atomic.LoadUint64(w)
					runtime.Gosched() // widen the window, as the racy kernels do
					atomic.StoreUint64(w, v+c.Operand)
					continue
				}
				atomic.AddUint64(w, c.Operand)
			}
		}()
	}
	return func() error { wg.Wait(); return nil }, nil
}

// within reports whether [off, off+n) lies inside size bytes, without the
// overflow of computing off+n.
func leU64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// countFds counts the fds a case could leak: memfds, dma-bufs, sockets and
// files the harness passed around. Fds a vendor driver opens for itself
// (device nodes, eventfds, epoll, pipes to its threads) come and go with the
// driver's own life and are not ours to judge.
func countFds() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory's own fd, closed by now
		}
		if driverFd(link) {
			continue
		}
		n++
	}
	return n
}

func driverFd(link string) bool {
	for _, p := range []string{"/dev/nvidia", "/dev/kfd", "/dev/dri", "anon_inode:[eventfd]", "anon_inode:[eventpoll]",
		"anon_inode:[timerfd]", "anon_inode:[pidfd]", "anon_inode:[signalfd]", "anon_inode:inotify", "pipe:"} {
		if strings.HasPrefix(link, p) {
			return true
		}
	}
	return false
}

// monotonicNs reads CLOCK_MONOTONIC: unlike Go's time.Now, whose monotonic
// reading is private to the process, it is one clock for every rank.
func monotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0 // never on Linux; 0 reads as "no window" to the suite
	}
	return ts.Nano()
}
