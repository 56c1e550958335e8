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

	"p2patomics/internal/binding"
	"p2patomics/internal/inject"
	"p2patomics/internal/watchdog"
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
	// sticky, set by the sticky_fault canary, is the fault every later
	// device query returns, the way a CUDA context's sticky error does.
	sticky *backend.Fault
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
		// The watchdog on the device waits reports into the shared ring,
		// which the parent polls while it waits for a reply
		// (internal/watchdog); without a shared ring nobody could read it.
		watchdog.Start()
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

func (s *server) hello(h wire.Hello, m *wire.Msg) (any, []int, error) {
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
	be, err := backend.New(h.Backend)
	if err != nil {
		return nil, nil, err
	}
	_, applies := be.(backend.SpeedApplier)
	if err := installInject(h, m, applies); err != nil {
		return nil, nil, err
	}
	s.ranks = h.Ranks
	// An A/B run's stack B names its library file: the backend loads
	// exactly it, and the load fails if the process maps another.
	binding.Pin(h.Settings.Library)
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

// installInject installs the hello's injector rules: with the run's
// counters when the suite attached them (every rank then counts in one
// memfd: wire.Settings.InjectCounters), else with this process's own (a
// test's world). Any other fd on a hello is a protocol error. The backend
// is constructed, not opened, so a speed rule it cannot apply is refused
// before its first vendor call.
func installInject(h wire.Hello, m *wire.Msg, speedApplies bool) error {
	rules, err := inject.Parse(strings.Join(h.Settings.Inject, ","))
	if err != nil {
		return err
	}
	if err := inject.CheckBackend(h.Backend, speedApplies, rules); err != nil {
		return err
	}
	switch {
	case m == nil || len(m.Fds) == 0:
		inject.Set(rules)
		return nil
	case len(m.Fds) == 1 && len(rules) > 0:
		// The mapping keeps the counters; the fd itself is closed with the
		// message.
		return inject.SetShared(rules, m.Fds[0])
	}
	return fmt.Errorf("%w: hello with %d fds and %d injector rules", wire.ErrMalformed, len(m.Fds), len(rules))
}

// sum reads words back in chunks and adds them, so verifying a per-thread
// output array never ships it across the socket.
func (s *server) sum(q wire.Sum, _ *wire.Msg) (any, []int, error) {
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
		if err := s.readDevice(b, q.Off+done, chunk[:n]); err != nil {
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
	wait := startCPUAdds(w, c.Threads, c.Iters, c.Operand, c.Racy)
	return func() error { wait(); return nil }, nil
}

// startCPUAdds starts threads goroutines that each add operand to *w iters
// times, and returns the wait. Racy, each add is a load and a store (the
// planted lost update), and the first one is a rendezvous: every thread
// loads before any stores, so at least one update is lost however the OS
// schedules the threads. Without it a loaded two-core machine could run
// one thread's whole loop inside a time slice, lose nothing, and the
// control that must fail passed.
func startCPUAdds(w *uint64, threads int, iters, operand uint64, racy bool) func() {
	var wg sync.WaitGroup
	var loaded atomic.Int64
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < iters; i++ {
				if !racy {
					atomic.AddUint64(w, operand)
					continue
				}
				v := atomic.LoadUint64(w)
				if i == 0 {
					loaded.Add(1)
					for loaded.Load() < int64(threads) {
						runtime.Gosched()
					}
				} else {
					runtime.Gosched() // widen the window, as the racy kernels do
				}
				atomic.StoreUint64(w, v+operand)
			}
		}()
	}
	return wg.Wait
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
