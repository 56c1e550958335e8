package suite

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
)

// Group is the cases of one backend and kind.
type Group struct {
	Name  string
	Cases []*harness.Case
}

// Run is one invocation of the suite: the plan, the runners, the results.
type Run struct {
	Opts        *Options
	LabelFilter string
	Groups      []Group
	planned     []*harness.Case
	runners     map[string]*harness.Runner
	mu          sync.Mutex
	results     map[string]report.Result
	current     string
	finished    bool
	startFds    int
	gate        *expect.Set
	finishOnce  sync.Once
	exitCode    int
	t0          time.Time // when the run was planned: the suite's wall clock starts here
	// checkpoint state (lifecycle.go): when results.json was last
	// rewritten, what that cost, the fingerprint it used.
	ckptMu   sync.Mutex
	ckptLast time.Time
	ckptCost time.Duration
	ckptSaid bool
	ckptEnv  map[string]any
	ckptEnvN int
}

// Catalogue builds every case for one backend and kind (package specs).
type Catalogue func(o *Options, backend, kind string) []*harness.Case

// NewRun resolves the backend, builds and filters the plan from cat.
func NewRun(o *Options, userFilter string, cat Catalogue) (*Run, error) {
	r := &Run{Opts: o, runners: map[string]*harness.Runner{}, results: map[string]report.Result{}, startFds: -1, t0: time.Now()}
	// Ranks read the clock sampler's period from their environment (it is
	// on the rank env allowlist); the flag may have come from the command line.
	os.Setenv("P2PAT_CLOCKS", o.Clocks)
	var terms []string
	if strings.TrimSpace(userFilter) != "" {
		terms = append(terms, "("+userFilter+")")
	}
	if o.Atomics {
		terms = append(terms, "atomics")
	}
	if o.Perf {
		terms = append(terms, "perf")
	}
	r.LabelFilter = strings.Join(terms, " && ")
	gs, err := r.gateSet()
	if err != nil {
		return nil, err
	}
	r.gate = gs
	match := func([]string) bool { return true }
	if r.LabelFilter != "" {
		f, err := types.ParseLabelFilter(r.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("label filter %s: %s", quote(r.LabelFilter), oneLine(err.Error()))
		}
		match = f
	}
	backends := []string{o.Backend}
	if o.Backend == "auto" {
		backends = probeBackends(o.Trace)
	}
	for _, be := range backends {
		kinds := Matrix[be]
		if o.Alloc != "" {
			if !contains(kinds, o.Alloc) {
				continue
			}
			kinds = []string{o.Alloc}
		}
		for _, kind := range kinds {
			g := Group{Name: be + "." + kind}
			for _, c := range cat(o, be, kind) {
				if o.Case != "" && c.ID != o.Case {
					continue
				}
				if o.Case == "" && !match(c.Labels) {
					continue
				}
				g.Cases = append(g.Cases, c)
			}
			if len(g.Cases) > 0 {
				r.Groups = append(r.Groups, g)
				r.planned = append(r.planned, g.Cases...)
			}
		}
	}
	if o.Case == "" && o.Alloc == "" && r.LabelFilter == "" && contains(backends, "host") {
		r.addSuiteCases()
	}
	if o.Case != "" && len(r.planned) == 0 {
		r.addSuiteCases()
		r.planned = filterID(r.Groups, o.Case)
		if len(r.planned) == 0 {
			return nil, fmt.Errorf("--case=%s matches no case of backend %s (list ids with --ginkgo.dry-run --ginkgo.v)", o.Case, strings.Join(backends, ","))
		}
	}
	if len(r.planned) == 0 {
		return nil, fmt.Errorf("the selection (backend %s, alloc %q, labels %q) matches no case", strings.Join(backends, ","), o.Alloc, r.LabelFilter)
	}
	return r, nil
}

func filterID(groups []Group, id string) []*harness.Case {
	var out []*harness.Case
	for i := range groups {
		var keep []*harness.Case
		for _, c := range groups[i].Cases {
			if c.ID == id {
				keep = append(keep, c)
			}
		}
		groups[i].Cases = keep
		out = append(out, keep...)
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// probeBackends opens one rank per GPU backend; those that load are used,
// else the host backend. The suite process itself never loads a GPU library.
func probeBackends(traceOn bool) []string {
	var ok []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, be := range GPUBackends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := harness.NewWorld(be, 1, traceOn, time.Now().Add(60*time.Second))
			if err != nil {
				harness.CloseStart(err)
				return
			}
			w.Close()
			mu.Lock()
			ok = append(ok, be)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ok) == 0 {
		return []string{"host"}
	}
	var ordered []string
	for _, be := range GPUBackends {
		if contains(ok, be) {
			ordered = append(ordered, be)
		}
	}
	return ordered
}

func (r *Run) runner(backend string) *harness.Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn, ok := r.runners[backend]
	if !ok {
		rn = harness.NewRunner(backend, r.Opts.Trace, r.Opts.Seed)
		rn.Evidence = &harness.Evidence{
			Out: r.Opts.Out, TraceAll: r.Opts.Trace,
			Env: func() map[string]any { return environment(r.Opts, [][]map[string]any{rn.Infos}) },
			MakeForm: func(repro string) string {
				return "make run ARGS='" + strings.TrimPrefix(repro, "./specs.test ") + "'"
			},
		}
		r.runners[backend] = rn
	}
	return rn
}

// SpecTimeout is Ginkgo's outer bound for a case: the harness's own
// deadlines end it first, for every repeat of a soak.
func (r *Run) SpecTimeout(c *harness.Case) time.Duration {
	per := c.Limit() + 60*time.Second
	return per*time.Duration(r.Opts.Repeat) + r.Opts.Duration/time.Duration(max(1, len(r.planned))) + per
}

// Execute runs one case (repeatedly in soak mode) and records the result.
func (r *Run) Execute(c *harness.Case) report.Result {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return report.Result{ID: c.ID, Outcome: report.Incomplete, Expected: c.Expected}
	}
	for _, rn := range r.runners {
		if rn.Abort != "" {
			r.mu.Unlock()
			res := report.Result{ID: c.ID, Labels: c.Labels, Outcome: report.Abort, Expected: c.Expected,
				Detail: "not run: the machine stopped being trustworthy: " + rn.Abort, Ranks: []report.Rank{}, Repro: c.Repro}
			r.mu.Lock()
			r.results[c.ID] = res
			r.mu.Unlock()
			return res
		}
	}
	r.current = c.ID
	if r.startFds < 0 {
		// Counted at the first case, once Ginkgo has opened what it keeps.
		r.startFds = countFds()
	}
	r.mu.Unlock()
	var res report.Result
	var perCase time.Duration
	if r.Opts.Duration > 0 {
		perCase = r.Opts.Duration / time.Duration(max(1, len(r.planned)))
	}
	start := time.Now()
	runs, unmet := 0, 0
	rn := r.runner(c.Backend)
	var soak []map[string]report.Metric
	for {
		one := rn.Run(c)
		runs++
		soak = append(soak, one.Metrics)
		if !one.Met() {
			unmet++
		}
		if runs == 1 || (!one.Met() && unmet == 1) {
			res = one
		}
		if runs >= r.Opts.Repeat && (perCase == 0 || time.Since(start) >= perCase) {
			break
		}
		r.mu.Lock()
		stop := r.finished || rn.Abort != ""
		r.mu.Unlock()
		if stop {
			break
		}
	}
	if r.gate != nil && res.Verdict == "" {
		// deqp-runner's rule: an unexpected result gets one rerun in a
		// fresh world; meeting the baseline then makes it a flake.
		if v := expect.Judge(res, r.gate, nil); expect.NeedsRerun(v) {
			rn := r.runner(c.Backend)
			rn.Close()
			again := rn.Run(c)
			res.Verdict = expect.Judge(res, r.gate, &again)
			if res.Verdict == report.Flake {
				res.Detail = strings.TrimSpace(res.Detail + fmt.Sprintf(" (rerun in a fresh world: %s)", again.Outcome))
			}
		}
	}
	if runs > 1 {
		res.Metrics = report.SoakMetrics(soak)
		res.Detail = strings.TrimSpace(fmt.Sprintf("%s (soak: %d runs, %d did not meet %s)", res.Detail, runs, unmet, c.Expected))
	}
	r.mu.Lock()
	if !r.finished {
		// After an interrupt the reports are already being written with
		// this case incomplete; a late result must not change them.
		r.results[c.ID] = res
	}
	r.current = ""
	r.mu.Unlock()
	r.checkpoint()
	return res
}

// WatchSignals makes SIGINT/SIGTERM/SIGHUP kill every rank and still
// write the reports, with unfinished cases marked incomplete. The handler
// itself is installed by Prepare, before the backend probe; this hands it
// the plan, and writes the first checkpoint (every case incomplete).
func (r *Run) WatchSignals() {
	catchSignals(r.Opts)
	active.Store(r)
	r.checkpoint()
}

// runnerList copies the runners; call with r.mu held.
func (r *Run) runnerList() []*harness.Runner {
	out := make([]*harness.Runner, 0, len(r.runners))
	for _, rn := range r.runners {
		out = append(out, rn)
	}
	return out
}

func (r *Run) expected(id string) report.Outcome {
	for _, c := range r.planned {
		if c.ID == id {
			return c.Expected
		}
	}
	return report.Pass
}

// Results returns the results in plan order, unfinished cases incomplete.
func (r *Run) Results() []report.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]report.Result, 0, len(r.planned))
	for _, c := range r.planned {
		res, ok := r.results[c.ID]
		if !ok {
			res = report.Result{ID: c.ID, Labels: c.Labels, Outcome: report.Incomplete, Expected: c.Expected,
				Detail: "did not run to the end", Ranks: []report.Rank{}, Repro: c.Repro}
		}
		out = append(out, res)
	}
	return out
}

// Finish writes results.json, junit.xml and the table; it returns the exit
// status (0 when every case met its expected outcome or the gate passed).
//
// It runs once: the signal handler and TestMain may both get here (Ginkgo
// ends the run on SIGTERM too), and whichever comes second waits for the
// first to finish writing, so the process never exits half-way through.
func (r *Run) Finish() int {
	r.finishOnce.Do(func() { r.exitCode = r.finish() })
	return r.exitCode
}

func (r *Run) finish() int {
	r.mu.Lock()
	r.finished = true
	runners := r.runnerList()
	r.mu.Unlock()
	var events []string
	var infos [][]map[string]any
	timing := &report.Timing{}
	for _, rn := range runners {
		rn.Close()
		events = append(events, rn.Events...)
		infos = append(infos, rn.Infos)
		timing.Worlds = append(timing.Worlds, rn.Starts...)
	}
	timing.SuiteWallS = math.Round(time.Since(r.t0).Seconds()*1000) / 1000
	results := r.Results()
	rep := &report.Report{Schema: report.Schema, Environment: environment(r.Opts, infos), Results: results,
		Pairs: heatmap.PairRows(results), Timing: timing}
	code := 0
	for _, res := range results {
		if !res.Met() {
			code = 1
		}
	}
	if gcode, err := applyGate(r, rep); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		code = 2
	} else if gcode >= 0 {
		code = gcode
	}
	// results.json first: it is the record, and the heatmaps, junit.xml
	// and the case folders must not take the space it needs.
	out := r.Opts.Out
	if err := rep.Write(filepath.Join(out, "results.json")); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		code = ExitNoReport
	}
	PrintTable(os.Stdout, rep.Results, events)
	PrintMatrices(os.Stdout, rep.Results)
	heatmap.WritePairTable(os.Stdout, rep.Pairs)
	printTiming(os.Stdout, timing)
	if files, err := heatmap.WriteAll(filepath.Join(r.Opts.Out, "heatmaps"), rep); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: heatmaps: %v\n", err)
		code = ExitNoReport
	} else if len(files) > 0 {
		fmt.Printf("heatmaps: %s\n", filepath.Join(r.Opts.Out, "heatmaps", "index.html"))
	}
	if rep.Gate != nil {
		for _, reason := range rep.Gate.Reasons {
			fmt.Println("gate: " + reason)
		}
		fmt.Printf("gate: %s\n", map[bool]string{true: "PASS", false: "FAIL"}[rep.Gate.Pass])
	}
	if err := WriteJUnit(filepath.Join(out, "junit.xml"), rep.Results); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		code = ExitNoReport
	}
	fmt.Printf("results: %s\n", filepath.Join(out, "results.json"))
	return code
}

// countFds counts the suite's open fds, leaving out the kernel log, which
// the harness opens once on first use and keeps.
func countFds() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "/dev/kmsg" {
			n++
		}
	}
	return n
}
