// Package health tells the suite whether the machine is still trustworthy
// before and after each GPU case, without loading any GPU library: new
// kernel-log lines (NVIDIA Xid, amdgpu resets), NVIDIA's procfs GPU list,
// nvidia-smi's ECC, retired-page and throttle counters where it is
// installed, and amdgpu's sysfs RAS error counters and devcoredumps.
//
// A GPU that fell off the bus, reset, or logged an uncorrectable memory
// error makes the Verdict Untrustworthy, and the suite stops with `abort`
// for the cases left instead of blaming them. Application faults (Xid
// 13/31/43, amdgpu VM faults, IOMMU faults) are what a failing or canary
// case causes; they are Notes, never a reason to stop.
package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"p2patomics/harness/kmsg"
)

// Snapshot is what one Check read. The zero Snapshot means "nothing known
// yet": a Check against it compares no counters. It is plain data (JSON).
type Snapshot struct {
	Taken    time.Time `json:"taken"`
	NVIDIA   []NVGPU   `json:"nvidia,omitempty"`
	SMI      []SMIGPU  `json:"nvidia_smi,omitempty"`
	SMITaken time.Time `json:"nvidia_smi_taken,omitzero"`
	SMIError string    `json:"nvidia_smi_error,omitempty"`
	AMD      []AMDCard `json:"amdgpu,omitempty"`
	Coredump []string  `json:"devcoredump,omitempty"` // amdgpu devcoredump entries present
}

// NVGPU is one /proc/driver/nvidia/gpus/<bus>/information.
type NVGPU struct {
	Bus      string `json:"bus"`
	Model    string `json:"model,omitempty"`
	UUID     string `json:"uuid,omitempty"`
	Excluded bool   `json:"excluded,omitempty"`
}

// SMIGPU is one nvidia-smi row. -1 means not reported ([N/A]).
type SMIGPU struct {
	UUID           string `json:"uuid"`
	ECCUncorrected int64  `json:"ecc_uncorrected_volatile"`
	RetiredPending string `json:"retired_pages_pending,omitempty"` // "Yes", "No" or ""
	Throttle       int64  `json:"throttle_reasons"`                // bit mask, -1 unknown
}

// AMDCard is one amdgpu DRM card.
type AMDCard struct {
	Card string              `json:"card"`
	PCI  string              `json:"pci"`
	RAS  map[string]RASCount `json:"ras,omitempty"` // block ("umc", "gfx", ...) -> counts
}

// RASCount is one ras/<block>_err_count file.
type RASCount struct {
	UE int64 `json:"ue"` // uncorrectable
	CE int64 `json:"ce"` // correctable
}

// Verdict is the answer: Untrustworthy with its first Reason, and Notes for
// everything worth showing that does not stop the run.
type Verdict struct {
	Untrustworthy bool     `json:"untrustworthy"`
	Reason        string   `json:"reason,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

func (v *Verdict) bad(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if !v.Untrustworthy {
		v.Untrustworthy, v.Reason = true, msg
		return
	}
	v.Notes = append(v.Notes, msg)
}

func (v *Verdict) note(format string, a ...any) { v.Notes = append(v.Notes, fmt.Sprintf(format, a...)) }

// XidUntrustworthy lists the Xids after which results from the GPU are not
// to be trusted (NVIDIA's Xid catalogue: the recovery action is a GPU reset
// or reboot). Others (13, 31, 43, 45, 68, 69, ...) are faults of the
// application that caused them.
var XidUntrustworthy = map[int]string{
	48:  "uncorrectable ECC (double-bit) error",
	61:  "internal micro-controller breakpoint/warning",
	62:  "internal micro-controller halt",
	64:  "ECC page retirement or row remapping failure",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	94:  "contained uncorrectable ECC error",
	95:  "uncontained uncorrectable ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
	140: "unrecovered ECC error",
}

// Throttle bits of clocks_throttle_reasons.active worth a note (the
// software power cap, idle and application-clock bits are routine).
var throttleNotes = []struct {
	bit  int64
	name string
}{
	{0x8, "HW slowdown"}, {0x20, "SW thermal slowdown"}, {0x40, "HW thermal slowdown"}, {0x80, "HW power brake"},
}

// Monitor reads the machine. The zero value is not ready; use NewMonitor
// or fill Root.
type Monitor struct {
	// Root is prefixed to /proc and /sys paths ("/" on a real machine, a
	// fake tree in tests).
	Root string
	// Kmsg, when set, is read by Check (lines since its last Mark) and
	// marked again after; CheckLines takes the lines instead.
	Kmsg *kmsg.Reader
	// SMI is the nvidia-smi to run: "" looks it up on PATH, "-" never runs
	// it. It runs at most once per SMIInterval (0: every check), and also
	// whenever the kernel log shows an Xid, each time with SMITimeout.
	SMI         string
	SMIInterval time.Duration
	SMITimeout  time.Duration
	// Run runs a command with a deadline (tests replace it).
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
}

// NewMonitor returns a Monitor of the real machine: kernel log opened if
// readable (the error, wrapping kmsg.ErrNoAccess, is returned for the
// caller to print once; the Monitor works without it), nvidia-smi at most
// every 30 s with a 5 s timeout.
func NewMonitor() (*Monitor, error) {
	m := &Monitor{Root: "/", SMIInterval: 30 * time.Second, SMITimeout: 5 * time.Second}
	r, err := kmsg.Open()
	if err == nil {
		m.Kmsg = r
	}
	return m, err
}

// Check reads the kernel log lines since the last Check (when m.Kmsg is
// set) and then the counters; see CheckLines.
func (m *Monitor) Check(prev Snapshot) (Snapshot, Verdict) {
	var lines []kmsg.Line
	var kerr error
	if m.Kmsg != nil {
		lines, kerr = m.Kmsg.Since()
		if err := m.Kmsg.Mark(); err != nil && kerr == nil {
			kerr = err
		}
	}
	s, v := m.CheckLines(prev, lines)
	if kerr != nil {
		v.note("kernel log: %v", kerr)
	}
	return s, v
}

// CheckLines judges the given kernel-log lines (e.g. what a case's
// kmsg.Reader collected) and compares fresh counters against prev. It
// never fails: what cannot be read is absent from the Snapshot.
func (m *Monitor) CheckLines(prev Snapshot, lines []kmsg.Line) (Snapshot, Verdict) {
	var v Verdict
	sawXid := judgeLines(&v, lines)
	s := Snapshot{Taken: time.Now()}
	s.NVIDIA = m.readNVIDIA()
	s.AMD = m.readAMD()
	s.Coredump = m.readCoredumps()
	m.smi(&s, prev, sawXid)
	if !s.SMITaken.Equal(prev.SMITaken) && s.SMIError != "" {
		if e := strings.ToLower(s.SMIError); strings.Contains(e, "gpu is lost") || strings.Contains(e, "fallen off the bus") {
			v.bad("nvidia-smi: %s", s.SMIError)
		} else {
			v.note("nvidia-smi: %s", s.SMIError)
		}
	}
	compare(&v, prev, s)
	return s, v
}

// judgeLines applies the kernel-log rules; it reports whether any Xid was
// seen (which makes nvidia-smi run now).
func judgeLines(v *Verdict, lines []kmsg.Line) (sawXid bool) {
	for _, l := range lines {
		if strings.HasPrefix(l.Text, "p2patomics") {
			continue // the harness's own annotations and test markers
		}
		kind, xid := kmsg.Classify(l)
		where := kmsg.PCI(l)
		if where != "" {
			where = " on " + where
		}
		switch kind {
		case kmsg.KindXid:
			sawXid = true
			if why, ok := XidUntrustworthy[xid]; ok {
				v.bad("Xid %d%s: %s (kernel log: %s)", xid, where, why, l.Text)
			} else {
				v.note("Xid %d%s (kernel log: %s)", xid, where, l.Text)
			}
		case kmsg.KindNVRM:
			if strings.Contains(l.Text, "fallen off the bus") {
				v.bad("GPU%s has fallen off the bus (kernel log: %s)", where, l.Text)
			}
		case kmsg.KindAMDReset:
			v.bad("amdgpu reset%s (kernel log: %s)", where, l.Text)
		case kmsg.KindAMDTimeout:
			v.bad("amdgpu ring timeout%s, the driver resets the GPU (kernel log: %s)", where, l.Text)
		case kmsg.KindAMDFault, kmsg.KindIOMMUFault:
			v.note("%s%s (kernel log: %s)", kind, where, l.Text)
		}
	}
	return sawXid
}

// compare judges cur against prev, one named step per source. Against the
// zero Snapshot (the first check) there is nothing to compare: only what
// the driver already says is noted.
func compare(v *Verdict, prev, cur Snapshot) {
	if prev.Taken.IsZero() {
		for _, g := range cur.NVIDIA {
			if g.Excluded {
				v.note("NVIDIA GPU %s is excluded by the driver", g.Bus)
			}
		}
		return
	}
	compareNVIDIA(v, prev.NVIDIA, cur.NVIDIA)
	compareSMI(v, prev, cur)
	noteThrottle(v, cur.SMI)
	compareAMD(v, prev.AMD, cur.AMD)
	compareCoredumps(v, prev.Coredump, cur.Coredump)
}

// compareNVIDIA: in NVIDIA's procfs, a GPU that vanished or lost its UUID
// fell off the bus; one newly excluded is lost to the run.
func compareNVIDIA(v *Verdict, prev, cur []NVGPU) {
	now := map[string]NVGPU{}
	for _, g := range cur {
		now[g.Bus] = g
	}
	for _, p := range prev {
		g, ok := now[p.Bus]
		switch {
		case !ok:
			v.bad("NVIDIA GPU %s (%s) is gone from /proc/driver/nvidia/gpus", p.Bus, p.UUID)
		case strings.Contains(g.UUID, "?") && !strings.Contains(p.UUID, "?"):
			v.bad("NVIDIA GPU %s reports UUID %s: the driver lost it", p.Bus, g.UUID)
		case g.Excluded && !p.Excluded:
			v.bad("NVIDIA GPU %s was excluded by the driver", p.Bus)
		}
	}
}

// compareSMI compares nvidia-smi's counters, when both snapshots have them
// and cur holds a new reading: a GPU missing from it, rising uncorrectable
// ECC errors, or retired pages newly pending.
func compareSMI(v *Verdict, prev, cur Snapshot) {
	if cur.SMITaken.IsZero() || cur.SMITaken.Equal(prev.SMITaken) || len(prev.SMI) == 0 {
		return
	}
	smiNow := map[string]SMIGPU{}
	for _, g := range cur.SMI {
		smiNow[g.UUID] = g
	}
	for _, p := range prev.SMI {
		g, ok := smiNow[p.UUID]
		if !ok {
			if cur.SMIError != "" {
				continue // judged from the error text
			}
			v.bad("GPU %s is missing from nvidia-smi", p.UUID)
			continue
		}
		if p.ECCUncorrected >= 0 && g.ECCUncorrected > p.ECCUncorrected {
			v.bad("GPU %s: uncorrectable ECC errors rose from %d to %d", g.UUID, p.ECCUncorrected, g.ECCUncorrected)
		}
		if g.RetiredPending == "Yes" && p.RetiredPending != "Yes" {
			v.bad("GPU %s: retired pages pending (a reset is needed)", g.UUID)
		}
	}
}

// noteThrottle notes the throttle reasons worth showing (throttleNotes):
// slow clocks explain slow numbers, they never stop the run.
func noteThrottle(v *Verdict, smi []SMIGPU) {
	for _, g := range smi {
		if g.Throttle <= 0 {
			continue
		}
		var names []string
		for _, t := range throttleNotes {
			if g.Throttle&t.bit != 0 {
				names = append(names, t.name)
			}
		}
		if names != nil {
			v.note("GPU %s clocks throttled: %s (%#x)", g.UUID, strings.Join(names, ", "), g.Throttle)
		}
	}
}

// compareAMD: an amdgpu card gone from /sys/class/drm, or a RAS block's
// uncorrectable count rising, is untrustworthy; correctable errors are a
// note. A block prev did not read is not compared.
func compareAMD(v *Verdict, prev, cur []AMDCard) {
	amdNow := map[string]AMDCard{}
	for _, c := range cur {
		amdNow[c.PCI] = c
	}
	for _, p := range prev {
		c, ok := amdNow[p.PCI]
		if !ok {
			v.bad("amdgpu %s (%s) is gone from /sys/class/drm", p.PCI, p.Card)
			continue
		}
		for _, blk := range sortedKeys(c.RAS) {
			n, o := c.RAS[blk], p.RAS[blk]
			if _, had := p.RAS[blk]; !had {
				continue
			}
			if n.UE > o.UE {
				v.bad("amdgpu %s: uncorrectable %s RAS errors rose from %d to %d", c.PCI, blk, o.UE, n.UE)
			}
			if n.CE > o.CE {
				v.note("amdgpu %s: correctable %s RAS errors rose from %d to %d", c.PCI, blk, o.CE, n.CE)
			}
		}
	}
}

// compareCoredumps: a devcoredump amdgpu wrote since prev means it reset
// the GPU.
func compareCoredumps(v *Verdict, prev, cur []string) {
	old := map[string]bool{}
	for _, d := range prev {
		old[d] = true
	}
	for _, d := range cur {
		if !old[d] {
			v.bad("amdgpu wrote a devcoredump (%s): the GPU was reset", d)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func (m *Monitor) path(p string) string { return filepath.Join(m.Root, p) }

func (m *Monitor) readNVIDIA() []NVGPU {
	dirs, _ := filepath.Glob(m.path("/proc/driver/nvidia/gpus/*"))
	var out []NVGPU
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "information"))
		if err != nil {
			continue
		}
		g := NVGPU{Bus: filepath.Base(d)}
		for _, line := range strings.Split(string(b), "\n") {
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(k) {
			case "Model":
				g.Model = val
			case "GPU UUID":
				g.UUID = val
			case "GPU Excluded":
				g.Excluded = strings.EqualFold(val, "Yes")
			}
		}
		out = append(out, g)
	}
	return out
}

func (m *Monitor) readAMD() []AMDCard {
	cards, _ := filepath.Glob(m.path("/sys/class/drm/card*"))
	var out []AMDCard
	for _, c := range cards {
		name := filepath.Base(c)
		if strings.Contains(name, "-") { // connectors: card0-DP-1
			continue
		}
		dev := filepath.Join(c, "device")
		vendor, _ := os.ReadFile(filepath.Join(dev, "vendor"))
		if strings.TrimSpace(string(vendor)) != "0x1002" {
			continue
		}
		card := AMDCard{Card: name, PCI: name}
		if p, err := filepath.EvalSymlinks(dev); err == nil {
			card.PCI = filepath.Base(p)
		}
		files, _ := filepath.Glob(filepath.Join(dev, "ras", "*_err_count"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var rc RASCount
			for _, line := range strings.Split(string(b), "\n") {
				k, val, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
				if err != nil {
					continue
				}
				switch strings.TrimSpace(k) {
				case "ue":
					rc.UE = n
				case "ce":
					rc.CE = n
				}
			}
			if card.RAS == nil {
				card.RAS = map[string]RASCount{}
			}
			card.RAS[strings.TrimSuffix(filepath.Base(f), "_err_count")] = rc
		}
		out = append(out, card)
	}
	return out
}

// readCoredumps lists devcoredump entries whose failing device is bound to
// amdgpu (amdgpu writes one when it resets a hung GPU).
func (m *Monitor) readCoredumps() []string {
	ds, _ := filepath.Glob(m.path("/sys/class/devcoredump/devcd*"))
	var out []string
	for _, d := range ds {
		drv, err := filepath.EvalSymlinks(filepath.Join(d, "failing_device", "driver"))
		if err != nil || filepath.Base(drv) != "amdgpu" {
			continue
		}
		out = append(out, filepath.Base(d))
	}
	return out
}

// SMIQuery is the nvidia-smi query; SMIQueryNew replaces the field name
// that newer drivers renamed, tried when the first is refused.
var (
	SMIQuery    = []string{"--query-gpu=uuid,ecc.errors.uncorrected.volatile.total,retired_pages.pending,clocks_throttle_reasons.active", "--format=csv,noheader"}
	SMIQueryNew = []string{"--query-gpu=uuid,ecc.errors.uncorrected.volatile.total,retired_pages.pending,clocks_event_reasons.active", "--format=csv,noheader"}
)

func (m *Monitor) smi(s *Snapshot, prev Snapshot, force bool) {
	// Carry the last reading forward unless it is time for a new one.
	s.SMI, s.SMITaken, s.SMIError = prev.SMI, prev.SMITaken, prev.SMIError
	if m.SMI == "-" {
		return
	}
	if !force && !prev.SMITaken.IsZero() && m.SMIInterval > 0 && time.Since(prev.SMITaken) < m.SMIInterval {
		return
	}
	bin := m.SMI
	if bin == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return
		}
		bin = p
	}
	run := m.Run
	if run == nil {
		run = runCmd
	}
	timeout := m.SMITimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := run(ctx, bin, SMIQuery...)
	if err != nil && bytes.Contains(out, []byte("not a valid field")) {
		out, err = run(ctx, bin, SMIQueryNew...)
	}
	s.SMITaken = time.Now()
	s.SMI, s.SMIError = nil, ""
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.SMIError = fmt.Sprintf("nvidia-smi timed out after %s", timeout)
		} else {
			s.SMIError = strings.TrimSuffix(fmt.Sprintf("%v: %s", err, otherLines(out)), ": ")
		}
	}
	s.SMI = parseSMI(out)
}

// otherLines returns the output lines that are not query rows (messages).
func otherLines(b []byte) string {
	var ls []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "GPU-") {
			ls = append(ls, l)
		}
	}
	return strings.Join(ls, "; ")
}

func runCmd(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return cmd.CombinedOutput()
}

// parseSMI reads "uuid, ecc, pending, reasons" rows; other lines (errors)
// are skipped.
func parseSMI(out []byte) []SMIGPU {
	var gs []SMIGPU
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 4 || !strings.HasPrefix(strings.TrimSpace(f[0]), "GPU-") {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		g := SMIGPU{UUID: f[0], ECCUncorrected: -1, Throttle: -1}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			g.ECCUncorrected = n
		}
		if f[2] == "Yes" || f[2] == "No" {
			g.RetiredPending = f[2]
		}
		if n, err := strconv.ParseInt(strings.TrimPrefix(f[3], "0x"), 16, 64); err == nil {
			g.Throttle = n
		}
		gs = append(gs, g)
	}
	return gs
}
