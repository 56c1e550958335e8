package expect

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// PerfFile is the perf baseline's name in an expectation folder
// (perf.FileName): a limit per gated metric, recorded from several runs.
const PerfFile = perf.FileName

// PerfCardFile is the shape of the other perf baselines a folder may hold
// beside perf.txt, one per card (one scope) of the same stack:
// perf-<card>.txt, <card> lowercase letters, digits and dashes
// (perf-nvidia-h100-80gb-hbm3-e9bfb33c.txt). One folder serves every
// card of its stack; the run is judged by the file whose scope is its
// GPUs (ChoosePerf).
const PerfCardFile = "perf-<card>.txt"

var perfCardRe = regexp.MustCompile(`^perf-[a-z0-9]+(-[a-z0-9]+)*\.txt$`)

// PerfBaseline is one perf file of a Set.
type PerfBaseline struct {
	File   *perf.File
	Source string // its path
}

// loadPerf reads a perf baseline into s; its "# stack:" header joins the
// others, so a perf baseline of another stack is refused like the rest.
// Its "# scope:" must be one perf.CheckScope reads, and another of the
// same scope is refused: a run on those GPUs would have two baselines.
func (s *Set) loadPerf(path string) error {
	b, err := report.ReadRegular(path, 16<<20)
	if err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	f, err := perf.Parse(path, b)
	if err != nil {
		return err
	}
	if err := perf.ValidScope(f.Scope); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, o := range s.PerfFiles {
		if o.File.Scope == f.Scope {
			return fmt.Errorf("%s: a second perf baseline for %s (the first is %s): one file a scope", path, f.Scope, o.Source)
		}
	}
	if f.Stack != "" {
		if err := s.addStack(path+":1", f.Stack); err != nil {
			return err
		}
	}
	s.Sources = append(s.Sources, path)
	s.PerfFiles = append(s.PerfFiles, PerfBaseline{File: f, Source: path})
	if s.Perf == nil || filepath.Base(s.PerfSource) != PerfFile && filepath.Base(path) == PerfFile {
		s.Perf, s.PerfSource = f, path
	}
	return nil
}

// PerfFor is the perf baseline a run on env's GPUs is judged by: the one
// file whose scope holds them (perf.CheckScope), a machine scope before a
// sku scope (recorded on these very GPUs). None loaded: the zero value.
// None matching is a one-line error: with one file, perf.CheckScope's own
// (as before a folder could hold several); with several, naming each
// file's scope and this run's GPUs.
func (s *Set) PerfFor(env report.Environment) (PerfBaseline, error) {
	if s == nil || len(s.PerfFiles) == 0 {
		return PerfBaseline{}, nil
	}
	if len(s.PerfFiles) == 1 {
		return s.PerfFiles[0], perf.CheckScope(s.PerfFiles[0].File, env)
	}
	var machine, sku []PerfBaseline
	var scopes []string
	for _, b := range s.PerfFiles {
		scopes = append(scopes, fmt.Sprintf("%s (%s)", b.File.Scope, b.Source))
		if perf.CheckScope(b.File, env) != nil {
			continue
		}
		if strings.HasPrefix(b.File.Scope, "machine ") {
			machine = append(machine, b)
		} else {
			sku = append(sku, b)
		}
	}
	switch {
	case len(machine) == 1:
		return machine[0], nil
	case len(machine) == 0 && len(sku) == 1:
		return sku[0], nil
	case len(machine)+len(sku) > 1:
		var both []string
		for _, b := range append(machine, sku...) {
			both = append(both, b.Source)
		}
		return PerfBaseline{}, fmt.Errorf("perf baseline: %s all hold this run's GPUs (%s): keep one", strings.Join(both, " and "), orNone(perf.GPUNames(env)))
	}
	return PerfBaseline{}, fmt.Errorf("perf baseline scope mismatch: this run is on %s (GPUs %s); the perf baselines are for %s (record a perf baseline for this machine, or pass --allow-stack-mismatch to gate against %s)",
		orNone(perf.GPUNames(env)), orNone(strings.Join(perf.GPUs(env), ",")), strings.Join(scopes, ", "), s.PerfSource)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// ChoosePerf makes s.Perf the baseline a run on env's GPUs is judged by
// (PerfFor), or returns PerfFor's refusal. allow (--allow-stack-mismatch)
// lifts the refusal: the run is judged by the folder's perf.txt, as when a
// folder held one perf baseline.
func (s *Set) ChoosePerf(env report.Environment, allow bool) error {
	b, err := s.PerfFor(env)
	if err != nil {
		if allow {
			return nil
		}
		return err
	}
	if b.File != nil {
		s.Perf, s.PerfSource = b.File, b.Source
	}
	return nil
}

// judgePerf adds the perf gate to a judged run: every perf.txt line is
// judged (JudgeMetrics) with the re-measurements the results carry
// (Result.PerfReruns: the suite's, recorded, so a re-render judges as the
// run did), the findings go into the summary, and a perf-regression or
// perf-missing fails the gate.
func judgePerf(s *Set, judged []report.Result, g *report.Gate, sum *report.Summary) {
	if s == nil || s.Perf == nil {
		return
	}
	p := JudgeMetrics(s.Perf, judged, PerfReruns(judged), s.PerfSource)
	sum.AddPerf(p)
	if g == nil {
		return
	}
	for _, f := range p.Failing() {
		g.Pass = false
		g.Reasons = append(g.Reasons, fmt.Sprintf("%s: %s; %s", f.Verdict, f.Named(), f.Detail))
	}
}

// WritePerf records a perf baseline into dir from runs made in fresh
// worlds (names say which, in its header): perf.Record's rule, under the
// stack header of the first run; every run must be of that stack. It is
// written where WritePerfAt says. Fewer than perf.MinRuns runs is
// perf.ErrTooFewRuns, and nothing is written.
func WritePerf(dir string, runs []*report.Report, names []string) (*perf.File, error) {
	_, f, err := WritePerfAt(dir, runs, names, perf.Recording{})
	return f, err
}

// WritePerfWith is WritePerf under rc's metric predicate and scope
// (perf.Recording; the zero value is WritePerf's).
func WritePerfWith(dir string, runs []*report.Report, names []string, rc perf.Recording) (*perf.File, error) {
	_, f, err := WritePerfAt(dir, runs, names, rc)
	return f, err
}

// WritePerfAt is WritePerfWith, saying the path it wrote: the file of dir
// that already holds the recorded scope (recording again replaces it),
// else perf.txt in a folder without a perf baseline, else a new
// perf-<card>.txt beside the others (PerfTarget), so recording one card
// into a folder that holds another's never touches the other's file.
func WritePerfAt(dir string, runs []*report.Report, names []string, rc perf.Recording) (string, *perf.File, error) {
	if len(runs) == 0 {
		return "", nil, perf.ErrTooFewRuns
	}
	header, err := stackHeader(runs[0].Environment)
	if err != nil {
		return "", nil, err
	}
	stack := strings.TrimSpace(strings.TrimPrefix(header, "# stack:"))
	if stack != "" {
		want, err := ParseStack(stack)
		if err != nil {
			return "", nil, err
		}
		for i, r := range runs {
			if err := CheckStack(want, r.Environment, false); err != nil {
				return "", nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	f, err := rc.Record(runs, names, stack)
	if err != nil {
		return "", nil, err
	}
	path, err := PerfTarget(dir, f.Scope, perf.GPUNames(runs[0].Environment))
	if err != nil {
		return "", nil, err
	}
	return path, f, writeAtomic(path, perf.Format(f))
}

// PerfTarget is the file of dir a perf baseline of scope is written to,
// gpu the recorded GPUs' name: the perf file there that holds scope, else
// dir/perf.txt when dir holds no perf file, else dir/perf-<card>.txt with
// <card> the GPU name's words (a sku scope) and the first GPU UUID's
// first 8 hex digits (a machine scope): perf-nvidia-h100-80gb-hbm3-e9bfb33c.txt.
// A perf file in dir that does not parse is an error (it is not
// overwritten blind), and so is a perf-<card>.txt of that name holding
// another scope.
func PerfTarget(dir, scope, gpu string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("expectations: %w", err)
	}
	found := false
	for _, e := range ents {
		if folderKind(e.Name()) != PerfFile || !e.Type().IsRegular() {
			continue
		}
		found = true
		path := filepath.Join(dir, e.Name())
		b, err := report.ReadRegular(path, 16<<20)
		if err != nil {
			return "", fmt.Errorf("expectations: %w", err)
		}
		f, err := perf.Parse(path, b)
		if err != nil {
			return "", err
		}
		if f.Scope == scope {
			return path, nil
		}
	}
	if !found {
		return filepath.Join(dir, PerfFile), nil
	}
	kind, val, _ := strings.Cut(scope, " ")
	card := slug(gpu)
	if kind == "sku" {
		card = slug(val)
	} else if u := strings.TrimPrefix(strings.ToLower(strings.Split(val, ",")[0]), "gpu-"); u != "" {
		card = strings.Trim(card+"-"+slug(u[:min(8, len(u))]), "-")
	}
	if card == "" {
		return "", fmt.Errorf("expectations: a perf baseline for %q names no card to call its file by", scope)
	}
	path := filepath.Join(dir, "perf-"+card+".txt")
	if _, err := os.Stat(path); err == nil {
		return "", fmt.Errorf("expectations: %s holds another scope than %s: move it, or record into a new folder", path, scope)
	}
	return path, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug is s in lowercase letters and digits, words joined by dashes.
func slug(s string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// PerfReruns is JudgeMetrics's rerun map (Line.Key → medians) from the
// re-measurements results carry; the last result of an id wins, as in
// JudgeMetrics.
func PerfReruns(results []report.Result) map[string][]float64 {
	last := map[string]report.Result{}
	for _, r := range results {
		last[r.ID()] = r
	}
	out := map[string][]float64{}
	for id, r := range last {
		for metric, meds := range r.PerfReruns {
			out[id+" "+metric] = meds
		}
	}
	return out
}

// PerfFlagged is the metrics of one finished result that the perf gate
// would call a regression before any re-measurement (JudgeMetrics offline):
// the ones the suite re-measures in fresh worlds. A perf-unstable metric
// (its samples straddle the limit) is not flagged: re-measuring cannot
// make one mode's median of it. nil when s has no perf.txt.
func PerfFlagged(s *Set, r report.Result) []string {
	if s == nil || s.Perf == nil || r.Outcome != report.Pass {
		return nil
	}
	var out []string
	for _, f := range JudgeMetrics(s.Perf, []report.Result{r}, nil, "").Findings {
		if f.Verdict == report.PerfRegression {
			out = append(out, f.Metric)
		}
	}
	return out
}
