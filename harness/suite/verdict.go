package suite

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/htmlreport"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// BackendProbe is what opening one rank of a backend said: loaded (with
// its devices and driver) or why not. Every probe is printed and recorded
// in results.json's environment.backends.
type BackendProbe struct {
	Backend string `json:"backend"`
	Loaded  bool   `json:"loaded"`
	Devices int    `json:"devices,omitempty"`
	Device  string `json:"device,omitempty"`
	Driver  string `json:"driver,omitempty"`
	Why     string `json:"why,omitempty"`
	Used    bool   `json:"used"`
	infos   []device.Info
}

// Line is the probe as one line of stdout.
func (p BackendProbe) Line() string {
	switch {
	case !backends.IsGPU(p.Backend):
		return "backend " + p.Backend + ": " + p.Why
	case p.Loaded:
		return fmt.Sprintf("backend %s: loaded: %d device(s) (%s), driver %s", p.Backend, p.Devices, p.Device, p.Driver)
	}
	return fmt.Sprintf("backend %s: not loaded: %s", p.Backend, p.Why)
}

// probe opens a one-rank world of backend be and closes it again.
func probe(be string, set wire.Settings) BackendProbe {
	p := BackendProbe{Backend: be}
	w, err := harness.NewWorld(be, 1, set, time.Now().Add(60*time.Second))
	if err != nil {
		harness.CloseStart(err) // a world that failed to start is closed here
		p.Why = firstLine(err.Error())
		return p
	}
	defer w.Close()
	p.Loaded = true
	p.infos = append(p.infos, w.Infos...)
	if len(w.Infos) > 0 {
		info := w.Infos[0]
		p.Devices = info.Count
		p.Device = strings.TrimSpace(info.Name + " " + info.Arch)
		p.Driver = info.Driver
	}
	return p
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// gpuNodes lists the GPU device nodes that exist (each backend's row names
// its own, backends.DeviceNodes): where they do, a GPU backend that does
// not load is a broken stack, not a machine without GPUs. A variable so
// tests can plant nodes.
var gpuNodes = backends.DeviceNodes

// probeFunc opens one backend; a variable so tests can fake a driver.
var probeFunc = probe

// resolveBackends turns --backend into the backends to run, said out loud:
// auto probes every GPU backend and uses those that load, else host, but
// never host where GPU device nodes exist (a usage error naming why each
// vendor backend did not load); an explicit GPU backend that cannot load
// is a usage error with a hint. Either way, before any case runs.
func (r *Run) resolveBackends() ([]string, error) {
	o := r.Opts
	if o.Backend == backends.HostName {
		r.Probes = []BackendProbe{{Backend: backends.HostName, Loaded: true, Used: true, Why: "chosen with --backend=" + backends.HostName}}
		return []string{backends.HostName}, nil
	}
	if o.Backend != "auto" && o.List {
		// The ids come from the catalogue: listing the CUDA cases (for
		// --case, for a baseline) on a box without the driver must work.
		r.Probes = []BackendProbe{{Backend: o.Backend, Used: true, Why: "not loaded: --list reads the catalogue"}}
		return []string{o.Backend}, nil
	}
	if o.Backend != "auto" {
		p := probeFunc(o.Backend, o.Settings())
		p.Used = p.Loaded
		r.Probes = []BackendProbe{p}
		if !p.Loaded {
			return nil, usagef("--backend=%s cannot load: %s (hint: %s)", o.Backend, p.Why, backends.LoadHint(o.Backend))
		}
		return []string{o.Backend}, nil
	}
	probes := make([]BackendProbe, len(harness.GPUBackends()))
	var wg sync.WaitGroup
	for i, be := range harness.GPUBackends() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probes[i] = probeFunc(be, o.Settings())
		}()
	}
	wg.Wait()
	var ok []string
	var why []string
	for i := range probes {
		if probes[i].Loaded {
			probes[i].Used = true
			ok = append(ok, probes[i].Backend)
		} else {
			why = append(why, probes[i].Backend+": "+probes[i].Why)
		}
	}
	r.Probes = probes
	if len(ok) > 0 {
		return ok, nil
	}
	if nodes := gpuNodes(); len(nodes) > 0 {
		return nil, usagef("--backend=auto: %s exists but no GPU backend loaded (%s); fix the stack, or pass --backend=host to run the host backend on purpose",
			strings.Join(nodes, ", "), strings.Join(why, "; "))
	}
	r.Probes = append(r.Probes, BackendProbe{Backend: backends.HostName, Loaded: true, Used: true,
		Why: "used: no GPU backend loaded and no GPU device node (" + strings.Join(backends.DeviceNodePatterns(), ", ") + ") exists"})
	return []string{backends.HostName}, nil
}

// focusFilter applies --ginkgo.focus and --ginkgo.skip to the plan the way
// Ginkgo does (regexps over "<suite> <containers> <id>"), so the plan,
// results.json and the gate's selection hold exactly the specs Ginkgo
// runs: an unselected case is not in the results, never incomplete.
func focusFilter(focus, skip []string) (func(group, id string) bool, error) {
	var fre, sre *regexp.Regexp
	var err error
	if len(focus) > 0 {
		if fre, err = regexp.Compile(strings.Join(focus, "|")); err != nil {
			return nil, usagef("--ginkgo.focus: %v", err)
		}
	}
	if len(skip) > 0 {
		if sre, err = regexp.Compile(strings.Join(skip, "|")); err != nil {
			return nil, usagef("--ginkgo.skip: %v", err)
		}
	}
	return func(group, id string) bool {
		// RunSpecs' description, the one top-level container, the group.
		text := "p2patomics p2patomics " + group + " " + id
		if fre != nil && !fre.MatchString(text) {
			return false
		}
		return sre == nil || !sre.MatchString(text)
	}, nil
}

// checkStack refuses a baseline for another stack before any case runs,
// naming the expectation folders beside it that do match this machine.
func (r *Run) checkStack() error {
	if r.gate == nil {
		return nil
	}
	env := r.preEnv()
	err := expect.CheckStack(r.gate.Stack, env, r.Opts.AllowStackMismatch)
	if err == nil {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range strings.Split(r.Opts.Expectations, ",") {
		parent := filepath.Dir(filepath.Clean(strings.TrimSpace(p)))
		if seen[parent] {
			continue
		}
		seen[parent] = true
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := filepath.Join(parent, e.Name())
			if isFixture(d) {
				continue // a planted folder is never the one to gate on
			}
			s, lerr := expect.Load([]string{d})
			if lerr == nil && len(s.Stack) > 0 && expect.CheckStack(s.Stack, env, false) == nil {
				dirs = append(dirs, d)
			}
		}
	}
	match := "no folder beside it matches this machine"
	if len(dirs) > 0 {
		match = "folders that match this machine: " + strings.Join(dirs, ", ")
	}
	return usagef("--expectations=%s: %v; %s", r.Opts.Expectations, err, match)
}

// isFixture: dir's cases.txt has a "# fixture:" line, a folder planted for
// a test (expectations/host-amd64-verdicts), not a baseline.
func isFixture(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "# fixture:") {
			return true
		}
	}
	return false
}

// preEnv is the fingerprint known before any case runs: sysfs/procfs and
// the device facts of the backend probes.
func (r *Run) preEnv() map[string]any {
	var infos [][]device.Info
	for _, p := range r.Probes {
		if p.Used {
			infos = append(infos, p.infos)
		}
	}
	return environment(r.Opts, infos)
}

// caseEnv is what judging one case needs: the vendor and the device
// attributes the backend's ranks reported.
func caseEnv(rn *harness.Runner) map[string]any {
	env := map[string]any{}
	fingerprint.Merge(env, rn.Infos)
	return env
}

// isTerminal reports whether fd is a terminal (TCGETS succeeds).
func isTerminal(fd uintptr) bool {
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}

// StdoutStyle colours stdout only for a terminal and never with NO_COLOR
// set (no-color.org: any non-empty value).
func StdoutStyle() report.Style {
	return report.Style{Color: os.Getenv("NO_COLOR") == "" && isTerminal(os.Stdout.Fd())}
}

// live prints a case's line as it finishes.
func (r *Run) live(res report.Result) {
	r.mu.Lock()
	r.done++
	n := r.done
	r.mu.Unlock()
	if r.gate != nil {
		// Gated, "expected" is what the baseline recorded, the outcome the
		// verdict is judged against, not the spec's own expectation.
		res.Expected = r.gate.Baseline(res)
	}
	fmt.Fprintln(r.stdout(), report.LiveLine(r.Style, n, len(r.planned), res))
}

func (r *Run) stdout() io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return os.Stdout
}

// WriteReports writes the reports derived from a judged report (all but
// results.json) into dir, report.html included: what cmd/p2preport
// re-renders.
func WriteReports(dir string, rep *report.Report, stamp time.Time) error {
	return writeDerived(dir, rep, nil, stamp)
}

// writeDerived writes junit.xml, results.csv, failures.csv, summary.txt
// (the full table and the matrices) and report.html, each through
// report.WriteAtomic; the first failure names its file. results.json is
// written before it (Finish), so the record never waits on these.
func writeDerived(dir string, rep *report.Report, events []string, stamp time.Time) error {
	if err := report.WriteJUnit(filepath.Join(dir, "junit.xml"), rep, stamp); err != nil {
		return err
	}
	if err := report.WriteCSVs(dir, rep); err != nil {
		return err
	}
	if err := writeSummaryText(filepath.Join(dir, "summary.txt"), rep, events); err != nil {
		return err
	}
	// report.html opens with the same verdict line (rep.Summary).
	return htmlreport.WriteHTML(dir, rep)
}

func writeSummaryText(path string, rep *report.Report, events []string) error {
	var b bytes.Buffer
	report.WriteTable(&b, rep, events)
	PrintMatrices(&b, rep.Results)
	if rep.Timing != nil {
		printTiming(&b, rep.Timing)
	}
	if rep.Summary != nil {
		fmt.Fprintf(&b, "\n%s\n", rep.Summary.Line) // last here too
	}
	if err := report.WriteAtomic(path, b.Bytes()); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

// updateBaseline records the run as the baseline in the first
// --expectations folder, by the one rule cmd/p2pbaseline records by too
// (expect.PlanUpdate): against a baseline already there it first shows
// what would change, and refuses to turn a regression into the baseline
// without --force (the stack and fallback refusals came before the first
// case, in NewRun). It returns an error when it refused or failed.
func (r *Run) updateBaseline(rep *report.Report) error {
	dir := r.updateDir()
	w := r.stdout()
	u, err := expect.PlanUpdate(dir, rep, r.Opts.Force)
	if u != nil && !u.New {
		fmt.Fprintf(w, "--update-expectations: %d change(s) to %s\n", len(u.Changes), dir)
		for _, c := range u.Changes {
			fmt.Fprintln(w, "  "+c)
		}
	}
	if err != nil {
		return fmt.Errorf("--update-expectations: %w", err)
	}
	if err := expect.WriteBaseline(dir, rep, nil); err != nil {
		return err
	}
	fmt.Fprintf(w, "baseline written to %s\n", dir)
	return nil
}

// IDs are the planned case ids in plan order (what --list prints).
func (r *Run) IDs() []string {
	ids := make([]string, 0, len(r.planned))
	for _, c := range r.planned {
		ids = append(ids, c.ID)
	}
	return ids
}

// DefaultOut is out/ at the root of the p2patomics checkout the working
// directory is in (go tool ginkgo runs the binary in specs/, make run in
// the root), else ./out.
func DefaultOut() string {
	dir, err := os.Getwd()
	if err != nil {
		return "./out"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if strings.HasPrefix(strings.TrimSpace(string(b)), "module p2patomics") {
				return filepath.Join(d, "out")
			}
			return "./out"
		}
		if filepath.Dir(d) == d {
			return "./out"
		}
	}
}

// suiteBinary is the running suite binary's absolute path, for repro.sh.
func suiteBinary() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}
