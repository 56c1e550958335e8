package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// How long a wait for a rank's reply lasts (issue 48). A case's budget (its
// own Timeout, or a multiple of what the baseline recorded) is when the
// suite first asks whether the case is hung, not when it decides alone:
//
//   - The suite's own stalls never count against a rank. A gap in the
//     suite's monotonic clock between two of its own observations (a
//     SIGSTOP of the suite, a long GC or scheduling gap) longer than
//     stallSlack is added to every deadline (stallClock).
//   - A case whose world is still moving when its budget passes gets more
//     time, a step at a time, up to its own hard limit (Case.ownLimit: the
//     Timeout its spec wrote). Moving is any rank's trace sequence
//     advancing (every vendor call is traced into the ring the suite
//     reads) or its ranks together using at least cpuMoving of one CPU
//     (a spin-waiting litmus or ping-pong thread traces nothing but
//     burns CPU). A rank blocked in a wedged call does neither: it is cut
//     at its budget, as before.
//   - A watchdog report (internal/watchdog) still ends the wait at once.
const (
	// stallTick is how often the stall clock's own goroutine observes the
	// clock while nothing else does.
	stallTick = 50 * time.Millisecond
	// stallSlack: a gap between two observations longer than the longest
	// expected one (stallTick) by more than this is a stall of the suite,
	// and the whole excess is added to deadlines.
	stallSlack = 250 * time.Millisecond
	// progressWindow is the span over which a world's progress is judged.
	progressWindow = time.Second
	// cpuMoving is the share of one CPU the world's ranks must use over a
	// window to count as moving without tracing a call: a Go rank blocked
	// in a call uses well under 1% (its runtime's timers and the
	// watchdog's 20 ms tick), a spinning thread on a 2-core machine at
	// load 28 still gets about 7%.
	cpuMoving = 0.02
)

// stallClock measures the suite's own stalls: gaps between consecutive
// observations of its monotonic clock. The recv loop observes every
// watchPoll and a goroutine every stallTick, so the longest gap of a
// running suite is about stallTick.
type stallClock struct {
	now   func() time.Duration // monotonic time (fake in tests)
	mu    sync.Mutex
	last  time.Duration
	total time.Duration
	n     int // stalls seen
}

// observe records now and returns the total stall so far.
func (s *stallClock) observe() time.Duration {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != 0 {
		if gap := now - s.last; gap > stallTick+stallSlack {
			s.total += gap - stallTick
			s.n++
		}
	}
	if now > s.last {
		s.last = now
	}
	return s.total
}

var (
	monoStart  = time.Now()
	stalls     = &stallClock{now: func() time.Duration { return time.Since(monoStart) }}
	stallsOnce sync.Once
)

// watchStalls starts the stall clock's goroutine (once per suite).
func watchStalls() {
	stallsOnce.Do(func() {
		stalls.observe()
		go func() {
			for {
				time.Sleep(stallTick)
				stalls.observe()
			}
		}()
	})
}

// SuiteStalls is the total time the suite process was seen stalled and
// how many stalls, for the run's world events.
func SuiteStalls() (time.Duration, int) {
	stalls.mu.Lock()
	defer stalls.mu.Unlock()
	return stalls.total, stalls.n
}

// progress is one look at a world's ranks: their trace sequence numbers
// and CPU times, and the sums of each.
type progress struct {
	at   time.Time
	seq  uint64
	cpu  time.Duration
	seqs []uint64
	cpus []time.Duration
	// runnable: a thread of some rank was runnable when looked at (starved
	// of a CPU on a loaded machine, not blocked: it uses no CPU yet moves)
	runnable bool
}

// moved says whether the world moved between a and b, and how. It did when
// its ranks together traced a call or used cpuMoving of a CPU, unless one
// rank did neither while blocked in a traced call (blocked names the call
// rank r is in, "" for none): a rank wedged in an mmap is stuck however
// hard its peer spins waiting for it.
func moved(a, b progress, blocked func(r int) string) (bool, string) {
	span := b.at.Sub(a.at)
	idle := func(d time.Duration) bool { return span <= 0 || float64(d) < cpuMoving*float64(span) }
	for r := range min(len(a.seqs), len(b.seqs), len(a.cpus), len(b.cpus)) {
		if b.seqs[r] > a.seqs[r] || !idle(b.cpus[r]-a.cpus[r]) || blocked == nil {
			continue
		}
		if call := blocked(r); call != "" {
			return false, fmt.Sprintf("rank %d is blocked in %s: no traced call and %.0f ms of CPU in %.1f s", r, call, float64(b.cpus[r]-a.cpus[r])/1e6, span.Seconds())
		}
	}
	switch {
	case b.seq > a.seq:
		return true, fmt.Sprintf("%d traced calls in %.1f s", b.seq-a.seq, span.Seconds())
	case !idle(b.cpu - a.cpu):
		return true, fmt.Sprintf("%.0f ms of CPU in %.1f s", float64(b.cpu-a.cpu)/1e6, span.Seconds())
	case a.runnable && b.runnable:
		// Runnable at both looks: a starved spinner is runnable nearly
		// always, a blocked rank's runtime timer thread only for moments.
		return true, fmt.Sprintf("a rank runnable but starved of a CPU (%.0f ms of CPU in %.1f s)", float64(b.cpu-a.cpu)/1e6, span.Seconds())
	}
	return false, fmt.Sprintf("no traced call and %.0f ms of CPU in %.1f s", float64(b.cpu-a.cpu)/1e6, span.Seconds())
}

// patience is one case's wait policy, shared by the waits of its world's
// ranks: where its budget ends, how far progress may carry it (hard), and
// the progress samples that decide. The runner installs one on the world
// for each case (World.patient) and removes it after.
type patience struct {
	now     func() time.Time
	look    func() progress // a fresh sample of the world
	blocked func(r int) string
	stalls  func() time.Duration
	hard    time.Time     // never waited past (plus the suite's stalls)
	step    time.Duration // more time granted per look that shows progress

	mu     sync.Mutex
	stall0 time.Duration // the stall total when the case began
	extra  time.Duration // granted by progress so far
	prev   progress      // the window before cur
	cur    progress      // the start of the current window
	grants int
	why    string // the last grant's or refusal's reason
}

func newPatience(now func() time.Time, look func() progress, blocked func(r int) string, st func() time.Duration, hard time.Time, step time.Duration) *patience {
	p := &patience{now: now, look: look, blocked: blocked, stalls: st, hard: hard, step: step, stall0: st()}
	p.cur = look()
	p.prev = p.cur
	return p
}

// tick rolls the progress windows; called from the wait loops.
func (p *patience) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now().Sub(p.cur.at) >= progressWindow {
		p.prev, p.cur = p.cur, p.look()
	}
}

// shift is how far every deadline of the case has moved: the suite's
// stalls since the case began plus what progress was granted.
func (p *patience) shift() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalls() - p.stall0 + p.extra
}

// extend is asked when a wait's deadline (as shifted) passed: it grants one
// step more when the world moved over the last window and the hard limit
// allows, and reports the new shift; ok false means the wait gives up.
func (p *patience) extend(deadline time.Time) (shift time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	st := p.stalls() - p.stall0
	if now.Before(deadline.Add(st + p.extra)) {
		return st + p.extra, true // another wait already extended it
	}
	hard := p.hard.Add(st)
	if !now.Before(hard) {
		p.why = fmt.Sprintf("its own limit passed after %d extensions", p.grants)
		return 0, false
	}
	s := p.look()
	base := p.cur
	if s.at.Sub(base.at) < progressWindow/2 {
		base = p.prev // the current window is too young to judge
	}
	mv, how := moved(base, s, p.blocked)
	if !mv {
		p.why = "no progress: " + how
		return 0, false
	}
	grant := now.Add(p.step)
	if grant.After(hard) {
		grant = hard
	}
	// The shift only grows: waits with later deadlines (teardown's) share
	// it with the body's.
	p.extra = max(p.extra, grant.Sub(deadline)-st)
	p.grants++
	p.why = fmt.Sprintf("extended %d times while moving (last: %s)", p.grants, how)
	p.prev, p.cur = base, s
	return st + p.extra, true
}

// note is what the case's detail says about its patience: its budget
// extended, or its deadline moved a second or more for the suite's stalls;
// "" otherwise.
func (p *patience) note() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stalls() - p.stall0
	if p.grants == 0 && st < time.Second {
		return ""
	}
	s := ""
	if st >= time.Second {
		s = fmt.Sprintf("deadline moved %.1f s for the suite's own stalls", st.Seconds())
	}
	if p.grants > 0 {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("budget extended %d times (%.1f s) while its ranks moved", p.grants, p.extra.Seconds())
	}
	return s
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times
// (100 on every Linux ABI this runs on).
const clockTick = 10 * time.Millisecond

// cpuTime is the process's user plus system CPU time, 0 when it cannot be
// read (a reaped rank).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return statCPU(string(b))
}

// statCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat
// line; the command name in parentheses may hold spaces, so the fields are
// counted after its last ')'.
func statCPU(s string) time.Duration {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+st) * clockTick
}

// runnable reports whether any thread of the process is runnable (state R
// in /proc/<pid>/task/<tid>/stat): on a loaded machine a spinning thread
// may get no CPU for a second and more, which is not a blocked call.
func runnable(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'R' {
			return true
		}
	}
	return false
}
