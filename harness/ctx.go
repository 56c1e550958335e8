package harness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/kernels"
	"p2patomics/wire"
)

// Ctx is what a case body works with: the world, a deadline, and
// allocation and launch helpers that broker fds between ranks.
type Ctx struct {
	W        *World
	Kind     string
	Seed     int64
	Deadline time.Time
	Metrics  map[string]Metric
	// Clocks makes every launch and copy sample its device's clock (perf
	// cases); what comes back is kept per case and attached to each metric.
	Clocks bool
	mu     sync.Mutex
	notes  []string
	// Evidence grades the case's pass (report.Result.Evidence); only
	// mutation-scored cases set it, and the runner keeps it on a pass only.
	Evidence report.Evidence
	wit      map[int]*witBuf // per rank: the witness slots (NewWitness)
	held     held            // what the case allocated, freed at teardown
	launches launchLog       // clocks seen, launches the injector dropped
	reads    readCheck       // the read-back integrity check (readcheck.go)
}

// held is what a case allocated in its ranks, each buffer by rank; the
// runner frees it at teardown (peers first). Its own lock: a body's
// ranks allocate at once.
type held struct {
	mu   sync.Mutex
	bufs []owned
}

type owned struct{ rank, buf int }

func (h *held) add(r, buf int) {
	h.mu.Lock()
	h.bufs = append(h.bufs, owned{r, buf})
	h.mu.Unlock()
}

// forget drops one buffer freed early (FreeBuf).
func (h *held) forget(r, buf int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, o := range h.bufs {
		if o.rank == r && o.buf == buf {
			h.bufs = append(h.bufs[:i], h.bufs[i+1:]...)
			return
		}
	}
}

// take hands every held buffer over (to teardown), in allocation order.
func (h *held) take() []owned {
	h.mu.Lock()
	defer h.mu.Unlock()
	bufs := h.bufs
	h.bufs = nil
	return bufs
}

// launchLog is what the ranks' launch and copy replies said beside their
// result: the device clocks seen (perf cases), and the launches the
// injector dropped ("rank R's K (rule)", for the control witness). Its own
// lock: a Run's launches reply at once.
type launchLog struct {
	mu      sync.Mutex
	clock   *report.Clock
	dropped []string
}

// clockSeen folds a rank's clock samples (device dev) into the case's.
func (l *launchLog) clockSeen(dev int, cs *wire.ClockStats) {
	if cs == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock = l.clock.Add(dev, cs.MinMHz, cs.MaxMHz, cs.N, cs.Reasons, cs.Error)
}

// clockNow is a copy of the clocks seen so far, nil when none.
func (l *launchLog) clockNow() *report.Clock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clock == nil {
		return nil
	}
	cl := *l.clock
	return &cl
}

// drop records a launch the rank says the injector dropped.
func (l *launchLog) drop(rank int, kernel, rule string) {
	if rule == "" {
		return
	}
	l.mu.Lock()
	l.dropped = append(l.dropped, fmt.Sprintf("rank %d's %s (%s)", rank, kernel, rule))
	l.mu.Unlock()
}

// drops are the launches the injector dropped so far.
func (l *launchLog) drops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Metric is one measurement a case reports (report.Metric's input).
type Metric struct {
	Unit    string
	Better  report.Direction // declared with the metric (report.MetricKind)
	Samples []float64
	Method  string
	Clock   *report.Clock // the device clocks seen in the case so far
	// Ceiling is the physical limit of a bandwidth metric (Percent is
	// filled in when the samples are summarised); nil when none is known.
	Ceiling *report.Ceiling
}

// Mem is one allocation shared across ranks: Bufs[r] is the buffer id of
// the same memory in rank r (the owner's own or a peer's import).
type Mem struct {
	Owner int
	Size  uint64
	Bufs  []int
}

// N is the number of ranks.
func (c *Ctx) N() int { return c.W.N }

// Note adds a line to the case's detail.
func (c *Ctx) Note(format string, a ...any) { c.notes = append(c.notes, fmt.Sprintf(format, a...)) }

// Backend is the descriptor of the world's backend (harness/backends): what
// a case asks instead of comparing names (Backend().GPU). A world of a
// backend no row has gets an empty row (no GPU, no kinds) rather than nil.
func (c *Ctx) Backend() *backends.Backend {
	if b := backends.Lookup(c.W.Backend); b != nil {
		return b
	}
	return &backends.Backend{Name: c.W.Backend}
}

// KindSpec is the case's kind's properties (KindSpec().HostMemory, ...).
func (c *Ctx) KindSpec() backends.KindSpec { return backends.KindSpecOf(c.W.Backend, c.Kind) }

// Alloc allocates in rank r and returns its buffer id plus the raw reply and
// received fd (-1 if none). The caller owns the fd.
func alloc(c *Ctx, r int, kind string, size uint64) (wire.AllocReply, int, error) {
	var ar wire.AllocReply
	m, err := c.W.Procs[r].call(wire.TAlloc, wire.Alloc{Kind: kind, Size: size}, c.Deadline, &ar)
	if err != nil {
		return ar, -1, err
	}
	fd := -1
	if ar.HasFd {
		if len(m.Fds) != 1 {
			m.CloseFds()
			return ar, -1, &ProtocolError{r, fmt.Errorf("%w: alloc reply names an fd but %d arrived", wire.ErrMalformed, len(m.Fds))}
		}
		fd = m.Fds[0]
	} else {
		m.CloseFds()
	}
	c.held.add(r, ar.Buf)
	return ar, fd, nil
}

// Local allocates size bytes of the case's kind in rank r only.
func (c *Ctx) Local(r int, size uint64) (int, error) { return localKind(c, r, c.Kind, size) }

func localKind(c *Ctx, r int, kind string, size uint64) (int, error) {
	ar, fd, err := alloc(c, r, kind, size)
	if fd >= 0 {
		unix.Close(fd)
	}
	return ar.Buf, err
}

// ScratchWords allocates size bytes in rank r's device memory, whatever
// kind the case tests: the backend's first DeviceMemory kind (cuda vmm, hsa
// fine, hip pinned, host memfd). A reduction's target lives here: on
// vmm-host the sum kernel's 135 000 atomic adds to one word of host memory
// crossed PCIe one by one (145 ms a check of 256 MiB, two thirds of the
// one-GPU suite's host-memory copy time).
func (c *Ctx) ScratchWords(r int, size uint64) (int, error) {
	if k := c.Backend().ScratchKind(); k != "" {
		return localKind(c, r, k, size)
	}
	return c.Local(r, size)
}

// Shared allocates in owner and maps it into every other rank (the star
// broker: the owner's fd goes to each peer as SCM_RIGHTS). grant=false maps
// it into peers without access (negative control).
func (c *Ctx) Shared(owner int, size uint64, grant bool) (*Mem, error) {
	return c.SharedKind(owner, c.Kind, size, grant)
}

// SharedKind is Shared with an explicit kind.
func (c *Ctx) SharedKind(owner int, kind string, size uint64, grant bool) (*Mem, error) {
	ar, fd, err := alloc(c, owner, kind, size)
	if err != nil {
		return nil, err
	}
	if fd >= 0 {
		defer closeLater(fd)
	}
	m := &Mem{Owner: owner, Size: ar.Size, Bufs: make([]int, c.N())}
	m.Bufs[owner] = ar.Buf
	errs := make([]error, c.N())
	var wg sync.WaitGroup
	for r := 0; r < c.N(); r++ {
		if r == owner {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := wire.Import{Kind: kind, Peer: owner, Size: ar.Size, HasFd: fd >= 0, Handle: ar.Handle, Meta: ar.Meta, Grant: grant}
			var fds []int
			if fd >= 0 {
				fds = []int{fd} // the kernel dups it into the peer
			}
			var br wire.BufReply
			_, err := c.W.Procs[r].call(wire.TImport, req, c.Deadline, &br, fds...)
			if err != nil {
				errs[r] = err
				return
			}
			c.mu.Lock()
			m.Bufs[r] = br.Buf
			c.held.add(r, br.Buf)
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	return m, firstErr(errs)
}

// SharedAll allocates size bytes in every rank at once and maps each into
// every other rank: first all allocations in parallel (one per rank), then
// all imports in parallel (each rank imports its peers' in turn). It is the
// warm-world shape of the speed target, without serialising allocations.
func (c *Ctx) SharedAll(size uint64) ([]*Mem, error) {
	n := c.N()
	mems := make([]*Mem, n)
	fds := make([]int, n)
	replies := make([]wire.AllocReply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[r], fds[r], errs[r] = alloc(c, r, c.Kind, size)
		}()
	}
	wg.Wait()
	defer closeLater(fds...)
	if err := firstErr(errs); err != nil {
		return nil, err
	}
	for o := 0; o < n; o++ {
		mems[o] = &Mem{Owner: o, Size: replies[o].Size, Bufs: make([]int, n)}
		mems[o].Bufs[o] = replies[o].Buf
	}
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := 0; o < n; o++ {
				if o == r {
					continue
				}
				ar := replies[o]
				req := wire.Import{Kind: c.Kind, Peer: o, Size: ar.Size, HasFd: fds[o] >= 0, Handle: ar.Handle, Meta: ar.Meta, Grant: true}
				var f []int
				if fds[o] >= 0 {
					f = []int{fds[o]}
				}
				var br wire.BufReply
				if _, err := c.W.Procs[r].call(wire.TImport, req, c.Deadline, &br, f...); err != nil {
					errs[r] = err
					return
				}
				c.mu.Lock()
				mems[o].Bufs[r] = br.Buf
				c.held.add(r, br.Buf)
				c.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return mems, firstErr(errs)
}

// closeLater closes the suite's copies of exported fds off the case's
// critical path. Once every importer has mapped the memory and closed its
// own copy, the suite holds the last reference, and the last close of a
// CUDA VMM export runs the driver's release: 1.6 ms on H200 (measured in a
// traced warm case on the GPU machine), which the next request of the case
// used to wait for.
func closeLater(fds ...int) {
	var open []int
	for _, fd := range fds {
		if fd >= 0 {
			open = append(open, fd)
		}
	}
	if len(open) == 0 {
		return
	}
	go func() {
		for _, fd := range open {
			unix.Close(fd)
		}
	}()
}

// ShareFd allocates in owner and sends the raw exported fd to every peer,
// which reports /proc/self/fdinfo for it (the dma-buf identity check).
func (c *Ctx) ShareFd(owner int, kind string, size uint64) (own map[string]string, peers []map[string]string, err error) {
	_, fd, err := alloc(c, owner, kind, size)
	if err != nil {
		return nil, nil, err
	}
	if fd < 0 {
		return nil, nil, Failf("%s export carried no fd", kind)
	}
	defer unix.Close(fd)
	peers = make([]map[string]string, c.N())
	for r := 0; r < c.N(); r++ {
		var fr wire.FdInfoReply
		if _, err := c.W.Procs[r].call(wire.TFdInfo, nil, c.Deadline, &fr, fd); err != nil {
			return nil, nil, err
		}
		peers[r] = fr.Info
	}
	return peers[owner], peers, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Arg is a kernel argument (a buffer pointer or a value).
type Arg = wire.Arg

// P is a pointer argument: buffer buf at byte offset off.
func P(buf int, off uint64) wire.Arg { return wire.Arg{Buf: buf, Off: off} }

// V is a value argument.
func V(v uint64) wire.Arg { return wire.Arg{Buf: -1, Val: v} }

// Null is a null pointer argument, for kernels whose pointer is optional
// (cas's out, racy's bar): said explicitly, so a misspelled pointer name
// cannot quietly become one.
func Null() wire.Arg { return wire.Arg{Buf: -1} }

// Launch describes one rank's kernel launch.
type Launch struct {
	Rank   int
	Kernel string
	Grid   uint32
	Block  uint32
	// Args names every argument of the kernel's manifest entry, no more.
	Args map[string]wire.Arg
	// CPU, when set, has the rank's CPU add to a word while the kernel runs.
	CPU *wire.CPUAtomics
}

// wire orders the arguments as the manifest does. Names must match the
// manifest exactly: a missing, unknown or misspelled argument, or a pointer
// argument given a value other than Null, is an error here, before
// anything reaches a rank.
func (l Launch) wire() (wire.Launch, error) {
	k, ok := kernels.Lookup(l.Kernel)
	if !ok {
		return wire.Launch{}, fmt.Errorf("kernel %q is not in the manifest", l.Kernel)
	}
	for name := range l.Args {
		if k.ArgIndex(name) < 0 {
			return wire.Launch{}, fmt.Errorf("kernel %s has no argument %q (it takes %s)", k.Name, name, argNames(k))
		}
	}
	args := make([]wire.Arg, len(k.Args))
	for i, a := range k.Args {
		v, ok := l.Args[a.Name]
		switch {
		case !ok:
			return wire.Launch{}, fmt.Errorf("kernel %s: argument %s not given (it takes %s)", k.Name, a.Name, argNames(k))
		case a.Ptr && v.Buf < 0 && v.Val != 0:
			return wire.Launch{}, fmt.Errorf("kernel %s: pointer argument %s given the value %#x (want P(buf, off) or Null())", k.Name, a.Name, v.Val)
		case !a.Ptr && v.Buf >= 0:
			return wire.Launch{}, fmt.Errorf("kernel %s: value argument %s given buffer %d (want V(value))", k.Name, a.Name, v.Buf)
		}
		args[i] = v
	}
	return wire.Launch{Kernel: l.Kernel, Grid: l.Grid, Block: l.Block, Args: args, CPU: l.CPU}, nil
}

func argNames(k kernels.Kernel) string {
	names := make([]string, len(k.Args))
	for i, a := range k.Args {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// Run launches every given kernel at once (one per rank) and waits for all.
// Elapsed times come back per launch.
func (c *Ctx) Run(ls ...Launch) ([]time.Duration, error) {
	els, _, err := c.RunTimed(ls...)
	return els, err
}

// RunTimed is Run that also returns each launch's window on the machine's
// one clock (see Span).
func (c *Ctx) RunTimed(ls ...Launch) ([]time.Duration, []Window, error) {
	reqs := make([]wire.Launch, len(ls))
	for i, l := range ls {
		w, err := l.wire()
		if err != nil {
			return nil, nil, err
		}
		w.Clocks = c.Clocks
		reqs[i] = w
	}
	out := make([]time.Duration, len(ls))
	wins := make([]Window, len(ls))
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var t wire.Timing
			_, errs[i] = c.W.Procs[l.Rank].call(wire.TLaunch, reqs[i], c.Deadline, &t)
			out[i] = time.Duration(t.ElapsedNs)
			wins[i] = Window{t.StartNs, t.EndNs}
			c.launches.clockSeen(c.W.Procs[l.Rank].Device, t.Clock)
			c.launches.drop(l.Rank, l.Kernel, t.Dropped)
		}()
	}
	wg.Wait()
	return out, wins, worstErr(errs)
}

// worstErr is the error that explains the most (classified.weight): a
// rank that died or faulted over one that timed out waiting for it.
func worstErr(errs []error) error { return heaviest(errs) }

// Write writes bytes into a rank's buffer.
func (c *Ctx) Write(r, buf int, off uint64, p []byte) error {
	for done := 0; done < len(p); {
		k := min(len(p)-done, wire.MaxData)
		if _, err := c.W.Procs[r].call(wire.TWrite, wire.Write{Buf: buf, Off: off + uint64(done), Data: p[done : done+k]}, c.Deadline, nil); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// Zero clears n bytes.
func (c *Ctx) Zero(r, buf int, off, n uint64) error { return c.Write(r, buf, off, make([]byte, n)) }

// PutU64 writes one word.
func (c *Ctx) PutU64(r, buf int, off, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return c.Write(r, buf, off, b[:])
}

// Copy runs the backend's copy engine in rank r.
func (c *Ctx) Copy(r, dst int, dstOff uint64, src int, srcOff, n uint64) (time.Duration, string, error) {
	el, _, method, err := c.CopyTimed(r, dst, dstOff, src, srcOff, n)
	return el, method, err
}

// CopyTimed is Copy that also returns the copy's window on the machine's
// one clock (see Span).
func (c *Ctx) CopyTimed(r, dst int, dstOff uint64, src int, srcOff, n uint64) (time.Duration, Window, string, error) {
	var t wire.Timing
	_, err := c.W.Procs[r].call(wire.TCopy, wire.Copy{Dst: dst, DstOff: dstOff, Src: src, SrcOff: srcOff, N: n, Clocks: c.Clocks}, c.Deadline, &t)
	c.launches.clockSeen(c.W.Procs[r].Device, t.Clock)
	return time.Duration(t.ElapsedNs), Window{t.StartNs, t.EndNs}, t.Method, err
}

// Canary asks rank r to misbehave.
func (c *Ctx) Canary(r int, how string) error {
	_, err := c.W.Procs[r].call(wire.TCanary, wire.Canary{How: how}, c.Deadline, nil)
	return err
}

// memInfo asks rank r for its memory and fd counts (the leak check).
func memInfo(c *Ctx, r int) (wire.MemInfo, error) {
	var mi wire.MemInfo
	_, err := c.W.Procs[r].call(wire.TMemInfo, nil, c.Deadline, &mi)
	return mi, err
}

// FreeBuf releases one buffer early (lifetime cases).
func (c *Ctx) FreeBuf(r, buf int) error {
	c.held.forget(r, buf)
	_, err := c.W.Procs[r].call(wire.TFree, wire.Free{Buf: buf}, c.Deadline, nil)
	return err
}

// Metric records samples for the metric k declares: its name, unit and
// the direction every judge reads (report.Metric.Better), declared here
// and nowhere else.
func (c *Ctx) Metric(k report.MetricKind, method string, samples ...float64) {
	name := k.Name
	if c.Metrics == nil {
		c.Metrics = map[string]Metric{}
	}
	m := c.Metrics[name]
	m.Unit, m.Better, m.Method = k.Unit, k.Better, method
	m.Samples = append(m.Samples, samples...)
	if cl := c.launches.clockNow(); cl != nil {
		m.Clock = cl
	}
	c.Metrics[name] = m
}

// teardown frees everything the case allocated, peers first so an owner's
// memory is never freed under a live import.
func teardown(c *Ctx) error {
	var errs []error
	bufs := c.held.take()
	for i := len(bufs) - 1; i >= 0; i-- {
		o := bufs[i]
		if !c.W.Procs[o.rank].Alive() {
			continue
		}
		if _, err := c.W.Procs[o.rank].call(wire.TFree, wire.Free{Buf: o.buf}, c.Deadline, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NeedHostAtomics skips the case when some rank's device cannot do atomics
// on host memory that are atomic with the CPU's. The rank's backend answers
// (device.Caps.HostAtomics) and its reason names the deciding attribute.
func (c *Ctx) NeedHostAtomics() error {
	for r := range c.W.Procs {
		if h := c.W.Infos[r].Caps.HostAtomics; !h.OK {
			return Skipf("%s", h.Reason)
		}
	}
	return nil
}

// NeedPeer skips the case when some rank's device cannot reach another
// rank's device: peer access always, system-scope atomics over the link
// when atomics is set. Each rank's backend answered per peer device
// (device.Caps.Peers) with the reason, which becomes the skip's detail.
func (c *Ctx) NeedPeer(atomics bool) error {
	for r, p := range c.W.Procs {
		caps := c.W.Infos[r].Caps
		for _, q := range c.W.Procs {
			pr := caps.Peer(p.Device, q.Device)
			need := pr.Access
			if atomics && need.OK {
				need = pr.Atomics
			}
			if !need.OK {
				return Skipf("%s", need.Reason)
			}
		}
	}
	return nil
}

// readRaw reads n bytes from a rank's buffer, in protocol-sized chunks,
// unverified: the reads whose bytes the caller compares in full with what
// it knows (the check frame, a witness) use it.
func readRaw(c *Ctx, r, buf int, off, n uint64) ([]byte, error) {
	out := make([]byte, 0, n)
	for done := uint64(0); done < n; {
		k := min(n-done, wire.MaxData)
		var d wire.Data
		if _, err := c.W.Procs[r].call(wire.TRead, wire.Read{Buf: buf, Off: off + done, Len: k}, c.Deadline, &d); err != nil {
			return nil, err
		}
		if uint64(len(d.Data)) != k {
			// A reply of the wrong length is the rank's protocol error,
			// never an index past the end in U64.
			return nil, &ProtocolError{r, fmt.Errorf("%w: read of %d bytes answered with %d", wire.ErrMalformed, k, len(d.Data))}
		}
		out = append(out, d.Data...)
		done += k
	}
	return out, nil
}

// readCheck is a case's read-back integrity check: per rank, the frame of
// known words the device's sum lands in. Its own lock; the Ctx it checks
// for is passed in (its launches, writes and deadline).
type readCheck struct {
	mu     sync.Mutex
	frames map[int]*readFrame // per rank: the read check's frame
}

type readFrame struct {
	mu  sync.Mutex
	buf int
}

type witBuf struct {
	buf  int
	next atomic.Uint64
}
