// Command p2pmutate is the verification mutation score (docs/FAULTS.md,
// "Mutation score"): for every case that passes as expected and each distinct
// kernel it launches, a run with that kernel dropped by the driver-fault
// injector (drop:<kernel>: the launch reports success and runs nothing) must
// not end pass. A survivor is a check that did not notice its work was never
// done. Kernels the manifest declares NoVerdict (a warm-up, a timing-only
// launch) may survive; they are listed, not scored.
//
//	p2pmutate --specs=bin/specs.test --out=DIR [--backend=host] [--kernels=REGEXP] [--healthy=RUN] [-- suite flags...]
//
// It runs the suite once healthy with --trace (every case keeps its ranks'
// API traces, whose request.launch spans name each kernel launched), then
// once per group of kernels no case launches two of: each run drops every
// kernel of its group (drop:a,drop:b) and selects exactly the cases that
// launch one of them (--ginkgo.focus), so each case sees one kernel dropped.
// It prints the score per case family (the id's spec family: counter,
// litmus, perf ...) and writes DIR/mutate.json and DIR/mutate.txt.
//
// Exit 0 when every scored mutant was killed, 1 when one survived or a run
// lost a case, 2 for a usage error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
	"p2patomics/internal/safefile"
	"p2patomics/kernels"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	specs, out, backend string
	healthy             string // an existing --trace run to plan from
	jobs                int    // mutated runs at once
	kernels             *regexp.Regexp
	extra               []string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pmutate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	var kre string
	fs.StringVar(&o.specs, "specs", "", "the suite binary (bin/specs.test)")
	fs.StringVar(&o.out, "out", "", "folder for the runs and the score")
	fs.StringVar(&o.backend, "backend", backends.HostName, "the suite's --backend")
	fs.StringVar(&o.healthy, "healthy", "", "plan from this existing run's folder (run with --trace and --pairs=alone) instead of a healthy run of its own")
	fs.IntVar(&o.jobs, "jobs", 3, "mutated runs at once (host backend only; GPU runs are one at a time)")
	fs.StringVar(&kre, "kernels", "", "only kernels whose name matches this regexp (default: every kernel launched)")
	const usage = "usage: p2pmutate --specs=bin/specs.test --out=DIR [--backend=host] [--kernels=REGEXP] [--healthy=RUN] [-- suite flags...]"
	const help = `The verification mutation score: every case that passes as expected is run
again with each kernel it launches dropped by the driver-fault injector,
and must not pass. Prints the score per case family and writes
--out/mutate.json and mutate.txt. Flags after "--" go to the suite.

Exit status: 0 every scored mutant was killed; 1 one survived or a run
lost a case; 2 a usage error.`
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cli.WriteHelp(stdout, fs, usage, help)
			return 0
		}
		fmt.Fprintf(stderr, "p2pmutate: %s (%s)\n", cli.Dashes(err.Error()), usage)
		return 2
	}
	o.extra = fs.Args()
	if o.specs == "" || o.out == "" {
		fmt.Fprintf(stderr, "p2pmutate: --specs and --out are required (%s)\n", usage)
		return 2
	}
	var err error
	if o.kernels, err = regexp.Compile(kre); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: --kernels: %v\n", err)
		return 2
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: --out: %v\n", err)
		return 2
	}
	// Nobody but this user or root may be able to redirect --out
	// (internal/safefile, the suite's rule; issue 49 B6).
	if err := safefile.Ancestors("--out", filepath.Join(o.out, "mutate.json")); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: %v\n", err)
		return 2
	}
	t0 := time.Now()
	// Progress lines on stderr (the healthy run's start, the plan, each
	// mutated run's end), so that a sweep of minutes on a GPU (15 s on the
	// host) is never silent; the times are said, never judged.
	if o.healthy == "" {
		fmt.Fprintf(stderr, "p2pmutate: healthy run with --trace (the plan): start\n")
	}
	plan, err := o.plan(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "p2pmutate: healthy run: %v\n", err)
		return 1
	}
	groups := groupKernels(plan)
	runs := map[string]map[string]report.Outcome{} // kernel -> case -> outcome
	jobs := 1
	if backends.RunsOnCPU(o.backend) {
		// Most of a mutated host run is waiting (litmus budgets, world
		// starts), not CPU: a few at once cut the sweep's wall clock.
		jobs = max(o.jobs, 1)
	}
	fmt.Fprintf(stderr, "p2pmutate: plan after %.1f s: %d passing cases launch a kernel; %d mutated runs, %d at once\n",
		time.Since(t0).Seconds(), len(plan.Kernels), len(groups), min(len(groups), jobs))
	results, errs := o.mutants(groups, plan, jobs, stderr)
	for i, g := range groups {
		if errs[i] != nil {
			fmt.Fprintf(stderr, "p2pmutate: run %d (%s): %v\n", i, strings.Join(g, ","), errs[i])
			return 1
		}
		for _, k := range g {
			runs[k] = results[i]
		}
	}
	sc := score(plan, runs)
	sc.Unscored = plan.Unscored
	sc.Seconds = time.Since(t0).Seconds()
	sc.Runs = len(groups) + 1
	text := sc.text()
	fmt.Fprint(stdout, text)
	b, _ := json.MarshalIndent(sc, "", "  ")
	if err := safefile.WriteFile("--out", filepath.Join(o.out, "mutate.json"), append(b, '\n'), 0o644); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: %v\n", err)
		return 1
	}
	if err := safefile.WriteFile("--out", filepath.Join(o.out, "mutate.txt"), []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "p2pmutate: %v\n", err)
		return 1
	}
	if !sc.OK() {
		return 1
	}
	return 0
}

// mutants runs each group's mutated run, jobs at once, and says each
// run's end on stderr: per group, the outcomes it reported or its error.
func (o options) mutants(groups [][]string, plan Plan, jobs int, stderr io.Writer) ([]map[string]report.Outcome, []error) {
	results := make([]map[string]report.Outcome, len(groups))
	errs := make([]error, len(groups))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex // done and the progress lines
	done := 0
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ts := time.Now()
			results[i], errs[i] = o.mutated(i, g, plan, stderr)
			mu.Lock()
			done++
			// A group can hold dozens of kernels: a short line names few.
			what := strings.Join(g, ",")
			if len(g) > 3 {
				what = fmt.Sprintf("%d kernels: %s, ...", len(g), strings.Join(g[:2], ","))
			}
			fmt.Fprintf(stderr, "p2pmutate: [%d/%d] drop-%02d (%s; %d cases reported) ended after %.1f s\n",
				done, len(groups), i, what, len(results[i]), time.Since(ts).Seconds())
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results, errs
}

// Plan is the healthy run: the kernels each case launched, for the cases
// that passed as expected.
type Plan struct {
	Kernels  map[string][]string // case id -> distinct kernels launched, sorted
	Unscored []string            // "<id> <outcome>": expected pass, did not pass healthy
}

var launchRE = regexp.MustCompile(`request\.launch\([^)]*body=\{"kernel":"([a-z0-9_]+)"`)

// kernelsInTraces lists the distinct kernels that a case folder's rank
// traces show launched.
func kernelsInTraces(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "rank-*.trace"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range launchRE.FindAllSubmatch(b, -1) {
			seen[string(m[1])] = true
		}
	}
	ks := make([]string, 0, len(seen))
	for k := range seen {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks, nil
}

func (o options) suite(dir string, stderr io.Writer, extra ...string) (*report.Report, error) {
	args := append([]string{"--backend=" + o.backend, "--pairs=alone", "--out=" + dir}, o.extra...)
	args = append(args, extra...)
	log, err := os.Create(dir + ".log")
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(o.specs, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if backends.RunsOnCPU(o.backend) {
		// The host backend's "device" locks only keep two suites off one
		// GPU; here they would serialise this sweep's runs against each
		// other (and any other host suite on the machine). Each run gets
		// a lock folder of its own.
		locks := dir + ".locks"
		if err := os.MkdirAll(locks, 0o700); err != nil {
			return nil, err
		}
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+locks)
	}
	// The suite's exit status says whether cases met their expected
	// outcome; a mutated run is meant to miss. Only results.json counts.
	runErr := cmd.Run()
	rep, err := readReport(dir)
	if err != nil {
		return nil, fmt.Errorf("%w (suite: %v; see %s.log)", err, runErr, dir)
	}
	return rep, nil
}

func readReport(dir string) (*report.Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, err
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
	}
	return &rep, nil
}

func (o options) plan(stderr io.Writer) (Plan, error) {
	dir := filepath.Join(o.out, "healthy")
	var rep *report.Report
	var err error
	if o.healthy != "" {
		dir = o.healthy
		rep, err = readReport(dir)
	} else {
		os.RemoveAll(dir)
		rep, err = o.suite(dir, stderr, "--trace")
	}
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Kernels: map[string][]string{}}
	var bad []string
	for _, r := range rep.Results {
		if r.Expected != report.Pass {
			continue
		}
		if r.Outcome != report.Pass {
			bad = append(bad, r.ID()+" "+string(r.Outcome))
			continue
		}
		ks, err := kernelsInTraces(filepath.Join(dir, "cases", r.ID()))
		if err != nil {
			return Plan{}, err
		}
		ks = slices.DeleteFunc(ks, func(k string) bool { return !o.kernels.MatchString(k) })
		if len(ks) > 0 {
			p.Kernels[r.ID()] = ks
		}
	}
	// A case that did not pass healthy (a skip for a capability the
	// device lacks, a known failure) has no verdict to mutate: listed,
	// not scored.
	p.Unscored = bad
	if len(p.Kernels) == 0 {
		return Plan{}, errors.New("no passing case launched a kernel (are the traces in cases/<id>/?)")
	}
	return p, nil
}

// groupKernels colours the kernels so that no case launches two kernels of
// one group: dropping a whole group in one run then drops exactly one
// kernel of each case selected. Greedy, most-launched kernel first.
func groupKernels(p Plan) [][]string {
	cases := map[string][]string{} // kernel -> cases
	for c, ks := range p.Kernels {
		for _, k := range ks {
			cases[k] = append(cases[k], c)
		}
	}
	var order []string
	for k := range cases {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		if len(cases[order[i]]) != len(cases[order[j]]) {
			return len(cases[order[i]]) > len(cases[order[j]])
		}
		return order[i] < order[j]
	})
	var groups [][]string
	var used []map[string]bool // per group: the cases it selects
	for _, k := range order {
		placed := false
		for g := range groups {
			if slices.ContainsFunc(cases[k], func(c string) bool { return used[g][c] }) {
				continue
			}
			groups[g] = append(groups[g], k)
			for _, c := range cases[k] {
				used[g][c] = true
			}
			placed = true
			break
		}
		if !placed {
			m := map[string]bool{}
			for _, c := range cases[k] {
				m[c] = true
			}
			groups = append(groups, []string{k})
			used = append(used, m)
		}
	}
	return groups
}

func (o options) mutated(i int, group []string, p Plan, stderr io.Writer) (map[string]report.Outcome, error) {
	dir := filepath.Join(o.out, fmt.Sprintf("drop-%02d", i))
	os.RemoveAll(dir)
	var rules, ids []string
	for _, k := range group {
		rules = append(rules, "drop:"+k)
	}
	for c, ks := range p.Kernels {
		if slices.ContainsFunc(ks, func(k string) bool { return slices.Contains(group, k) }) {
			ids = append(ids, regexp.QuoteMeta(c))
		}
	}
	sort.Strings(ids)
	focus := " (" + strings.Join(ids, "|") + ")$"
	rep, err := o.suite(dir, stderr, "--internal-inject="+strings.Join(rules, ","), "--ginkgo.focus="+focus)
	if err != nil {
		return nil, err
	}
	out := map[string]report.Outcome{}
	for _, r := range rep.Results {
		out[r.ID()] = r.Outcome
	}
	return out, nil
}

// Mutant is one (case, dropped kernel) pair and what the run with the
// kernel dropped ended as.
type Mutant struct {
	Case      string         `json:"case"`
	Kernel    string         `json:"kernel"`
	Outcome   report.Outcome `json:"outcome"` // "" when the run lost the case
	NoVerdict string         `json:"no_verdict,omitempty"`
}

// Killed: the case did not pass with its kernel dropped.
func (m Mutant) Killed() bool { return m.Outcome != "" && m.Outcome != report.Pass }

// Family is one case family's score.
type Family struct {
	Name     string `json:"family"`
	Killed   int    `json:"killed"`
	Total    int    `json:"total"`
	Declared int    `json:"declared_survivors,omitempty"`
}

// Score is the whole sweep.
type Score struct {
	Families  []Family `json:"families"`
	Killed    int      `json:"killed"`
	Total     int      `json:"total"`
	Survivors []Mutant `json:"survivors,omitempty"` // scored mutants that passed
	Lost      []Mutant `json:"lost,omitempty"`      // cases the mutated run did not report
	Declared  []Mutant `json:"declared,omitempty"`  // survivors of NoVerdict kernels (not scored)
	Mutants   []Mutant `json:"mutants"`
	Unscored  []string `json:"unscored,omitempty"` // expected pass but did not pass healthy
	Runs      int      `json:"runs"`
	Seconds   float64  `json:"seconds"`
}

// OK: every scored mutant killed and no case lost.
func (s Score) OK() bool { return len(s.Survivors) == 0 && len(s.Lost) == 0 && s.Killed == s.Total }

func family(id string) string {
	if c := report.ParseCase(id, nil); c.Spec != "" {
		return c.Spec
	}
	return id
}

// score judges every mutant: runs[kernel][case] is the outcome of case in
// the run that dropped kernel.
func score(p Plan, runs map[string]map[string]report.Outcome) Score {
	var s Score
	fams := map[string]*Family{}
	var ids []string
	for c := range p.Kernels {
		ids = append(ids, c)
	}
	sort.Strings(ids)
	for _, c := range ids {
		for _, k := range p.Kernels[c] {
			m := Mutant{Case: c, Kernel: k, Outcome: runs[k][c]}
			if kk, ok := kernels.Lookup(k); ok {
				m.NoVerdict = kk.NoVerdict
			}
			s.Mutants = append(s.Mutants, m)
			f := fams[family(c)]
			if f == nil {
				f = &Family{Name: family(c)}
				fams[family(c)] = f
			}
			switch {
			case m.Outcome == "":
				s.Lost = append(s.Lost, m)
				f.Total++
				s.Total++
			case m.NoVerdict != "" && !m.Killed():
				s.Declared = append(s.Declared, m)
				f.Declared++
			default:
				f.Total++
				s.Total++
				if m.Killed() {
					f.Killed++
					s.Killed++
				} else {
					s.Survivors = append(s.Survivors, m)
				}
			}
		}
	}
	for _, f := range fams {
		s.Families = append(s.Families, *f)
	}
	sort.Slice(s.Families, func(i, j int) bool { return s.Families[i].Name < s.Families[j].Name })
	return s
}

func (s Score) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %8s %8s\n", "family", "killed", "total")
	for _, f := range s.Families {
		extra := ""
		if f.Declared > 0 {
			extra = fmt.Sprintf("  (+%d declared no-verdict survivors)", f.Declared)
		}
		fmt.Fprintf(&b, "%-12s %8d %8d%s\n", f.Name, f.Killed, f.Total, extra)
	}
	for _, m := range s.Survivors {
		fmt.Fprintf(&b, "SURVIVED  %s with %s dropped: still pass\n", m.Case, m.Kernel)
	}
	for _, m := range s.Lost {
		fmt.Fprintf(&b, "LOST      %s with %s dropped: not in the run's results\n", m.Case, m.Kernel)
	}
	for _, m := range s.Declared {
		fmt.Fprintf(&b, "declared  %s with %s dropped: pass (no verdict: %s)\n", m.Case, m.Kernel, m.NoVerdict)
	}
	if len(s.Unscored) > 0 {
		fmt.Fprintf(&b, "not scored (expected pass, did not pass healthy): %s\n", strings.Join(s.Unscored, ", "))
	}
	pct := 100.0
	if s.Total > 0 {
		pct = 100 * float64(s.Killed) / float64(s.Total)
	}
	verdict := "PASS"
	if !s.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "p2pmutate: %s — mutation score %d/%d (%.1f%%), %d runs, %.1f s\n", verdict, s.Killed, s.Total, pct, s.Runs, s.Seconds)
	return b.String()
}
