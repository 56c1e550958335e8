// Package harness is the suite side: it spawns ranks by re-executing its own
// binary, brokers fds between them, enforces deadlines, classifies every
// ending and records results. It never loads a vendor GPU library.
package harness

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/harness/backends"
	"p2patomics/trace"
	"p2patomics/wire"
)

// RankEnv and RankArgv0 are the rank's sentinel (wire holds it: the parent
// must not import the rank side).
const (
	RankEnv   = wire.RankEnv
	RankArgv0 = wire.RankArgv0
)

// envAllow lists what a rank inherits whatever its backend; everything
// else is dropped unless a backend's runtime reads it (its row's EnvVars
// and EnvPrefixes, backends.EnvAllowed), so a stray variable in the suite's
// environment cannot change a rank's driver.
var envAllow = []string{"PATH", "HOME", "USER", "LANG", "LD_LIBRARY_PATH", "TMPDIR"}

func rankEnv(rank int) []string {
	env := []string{RankEnv + "=" + strconv.Itoa(rank), wire.ParentEnv + "=" + strconv.Itoa(os.Getpid()),
		"GOTRACEBACK=crash", "GOMAXPROCS=" + strconv.Itoa(max(2, runtime.NumCPU()))}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		ok := false
		for _, a := range envAllow {
			ok = ok || k == a
		}
		ok = ok || backends.EnvAllowed(k)
		if ok {
			env = append(env, kv)
		}
	}
	return env
}

// tail keeps the first and the last bytes written to it since Reset: a Go
// crash dump under GOTRACEBACK=crash runs to many KiB, and the line that
// names the signal is at its head while the end shows every thread.
type tail struct {
	mu   sync.Mutex
	head []byte
	buf  []byte
	max  int
	cut  bool
}

const headMax = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := headMax - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
		t.cut = true
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return string(t.head) + "\n…\n" + string(t.buf)
	}
	return string(t.head) + string(t.buf)
}

// Reset forgets what was captured (each case reports its own).
func (t *tail) Reset() {
	t.mu.Lock()
	t.head, t.buf, t.cut = t.head[:0], t.buf[:0], false
	t.mu.Unlock()
}

// Proc is one rank process as the suite sees it.
type Proc struct {
	Rank   int
	Device int
	Pid    int
	sock   int
	cmd    *exec.Cmd
	Stderr *tail
	Stdout *tail
	done   chan struct{} // closed when the process has been reaped
	state  *os.ProcessState
	pipes  sync.WaitGroup
	seq    uint32
	mu     sync.Mutex // serialises calls and Close
	// sacrificed is set when the case itself killed this rank (Sacrifice):
	// that death is what the case tests, not a crash.
	sacrificed atomic.Bool
	// Trace is the memfd holding the rank's API trace ring: the rank writes
	// it as it goes, so the parent can read it after any ending, SIGKILL
	// included.
	Trace *os.File
	// world is every rank of this one's world (NewWorld), whose watchdogs
	// a wait for this rank's reply also reads: a peer wedged in a call can
	// be what this rank's request waits on.
	world []*Proc
	// pat is its world's patience slot (World.pat), nil outside a world.
	pat *atomic.Pointer[patience]
	// late are the requests that timed out, whose replies may come late.
	late lateReplies
}

// spawnReq asks the spawner thread to start a rank.
type spawnReq struct {
	rank, device int
	reply        chan spawnRes
}

type spawnRes struct {
	p   *Proc
	err error
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan spawnReq)
)

// spawner starts every rank from one goroutine locked to its OS thread for
// the life of the suite: Pdeathsig fires when the *thread* that forked the
// child exits, so forking from an ordinary goroutine could kill a healthy
// rank whenever the Go scheduler retired that thread.
func spawner() {
	runtime.LockOSThread()
	for req := range spawnCh {
		p, err := startRank(req.rank, req.device)
		req.reply <- spawnRes{p, err}
	}
}

// ranksRefused, once RefuseRanks set it, is why no rank may start in this
// process: Spawn fails with it, so a world's start fails naming it.
var ranksRefused atomic.Pointer[string]

// RefuseRanks makes every later Spawn of this process fail with why. The
// suite binary's own Go tests (run in a child before every suite run, a
// GPU run's too) start no world (issue 52): their child says so here, in
// its own process, so a test that starts one fails, named, whatever the
// machine lets a rank read of its parent.
func RefuseRanks(why string) { ranksRefused.Store(&why) }

// Spawn starts rank r (on device dev) and returns once the process exists.
func Spawn(r, dev int) (*Proc, error) {
	if why := ranksRefused.Load(); why != nil {
		return nil, fmt.Errorf("harness: start rank %d: %s", r, *why)
	}
	spawnOnce.Do(func() { go spawner() })
	ch := make(chan spawnRes, 1)
	spawnCh <- spawnReq{r, dev, ch}
	res := <-ch
	return res.p, res.err
}

// startCmd starts a rank's process; tests replace it to inject a fork
// failure (EAGAIN under a process limit) or a death during world start.
var startCmd = (*exec.Cmd).Start

// startRank starts rank r's process on device dev: its socket (fd 3), its
// trace ring (fd 4), its stderr and stdout on private pipes.
func startRank(r, dev int) (*Proc, error) {
	ps, cs, err := wire.Socketpair()
	if err != nil {
		return nil, err
	}
	child := os.NewFile(uintptr(cs), "rank-sock")
	defer child.Close()
	tf, err := trace.CreateShared(fmt.Sprintf("rank%d", r))
	if err != nil {
		unix.Close(ps)
		return nil, err
	}
	p := &Proc{Rank: r, Device: dev, sock: ps, Trace: tf, Stderr: &tail{max: 16 << 10}, Stdout: &tail{max: 4 << 10}, done: make(chan struct{})}
	pp, err := newRankPipes()
	if err != nil {
		unix.Close(ps)
		tf.Close()
		return nil, err
	}
	cmd := rankCmd(r, child, tf, pp)
	if err := startCmd(cmd); err != nil {
		unix.Close(ps)
		tf.Close()
		pp.closeAll()
		return nil, fmt.Errorf("harness: start rank %d: %w", r, err)
	}
	pp.errW.Close()
	pp.outW.Close()
	p.cmd, p.Pid = cmd, cmd.Process.Pid
	p.pipes.Add(2)
	go drain(pp.errR, p.Stderr, &p.pipes)
	go drain(pp.outR, p.Stdout, &p.pipes)
	go func() {
		st, _ := cmd.Process.Wait()
		p.state = st
		p.pipes.Wait() // the dump is complete once both pipes hit EOF
		close(p.done)
	}()
	return p, nil
}

// rankPipes are a rank's stderr and stdout pipes: the parent reads the R
// ends, the rank writes the W ends.
type rankPipes struct{ errR, errW, outR, outW *os.File }

func newRankPipes() (*rankPipes, error) {
	var pp rankPipes
	var err error
	if pp.errR, pp.errW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("harness: pipe: %w", err)
	}
	if pp.outR, pp.outW, err = os.Pipe(); err != nil {
		pp.errR.Close()
		pp.errW.Close()
		return nil, fmt.Errorf("harness: pipe: %w", err)
	}
	return &pp, nil
}

func (pp *rankPipes) closeAll() {
	for _, f := range []*os.File{pp.errR, pp.errW, pp.outR, pp.outW} {
		f.Close()
	}
}

// rankCmd is rank r's command: this binary as p2patomics-rank, the
// allowlisted environment, its own process group, killed with the parent.
func rankCmd(r int, sock, tf *os.File, pp *rankPipes) *exec.Cmd {
	return &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{RankArgv0},
		Env:        rankEnv(r),
		Stdin:      nil,
		Stdout:     pp.outW,
		Stderr:     pp.errW,
		ExtraFiles: []*os.File{sock, tf}, // wire.RankSockFd (3), wire.RankTraceFd (4)
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true, // own process group: SIGQUIT/SIGKILL reach its threads' children too
			Pdeathsig: syscall.SIGKILL,
		},
	}
}

func drain(f *os.File, t *tail, wg *sync.WaitGroup) {
	defer wg.Done()
	defer f.Close()
	buf := make([]byte, 8192)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			t.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Alive reports whether the rank has not been reaped yet.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// WaitExit waits up to d for the process to be reaped.
func (p *Proc) WaitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Signal sends sig to the rank's process group.
func (p *Proc) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}

// Kill ends the rank the way IGT's runner does: SIGQUIT first, so the Go
// runtime prints every goroutine's stack (a free backtrace for the report),
// then SIGKILL after grace.
func (p *Proc) Kill(grace time.Duration) {
	if !p.Alive() {
		return
	}
	p.Signal(syscall.SIGQUIT)
	if p.WaitExit(grace) {
		return
	}
	p.Signal(syscall.SIGKILL)
	p.WaitExit(5 * time.Second)
}

// Close releases the socket; call after the process is gone.
func (p *Proc) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sock >= 0 {
		unix.Close(p.sock)
		p.sock = -1
	}
	if p.Trace != nil {
		p.Trace.Close()
		p.Trace = nil
	}
}

// State returns the wait status once reaped.
func (p *Proc) State() *os.ProcessState {
	if p.Alive() {
		return nil
	}
	return p.state
}

// Sacrifice SIGKILLs the rank on the case's behalf: a case that tests what
// outlives a rank (fdexchange.lifetime.owner_dies) kills one itself, and
// that death must not make the case a crash.
func (p *Proc) Sacrifice() {
	p.sacrificed.Store(true)
	p.Signal(syscall.SIGKILL)
}

// hungUp reports whether the rank is gone: reaped, or its end of the socket
// closed (the kernel closes a dying process's fds before its parent can
// reap it, so this sees a death the reaper has not caught up with yet).
func (p *Proc) hungUp() bool {
	if !p.Alive() {
		return true
	}
	if !p.mu.TryLock() {
		// A request is in flight (a goroutine the body left behind): it
		// will see the death itself; never wait behind it here.
		return false
	}
	defer p.mu.Unlock()
	if p.sock < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(p.sock), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP|unix.POLLERR) != 0
}

// lastBytes is the end of s, at most n bytes, marked when cut.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lateReplies are the requests of one rank that timed out: the only ones
// whose replies may still arrive, late, and be dropped.
type lateReplies struct {
	mu   sync.Mutex
	seqs map[uint32]bool
}

func (l *lateReplies) expect(seq uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seqs == nil {
		l.seqs = map[uint32]bool{}
	}
	l.seqs[seq] = true
}

// forget reports whether seq timed out (its late reply is dropped once).
func (l *lateReplies) forget(seq uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.seqs[seq]
	delete(l.seqs, seq)
	return ok
}
