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

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/kernels"
	"p2patomics/trace"
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
	// known is rank 0's hello of an earlier world (newWorld), nil for the
	// first; helloSent is how many hellos were out when the start first
	// waited for a reply (every rank's, when known placed them).
	known     *device.Info
	helloSent int
	// pat is the running case's patience (patience.go), nil between cases.
	pat atomic.Pointer[patience]
}

// The errors a case can end with, and how each classifies itself, are in
// errors.go.

// call sends one request and waits for its reply until deadline.
func (p *Proc) call(t wire.Type, body any, deadline time.Time, res any, fds ...int) (wire.Msg, error) {
	return p.begin(t, body, deadline, res, fds...)()
}

// begin sends one request and returns the wait for its reply (until
// deadline, decoded into res), so that a world start can send every
// rank's hello before it waits for any. One conversation per rank at a
// time: the rank stays locked from the send to the end of the wait, and a
// request and its reply are never interleaved with another goroutine's.
// The wait must be called, once.
func (p *Proc) begin(t wire.Type, body any, deadline time.Time, res any, fds ...int) func() (wire.Msg, error) {
	p.mu.Lock()
	failed := func(err error) func() (wire.Msg, error) {
		p.mu.Unlock()
		return func() (wire.Msg, error) { return wire.Msg{}, err }
	}
	if p.sock < 0 {
		return failed(&DeadError{p.Rank, t.String()})
	}
	p.seq++
	seq := p.seq
	what := t.String()
	if err := wire.Send(p.sock, t, seq, body, fds...); err != nil {
		if errors.Is(err, wire.ErrClosed) || !p.Alive() {
			p.WaitExit(2 * time.Second)
			return failed(&DeadError{p.Rank, what})
		}
		return failed(&ProtocolError{p.Rank, err})
	}
	return func() (wire.Msg, error) {
		defer p.mu.Unlock()
		m, err := p.await(seq, what, deadline)
		if err != nil {
			return wire.Msg{}, err
		}
		return p.decode(t, m, res)
	}
}

// await receives the reply to request seq: a hang, a hang-up or a
// malformed message is the rank's typed error.
func (p *Proc) await(seq uint32, what string, deadline time.Time) (wire.Msg, error) {
	m, err := p.recv(deadline, what)
	// A reply to an earlier request that missed its deadline may still be
	// queued: drop it rather than take it for this one's. A reply to an
	// earlier request that did not time out (answered already, or never
	// sent) is the rank's protocol error: a rank that answers twice, or a
	// stray packet, must not pass unseen (adversary B4).
	for err == nil && m.Type == wire.TReply && m.Seq < seq {
		m.CloseFds()
		if !p.late.forget(m.Seq) {
			return wire.Msg{}, &ProtocolError{p.Rank, fmt.Errorf("%w: reply %d while waiting for reply %d to %s: request %d did not time out, its reply came already", wire.ErrMalformed, m.Seq, seq, what, m.Seq)}
		}
		m, err = p.recv(deadline, what)
	}
	var wedged *TimeoutError
	switch {
	case errors.As(err, &wedged):
		p.late.expect(seq)
		return wire.Msg{}, wedged
	case errors.Is(err, wire.ErrDeadline):
		p.late.expect(seq)
		return wire.Msg{}, &TimeoutError{Rank: p.Rank, What: what, Patience: p.patienceWhy()}
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
	return m, nil
}

// watchPoll is how often a wait for a reply looks at the rank's watchdog
// word (one pread of its trace ring's header).
const watchPoll = 25 * time.Millisecond

// recv is wire.Recv until deadline, in slices of watchPoll between which
// the watchdog words of p's world are read: a rank wedged in a vendor call
// whose work is done ends the wait for what now, as a TimeoutError naming
// that rank and the watchdog's report, not at the deadline.
//
// The deadline moves (patience.go): by the suite's own stalls (a stopped
// or starved suite never blames a rank), and, during a case, by the
// case's patience while its world is moving, up to the case's own limit.
func (p *Proc) recv(deadline time.Time, what string) (wire.Msg, error) {
	watchStalls()
	pt := p.patient()
	stall0 := stalls.observe()
	for {
		var shift time.Duration
		if pt != nil {
			stalls.observe()
			pt.tick()
			shift = pt.shift()
		} else {
			shift = stalls.observe() - stall0
		}
		end := deadline.Add(shift)
		slice := time.Now().Add(watchPoll)
		if !deadline.IsZero() && end.Before(slice) {
			slice = end
		}
		m, err := wire.Recv(p.sock, slice)
		if !errors.Is(err, wire.ErrDeadline) {
			return m, err
		}
		for _, q := range p.watched() {
			if report := wedgeReport(q.Trace); report != "" {
				return wire.Msg{}, &TimeoutError{Rank: q.Rank, What: what, Watchdog: report}
			}
		}
		if deadline.IsZero() || slice.Before(end) {
			continue
		}
		// The deadline as moved so far passed: a stall seen only now
		// (the suite just woke) moves it again; else the case's patience
		// decides.
		switch {
		case pt == nil && stalls.observe()-stall0 > shift:
		case pt == nil:
			return m, err
		default:
			stalls.observe()
			if _, ok := pt.extend(deadline); !ok {
				return m, err
			}
		}
	}
}

// patient is the patience of the case p's world is running, nil between
// cases and outside a world.
func (p *Proc) patient() *patience {
	if p.pat == nil {
		return nil
	}
	return p.pat.Load()
}

// patienceWhy is why the case's patience ran out, "" without one.
func (p *Proc) patienceWhy() string {
	if pt := p.patient(); pt != nil {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		return pt.why
	}
	return ""
}

// watched is the ranks whose watchdogs a wait on p reads: its world's, or
// p alone outside one.
func (p *Proc) watched() []*Proc {
	if p.world == nil {
		return []*Proc{p}
	}
	return p.world
}

// wedgeReport is the watchdog's record in a rank's shared ring, "" while
// it has written none.
func wedgeReport(f *os.File) string {
	seq, err := trace.SharedWedged(f)
	if err != nil || seq == 0 {
		return ""
	}
	recs, err := trace.ReadShared(f, seq-1)
	if err == nil {
		for _, r := range recs {
			if r.Seq == seq && r.Name == trace.WedgeName {
				return r.Args
			}
		}
	}
	return fmt.Sprintf("record #%d (overwritten)", seq)
}

// decode reads the reply m to a request of type t: an error reply is a
// RemoteError, a result is unmarshalled into res.
func (p *Proc) decode(t wire.Type, m wire.Msg, res any) (wire.Msg, error) {
	what := t.String()
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
	return newWorld(backendName, n, set, deadline, nil)
}

// newWorld is NewWorld; known is rank 0's hello of an earlier world of
// the same backend in this process (nil: none), from which every rank's
// device is known before this world's rank 0 answers (handshake).
func newWorld(backendName string, n int, set wire.Settings, deadline time.Time, known *device.Info) (*World, error) {
	if known == nil {
		known = firstHello(backendName, set)
	}
	w := &World{Backend: backendName, N: n, Settings: set, known: known}
	for r := 0; r < n; r++ {
		p, err := Spawn(r, r)
		if err != nil {
			w.Close()
			return nil, &SpawnError{Rank: r, Err: err}
		}
		w.Procs = append(w.Procs, p)
		w.Infos = append(w.Infos, device.Info{})
	}
	for _, p := range w.Procs {
		p.world = w.Procs
		p.pat = &w.pat
	}
	if err := w.handshake(deadline); err != nil {
		return nil, w.startFailed(err)
	}
	firstHellos.LoadOrStore(helloKey(backendName, set), w.Infos[0])
	if backends.IsGPU(backendName) {
		if err := w.lockDevices(deadline); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

// firstHellos holds, by backend and vendor library (an A/B run's stack B
// loads its own: wire.Settings.Library), rank 0's hello of the first world
// of that backend this process started (the suite's backend probe, before
// any runner's): a later world of any runner knows every rank's device
// from it (handshake), its first one included.
var firstHellos sync.Map

// helloKey is firstHellos' key of a world of backend with settings set.
func helloKey(backendName string, set wire.Settings) string {
	return backendName + "\x00" + set.Library
}

// firstHello is the recorded rank 0 hello of a world of backend with
// settings set, nil before any.
func firstHello(backendName string, set wire.Settings) *device.Info {
	v, ok := firstHellos.Load(helloKey(backendName, set))
	if !ok {
		return nil
	}
	info := v.(device.Info)
	return &info
}

// handshake says hello to every rank, placing each on a device. Rank 0
// goes first: a GPU backend's rank 0 opens the first device with a code
// object (device.AnyDevice) and lists every device it sees; the others go
// on the usable ones in order (placement). The ranks' Infos then name the
// devices left out.
//
// With rank 0's hello of an earlier world (w.known: the devices do not
// change under a running suite) every rank's device is known at once:
// every hello goes out before any reply is awaited, so the ranks open
// their devices side by side instead of rank 0 first (issue 52: a CUDA
// rank's open, cuInit, its context, NVML, its module, is most of a world
// start, and the one-GPU suite starts 16 worlds of 0.4-0.6 s on one H100).
// Rank 0 still resolves its own device (device.AnyDevice), and the
// placement its reply gives must be the one the hellos used, else the
// start is rank 0's protocol error.
func (w *World) handshake(deadline time.Time) error {
	first := 0
	if backends.IsGPU(w.Backend) {
		first = device.AnyDevice
	}
	var devs []int
	if w.known != nil {
		if d, _, err := placement(w.N, *w.known); err == nil {
			devs = d
		}
	}
	if devs == nil {
		// No earlier world: rank 0 first, the others on its answer.
		if err := w.hello(0, first, deadline); err != nil {
			return err
		}
	}
	placed, left, err := w.placeAll(devs, first, deadline)
	if err != nil {
		return err
	}
	if devs != nil && !slices.Equal(devs, placed) {
		return &ProtocolError{0, fmt.Errorf("%w: rank 0's devices place the ranks on %v, the run's first world placed them on %v", wire.ErrMalformed, placed, devs)}
	}
	for r := range w.Infos {
		w.Infos[r].LeftOut = left
	}
	return nil
}

// placeAll says hello to the ranks not yet greeted: all of them on devs
// (rank 0 on first), every hello sent before any reply is awaited, or,
// with devs nil, ranks 1.. on rank 0's answer. It returns the placement
// rank 0's answer gives. The first error in rank order is the start's.
func (w *World) placeAll(devs []int, first int, deadline time.Time) ([]int, []string, error) {
	from := 0
	if devs == nil {
		from = 1
		var err error
		if devs, _, err = placement(w.N, w.Infos[0]); err != nil {
			return nil, nil, err
		}
	}
	waits := make([]func() error, w.N)
	for r := from; r < w.N; r++ {
		dev := devs[r]
		if r == 0 {
			dev = first
		}
		waits[r] = w.helloSend(r, dev, deadline)
	}
	if from == 0 {
		w.helloSent = w.N
	}
	errs := make([]error, w.N)
	var wg sync.WaitGroup
	for r := from; r < w.N; r++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = waits[r]() }()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, nil, e
		}
	}
	return placement(w.N, w.Infos[0])
}

// placement is the device of each of n ranks, from rank 0's hello: with
// the backend's device list (info.Devices), rank r goes on the r-th usable
// device, cycling (device.Place: an architecture without a code object,
// a Ryzen iGPU before the dGPUs, takes no rank; left names each device
// left out and why); without one (host, one device), rank r on device r
// mod count. Rank 0 already opened a device: one other than the first
// usable is the rank's protocol error, since both sides place by one rule.
// No usable device is a skip naming the architectures found and shipped.
func placement(n int, info device.Info) (devs []int, left []string, err error) {
	devs = make([]int, n)
	if len(info.Devices) == 0 {
		count := max(info.Count, 1)
		for r := range devs {
			devs[r] = r % count
		}
		return devs, nil, nil
	}
	p, err := device.Place(info.Devices, kernels.Usable, kernels.Shipped())
	if err != nil {
		return nil, nil, &SkipError{err.Error()}
	}
	for r := range devs {
		devs[r] = p.On(r)
	}
	if info.Ordinal != devs[0] {
		return nil, nil, &ProtocolError{0, fmt.Errorf("%w: rank 0 opened device %d, the first usable device is %d (%v)", wire.ErrMalformed, info.Ordinal, devs[0], info.Devices)}
	}
	return devs, p.LeftOut, nil
}

func (w *World) hello(r, dev int, deadline time.Time) error {
	w.helloSent = 1
	return w.helloSend(r, dev, deadline)()
}

// helloSend sends rank r its hello (to open device dev) and returns the
// wait for its reply, which records the rank's device facts.
func (w *World) helloSend(r, dev int, deadline time.Time) func() error {
	p := w.Procs[r]
	p.Device = dev
	hr := new(wire.HelloReply)
	var fds []int
	if c := w.Settings.InjectCounters; c != nil && len(w.Settings.Inject) > 0 {
		fds = []int{int(c.Fd())} // the run's injector counters (wire.Settings)
	}
	wait := p.begin(wire.THello, wire.Hello{Version: wire.Version, Backend: w.Backend, Rank: r, Ranks: w.N, Device: dev, Settings: w.Settings}, deadline, hr, fds...)
	return func() error {
		_, err := wait()
		return w.helloDone(r, dev, *hr, err)
	}
}

// helloDone checks rank r's hello reply hr (or the error it ended with).
func (w *World) helloDone(r, dev int, hr wire.HelloReply, err error) error {
	p := w.Procs[r]
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
	if dev == device.AnyDevice {
		// The backend chose (the first device with a code object).
		p.Device = hr.Info.Ordinal
	}
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
		// must exclude each other too (both report ROCr's agent UUID).
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

// procState is a process's state in words from /proc/<pid>/stat ("stopped"
// for a SIGSTOPped rank); "" when it cannot be read.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The state follows the command name, which is in parentheses and may
	// hold any byte: the last ')' ends it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	switch st := b[i+2]; st {
	case 'T':
		return "stopped"
	case 't':
		return "stopped by a tracer"
	case 'D':
		return "in uninterruptible sleep (D)"
	case 'Z':
		return "a zombie"
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	default:
		return "state " + string(st)
	}
}

// startEvent is the world event of a world start that failed on one rank
// (st), for case c, with the start's deadline limit: the rank, its pid, its
// signal and evidence (stderr tail, Go dump), and st.Blame set to the
// words the case's detail and the event share.
func startEvent(id string, ranks int, st *StartError, limit time.Duration) report.WorldEvent {
	e := report.WorldEvent{Kind: report.EventStartError, Ranks: ranks, Case: id}
	var de *DeadError
	var te *TimeoutError
	var pe *ProtocolError
	rank := -1
	switch {
	case errors.As(st.Err, &de):
		e.Kind, rank = report.EventStartCrash, de.Rank
		st.Blame = st.Err.Error()
		if first, rest, _ := strings.Cut(st.Death.Summary, "; "); first != "" {
			// "rank 1 (pid N) killed by SIGSEGV before its hello; Go fault dump: …"
			st.Blame = strings.TrimSuffix(first+" before its "+de.What+"; "+rest, "; ")
		}
		e.Signal, e.GoDump = st.Death.Signal, st.Death.GoDump
	case errors.As(st.Err, &te):
		e.Kind, rank = report.EventStartHang, te.Rank
		p := st.World.Procs[te.Rank]
		st.Blame = fmt.Sprintf("rank %d (pid %d) did not answer %s within %s", te.Rank, p.Pid, te.What, limit)
		if st.State != "" {
			st.Blame += "; it was " + st.State + " when the start gave up"
		}
		p.WaitExit(time.Second)
		e.GoDump = Classify(p).GoDump
	case errors.As(st.Err, &pe):
		rank = pe.Rank
		st.Blame = fmt.Sprintf("rank %d (pid %d) spoke garbage in its hello: %v", pe.Rank, st.World.Procs[pe.Rank].Pid, pe.Err)
	default:
		st.Blame = st.Error()
	}
	e.Detail = fmt.Sprintf("world start of %d ranks for %s: %s", ranks, id, st.Blame)
	if rank >= 0 && rank < len(st.World.Procs) {
		p := st.World.Procs[rank]
		e.Rank, e.Pid = &rank, p.Pid
		e.StderrTail = lastBytes(p.Stderr.String(), 2048)
	}
	return e
}

// StartError: a rank of a starting world died (or stopped answering, or
// spoke garbage) before the world was ready. World is killed but not
// closed, so its ranks' stderr and traces can still be read for the
// evidence; whoever gets a StartError closes World. It is classified as
// what went wrong (Err): a rank death is a crash, a rank that stopped
// answering a timeout, a malformed handshake an error.
type StartError struct {
	World *World
	Err   error
	Death Death // the first dead rank's classification
	// State is the process state of a rank that did not answer its hello
	// when the start gave up on it ("stopped" for a SIGSTOPped rank), read
	// before the world was killed; "" when unknown or not a hang.
	State string
	// Blame names the rank the start failed on, its pid and what it did
	// (Runner.startWorld words it, with the start's deadline); "" until then.
	Blame string
}

func (e *StartError) Error() string {
	if e.Death.Summary != "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Death.Summary)
	}
	return e.Err.Error()
}
func (e *StartError) Unwrap() error { return e.Err }

// Outcome is what a case that could not get its world ends with.
func (e *StartError) Outcome() report.Outcome { return e.outcome() }

func (e *StartError) outcome() report.Outcome { return classOf(e.Err).outcome() }
func (*StartError) fatal() bool               { return true } // its world is killed
func (e *StartError) weight() int             { return classOf(e.Err).weight() }

// startFailed ends a world whose handshake failed. An error after which
// the ranks' state is unknown (a rank died, stopped answering or spoke
// garbage) becomes a StartError that keeps the world's evidence; anything
// else (a backend that cannot open: SkipError) closes the world and
// returns err as it was.
func (w *World) startFailed(err error) error {
	if !isWorldFatal(err) {
		w.Close()
		return err
	}
	st := &StartError{World: w, Err: err}
	var te *TimeoutError
	if errors.As(err, &te) {
		st.State = procState(w.Procs[te.Rank].Pid)
	}
	w.Kill(200*time.Millisecond, err)
	var de *DeadError
	if errors.As(err, &de) {
		// Only the rank that died: the others were just killed by Kill.
		w.Procs[de.Rank].WaitExit(3 * time.Second)
		st.Death = Classify(w.Procs[de.Rank])
	}
	return st
}

// CloseStart closes the world a StartError kept open; any other error is
// left alone. For callers that only want to know whether a world starts.
func CloseStart(err error) {
	var st *StartError
	if errors.As(err, &st) {
		st.World.Close()
	}
}

// lookWorld samples the progress of w's ranks: their trace sequence
// numbers (one pread of each ring's header) and CPU time (/proc/<pid>/stat).
func lookWorld(w *World) progress {
	pr := progress{at: time.Now()}
	for _, p := range w.Procs {
		var seq uint64
		if p.Trace != nil {
			if s, err := trace.SharedSeq(p.Trace); err == nil {
				seq = s
			}
		}
		cpu := cpuTime(p.Pid)
		pr.runnable = pr.runnable || runnable(p.Pid)
		pr.seq += seq
		pr.cpu += cpu
		pr.seqs = append(pr.seqs, seq)
		pr.cpus = append(pr.cpus, cpu)
	}
	return pr
}

// blockedIn is the traced call rank r of w is in (its innermost record in
// flight that is not a request), "" when none: read only when the rank
// showed no progress, as it reads the whole ring.
func blockedIn(w *World, r int) string {
	if r >= len(w.Procs) || w.Procs[r].Trace == nil || runnable(w.Procs[r].Pid) {
		return "" // a runnable thread is starved, not blocked
	}
	recs, err := trace.ReadShared(w.Procs[r].Trace, 0)
	if err != nil {
		return ""
	}
	var inner trace.Record
	for _, rec := range recs {
		if rec.InFlight && !strings.HasPrefix(rec.Name, "request.") && rec.Seq > inner.Seq {
			inner = rec
		}
	}
	return inner.Name
}
