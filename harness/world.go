package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// World is a set of ranks of one backend that persists across cases until
// one of them dies.
type World struct {
	Backend string
	N       int
	Procs   []*Proc
	// Infos are the ranks' device facts and capabilities, as each rank's
	// backend reported them in its hello reply.
	Infos []device.Info
	// Settings went to every rank in its hello.
	Settings wire.Settings
	locks    []string
	broken   atomic.Pointer[error] // set when the world can no longer be trusted
}

// Errors a case can end with; the runner maps them to outcomes.

// SkipError: a capability is missing.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Skipf builds a SkipError.
func Skipf(format string, a ...any) error { return &SkipError{fmt.Sprintf(format, a...)} }

// FailError: a verification did not hold (expected vs got).
type FailError struct{ Detail string }

func (e *FailError) Error() string { return e.Detail }

// Failf builds a FailError.
func Failf(format string, a ...any) error { return &FailError{fmt.Sprintf(format, a...)} }

// TimeoutError: a deadline passed while waiting on a rank.
type TimeoutError struct {
	Rank int
	What string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("rank %d did not answer %s before the deadline", e.Rank, e.What)
}

// DeadError: a rank died (or closed its socket) during a request.
type DeadError struct {
	Rank int
	What string
}

func (e *DeadError) Error() string { return fmt.Sprintf("rank %d died during %s", e.Rank, e.What) }

// RemoteError: a rank answered with an error.
type RemoteError struct {
	Rank         int
	What         string
	Msg          string
	NotSupported bool
	Fault        *wire.Fault
}

func (e *RemoteError) Error() string { return fmt.Sprintf("rank %d %s: %s", e.Rank, e.What, e.Msg) }

// RankRefused reports whether err is the one failure a case may accept
// as an outcome: the rank answered, with an error reply that is neither a
// fault (a crash) nor not-supported. A timeout, a dead rank or a protocol
// error never is: a case expects one specific failure, never any error.
func RankRefused(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Fault == nil && !re.NotSupported
}

// ProtocolError: a malformed message.
type ProtocolError struct {
	Rank int
	Err  error
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }
func (e *ProtocolError) Unwrap() error { return e.Err }

// call sends one request and waits for its reply until deadline.
func (p *Proc) call(t wire.Type, body any, deadline time.Time, res any, fds ...int) (wire.Msg, error) {
	// One conversation per rank at a time: a request and its reply are
	// never interleaved with another goroutine's.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sock < 0 {
		return wire.Msg{}, &DeadError{p.Rank, t.String()}
	}
	p.seq++
	seq := p.seq
	what := t.String()
	if err := wire.Send(p.sock, t, seq, body, fds...); err != nil {
		if errors.Is(err, wire.ErrClosed) || !p.Alive() {
			p.WaitExit(2 * time.Second)
			return wire.Msg{}, &DeadError{p.Rank, what}
		}
		return wire.Msg{}, &ProtocolError{p.Rank, err}
	}
	m, err := wire.Recv(p.sock, deadline)
	// A reply to an earlier request that missed its deadline may still be
	// queued: drop it rather than take it for this one's.
	for err == nil && m.Type == wire.TReply && m.Seq < seq {
		m.CloseFds()
		m, err = wire.Recv(p.sock, deadline)
	}
	switch {
	case errors.Is(err, wire.ErrDeadline):
		return wire.Msg{}, &TimeoutError{p.Rank, what}
	case errors.Is(err, wire.ErrClosed):
		p.WaitExit(2 * time.Second)
		return wire.Msg{}, &DeadError{p.Rank, what}
	case err != nil:
		return wire.Msg{}, &ProtocolError{p.Rank, err}
	}
	if m.Type != wire.TReply || m.Seq != seq {
		m.CloseFds()
		return wire.Msg{}, &ProtocolError{p.Rank, fmt.Errorf("%w: wanted reply %d to %s, got %s %d", wire.ErrMalformed, seq, what, m.Type, m.Seq)}
	}
	if t != wire.TAlloc {
		// Only an alloc reply carries an fd its caller takes (Ctx.alloc);
		// an fd on any other reply is a rank's mistake and must not stay
		// open in the suite.
		m.CloseFds()
	}
	var r wire.Reply
	if err := m.Decode(&r); err != nil {
		m.CloseFds()
		return wire.Msg{}, &ProtocolError{p.Rank, err}
	}
	if !r.OK {
		m.CloseFds()
		if r.Fault != nil {
			p.WaitExit(5 * time.Second) // the rank exits after a fault
		}
		return wire.Msg{}, &RemoteError{Rank: p.Rank, What: what, Msg: r.Error, NotSupported: r.NotSupported, Fault: r.Fault}
	}
	if res != nil && len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, res); err != nil {
			m.CloseFds()
			return wire.Msg{}, &ProtocolError{p.Rank, fmt.Errorf("%w: %s result: %v", wire.ErrMalformed, what, err)}
		}
	}
	return m, nil
}

// NewWorld spawns n ranks of backend and completes the handshake. A
// backend that cannot open returns a SkipError naming why.
func NewWorld(backendName string, n int, set wire.Settings, deadline time.Time) (*World, error) {
	w := &World{Backend: backendName, N: n, Settings: set}
	for r := 0; r < n; r++ {
		p, err := Spawn(r, r)
		if err != nil {
			w.Close()
			return nil, &SpawnError{Rank: r, Err: err}
		}
		w.Procs = append(w.Procs, p)
		w.Infos = append(w.Infos, device.Info{})
	}
	// Rank 0 first: its device count decides where the others go
	// (rank r on device r mod count).
	if err := w.hello(0, 0, deadline); err != nil {
		return nil, w.startFailed(err)
	}
	count := max(w.Infos[0].Count, 1)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 1; r < n; r++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = w.hello(r, r%count, deadline) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if e != nil {
				return nil, w.startFailed(e)
			}
		}
	}
	if backendName != "host" {
		if err := w.lockDevices(deadline); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *World) hello(r, dev int, deadline time.Time) error {
	p := w.Procs[r]
	p.Device = dev
	var hr wire.HelloReply
	_, err := p.call(wire.THello, wire.Hello{Version: wire.Version, Backend: w.Backend, Rank: r, Ranks: w.N, Device: dev, Settings: w.Settings}, deadline, &hr)
	if err != nil {
		var re *RemoteError
		if errors.As(err, &re) && re.NotSupported {
			return &SkipError{fmt.Sprintf("backend %s unavailable: %s", w.Backend, re.Msg)}
		}
		return err
	}
	if hr.Version != wire.Version {
		return &ProtocolError{r, fmt.Errorf("%w: rank speaks protocol %d, suite %d", wire.ErrMalformed, hr.Version, wire.Version)}
	}
	// The suite planned cases from Matrix without loading the backend; a
	// rank whose backend offers other kinds was built from other sources.
	if want := Matrix[w.Backend]; !slices.Equal(hr.Kinds, want) {
		return &ProtocolError{r, fmt.Errorf("backend %s offers kinds %v, the suite's matrix says %v", w.Backend, hr.Kinds, want)}
	}
	w.Infos[r] = hr.Info
	return nil
}

// Device locks are process-wide and counted: two worlds of one suite (2 and
// 3 ranks, say) share a GPU legitimately; two suites must not.
var (
	lockMu   sync.Mutex
	lockHeld = map[string]*devLock{}
)

type devLock struct {
	f    *os.File
	refs int
}

// lockDevices takes an exclusive flock per device so two suites never share
// a GPU; it waits (up to the deadline) for another suite to finish.
func (w *World) lockDevices(deadline time.Time) error {
	seen := map[string]bool{}
	for r, info := range w.Infos {
		id := info.UUID
		if id == "" {
			id = fmt.Sprintf("dev%d", w.Procs[r].Device)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		// Keyed by the device alone: a hip and an hsa suite on one GPU
		// must exclude each other too.
		dir, err := LockDir()
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "gpu-"+sanitize(id)+".lock")
		if err := acquire(path, id, deadline); err != nil {
			return err
		}
		w.locks = append(w.locks, path)
	}
	return nil
}

func acquire(path, id string, deadline time.Time) error {
	lockMu.Lock()
	defer lockMu.Unlock()
	if l, ok := lockHeld[path]; ok {
		l.refs++
		return nil
	}
	f, err := openLock(path)
	if err != nil {
		return err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			holder := "another process"
			if pid := FlockHolder(f); pid > 0 {
				holder = "pid " + strconv.Itoa(pid)
			}
			f.Close()
			return fmt.Errorf("device %s is locked by another p2patomics suite (%s, %s)", id, holder, path)
		}
		time.Sleep(100 * time.Millisecond)
	}
	lockHeld[path] = &devLock{f: f, refs: 1}
	return nil
}

func release(path string) {
	lockMu.Lock()
	defer lockMu.Unlock()
	if l, ok := lockHeld[path]; ok {
		if l.refs--; l.refs == 0 {
			l.f.Close()
			delete(lockHeld, path)
		}
	}
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// Alive reports whether every rank is still running.
func (w *World) Alive() bool {
	if w.broken.Load() != nil {
		return false
	}
	for _, p := range w.Procs {
		if !p.Alive() {
			return false
		}
	}
	return true
}

// Close asks ranks to exit, then kills what is left.
func (w *World) Close() {
	var wg sync.WaitGroup
	for _, p := range w.Procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.Alive() && w.broken.Load() == nil {
				_, _ = p.call(wire.TExit, nil, time.Now().Add(2*time.Second), nil)
				if !p.WaitExit(2 * time.Second) {
					p.Signal(syscall.SIGKILL)
					p.WaitExit(5 * time.Second)
				}
			} else {
				p.Kill(500 * time.Millisecond)
			}
			p.Close()
		}()
	}
	wg.Wait()
	for _, path := range w.locks {
		release(path)
	}
	w.locks = nil
}

// Kill ends every rank: SIGQUIT (stack dumps) then SIGKILL after grace.
func (w *World) Kill(grace time.Duration, why error) {
	w.broken.CompareAndSwap(nil, &why)
	var wg sync.WaitGroup
	for _, p := range w.Procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Kill(grace) }()
	}
	wg.Wait()
}

// StartError: a rank of a starting world died (or stopped answering)
// before the world was ready. World is killed but not closed, so its ranks'
// stderr and traces can still be read for the evidence; whoever gets a
// StartError closes World.
type StartError struct {
	World *World
	Err   error
	Death Death // the first dead rank's classification
}

func (e *StartError) Error() string {
	if e.Death.Summary != "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Death.Summary)
	}
	return e.Err.Error()
}
func (e *StartError) Unwrap() error { return e.Err }

// SpawnError: a rank process could not be started (fork/exec failed, e.g.
// EAGAIN under a process limit). The errno is named.
type SpawnError struct {
	Rank int
	Err  error
}

func (e *SpawnError) Error() string {
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		return fmt.Sprintf("cannot start rank %d: %v (%s)", e.Rank, e.Err, unix.ErrnoName(errno))
	}
	return fmt.Sprintf("cannot start rank %d: %v", e.Rank, e.Err)
}
func (e *SpawnError) Unwrap() error { return e.Err }

// startFailed ends a world whose handshake failed. A rank death (or a
// rank that stopped answering) becomes a StartError that keeps the world's
// evidence; anything else (a backend that cannot open: SkipError) closes
// the world and returns err as it was.
func (w *World) startFailed(err error) error {
	var de *DeadError
	var te *TimeoutError
	var pe *ProtocolError
	if !errors.As(err, &de) && !errors.As(err, &te) && !errors.As(err, &pe) {
		w.Close()
		return err
	}
	w.Kill(200*time.Millisecond, err)
	st := &StartError{World: w, Err: err}
	if de != nil {
		// Only the rank that died: the others were just killed by Kill.
		w.Procs[de.Rank].WaitExit(3 * time.Second)
		st.Death = Classify(w.Procs[de.Rank])
	}
	return st
}

// Outcome is what a case that could not get its world ends with: a rank
// death is a crash, a rank that stopped answering a timeout, a malformed
// handshake an error.
func (e *StartError) Outcome() report.Outcome {
	var de *DeadError
	var te *TimeoutError
	switch {
	case errors.As(e.Err, &de):
		return report.Crash
	case errors.As(e.Err, &te):
		return report.Timeout
	}
	return report.Error
}

// CloseStart closes the world a StartError kept open; any other error is
// left alone. For callers that only want to know whether a world starts.
func CloseStart(err error) {
	var st *StartError
	if errors.As(err, &st) {
		st.World.Close()
	}
}
