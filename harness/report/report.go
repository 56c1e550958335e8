// Package report holds the results.json model: outcomes and their severity
// order, verdicts, per-case results with their typed identity (Case: the
// id is derived from its parts, and ParseCase is the one reader of an id
// from a file) and rank evidence, metrics and the environment fingerprint
// with its typed readers. It is plain data so that the suite, the gate and
// the cmd/ programs share one definition.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"p2patomics/internal/device"
)

// Schema is the results.json schema version.
const Schema = 1

// Outcome is what happened to a case.
type Outcome string

// Outcomes in severity order (docs/ARCHITECTURE.md, Outcomes).
const (
	Pass  Outcome = "pass"
	Skip  Outcome = "skip"
	Fail  Outcome = "fail"
	Error Outcome = "error"
	// NotRunOutcome is a case the runner judged without running it, from
	// the first of its kind's cases that failed the same way
	// (Result.JudgedFrom names it). It is an outcome, never a skip: a
	// case that did not run showed nothing, so it can meet no baseline
	// but its judge's (expect.Judge). Not the verdict NotRun (an
	// interrupted run's unfinished case, outcome incomplete).
	NotRunOutcome Outcome = "not-run"
	Timeout       Outcome = "timeout"
	Crash         Outcome = "crash"
	Incomplete    Outcome = "incomplete"
	Abort         Outcome = "abort"
)

// Outcomes lists every outcome, least severe first.
var Outcomes = []Outcome{Pass, Skip, Fail, Error, NotRunOutcome, Timeout, Crash, Incomplete, Abort}

// Severity is the outcome's index in Outcomes; -1 for an unknown value.
func (o Outcome) Severity() int {
	for i, x := range Outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// ParseOutcome accepts any case.
func ParseOutcome(s string) (Outcome, error) {
	o := Outcome(strings.ToLower(strings.TrimSpace(s)))
	if o.Severity() < 0 {
		return "", fmt.Errorf("unknown outcome %q (want one of %s)", s, joinOutcomes())
	}
	return o, nil
}

func joinOutcomes() string {
	s := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// Verdict is a case's standing against a baseline (gate mode only).
type Verdict string

const (
	Expected              Verdict = "expected"
	ExpectedFail          Verdict = "expected-fail"
	UnexpectedPass        Verdict = "unexpected-pass"
	UnexpectedImprovement Verdict = "unexpected-improvement"
	Regression            Verdict = "regression"
	// Flake is a new flake the run was told to tolerate
	// (--allow-new-flakes): reported, not gating.
	Flake      Verdict = "flake"
	KnownFlake Verdict = "known-flake"
	Missing    Verdict = "missing"
	// NewFlake is a case that did not meet its baseline, met it on a rerun
	// in a fresh world, and that the baseline's flakes.txt does not list:
	// for a driver gate a finding, so it gates (docs/GATING.md).
	NewFlake Verdict = "new-flake"
	// NotRun is a case an interrupted run (Summary.Interrupted) never got
	// to finish (outcome incomplete): not run, not a regression.
	NotRun Verdict = "not-run"
	// CapabilityLost is a case that ended not supported while the device
	// or its backend advertised the capability it needs
	// (expect.CapabilityLost; Result.CapabilityLost says which and what
	// the call said): gating, gated or not, whatever the baseline holds.
	CapabilityLost Verdict = "capability-lost"
)

// Gating reports whether a verdict fails the gate.
func (v Verdict) Gating() bool {
	switch v {
	case UnexpectedPass, UnexpectedImprovement, Regression, Missing, NewFlake:
		return true
	case CapabilityLost:
		return true
	}
	return false
}

// Fault is the GPU fault a rank died of (the type the backend returned).
type Fault = device.Fault

// Rank is per-rank evidence for one case.
type Rank struct {
	Rank       int    `json:"rank"`
	Pid        int    `json:"pid"`
	Device     int    `json:"device"`
	ExitCode   *int   `json:"exit_code"` // nil while alive
	Signal     string `json:"signal,omitempty"`
	GoDump     bool   `json:"go_dump"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// Metric is one measured quantity.
type Metric struct {
	Unit   string  `json:"unit"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
	Method string  `json:"method"`
	// Better is the direction the metric was declared with (Direction;
	// absent in runs recorded before metrics declared one, and for a
	// count).
	Better Direction `json:"better,omitempty"`
	// Clock is what the devices' core clocks did while the case measured
	// (perf cases on backends that can sample them).
	Clock *Clock `json:"clock,omitempty"`
	// Ceiling is the physical limit of the resources a bandwidth metric's
	// bytes cross, read from the machine (absent where nothing could be
	// read: the host backend, or a GPU whose NVML did not answer).
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	// Samples are the timed samples the median, min and max summarise, in
	// the order taken, so a comparison can judge a change against the
	// spread (p2pcompare's Mann-Whitney U test) instead of a bare median.
	// Runs written before samples were kept have none.
	Samples []float64 `json:"samples,omitempty"`
}

// Ceiling is a bandwidth metric's physical limit: Value in the metric's
// unit, the median as a percentage of it, and the binding resource with
// how its rate was read. A sample above Value is a measurement error, so
// a recorded metric's Percent never exceeds 100.
type Ceiling struct {
	Value   float64 `json:"value"`
	Percent float64 `json:"percent"`
	Basis   string  `json:"basis"`
}

// At is the ceiling with Percent set for a metric whose median is med.
func (c *Ceiling) At(med float64) *Ceiling {
	if c == nil || c.Value <= 0 {
		return nil
	}
	out := *c
	out.Percent = math.Round(med/c.Value*1000) / 10
	return &out
}

// Clock summarises clock samples taken during a measurement: the range
// over every sample of every device, and each clock-event (throttle)
// reason seen, so a throttled sample shows in its metric.
type Clock struct {
	MinMHz    uint32   `json:"min_mhz"`
	MaxMHz    uint32   `json:"max_mhz"`
	Samples   int      `json:"samples"`
	Devices   []int    `json:"devices"`
	Reasons   []string `json:"reasons,omitempty"`
	Throttled bool     `json:"throttled"`
	Error     string   `json:"error,omitempty"`
}

// notThrottle are reasons that do not lower the clock below what the
// machine is set to run at.
var notThrottle = map[string]bool{"gpu_idle": true, "applications_clocks_setting": true, "display_clock_setting": true}

// Add folds one device's samples into c (nil c starts a new summary).
func (c *Clock) Add(dev int, minMHz, maxMHz uint32, n int, reasons []string, errText string) *Clock {
	if c == nil {
		c = &Clock{}
	}
	if n > 0 {
		if c.Samples == 0 || minMHz < c.MinMHz {
			c.MinMHz = minMHz
		}
		c.MaxMHz = max(c.MaxMHz, maxMHz)
		c.Samples += n
	}
	if !slices.Contains(c.Devices, dev) {
		c.Devices = append(c.Devices, dev)
	}
	for _, r := range reasons {
		if !slices.Contains(c.Reasons, r) {
			c.Reasons = append(c.Reasons, r)
		}
		if !notThrottle[r] {
			c.Throttled = true
		}
	}
	if errText != "" && c.Error == "" {
		c.Error = errText
	}
	return c
}

// Result is one case. Its identity is the embedded Case (r.Backend,
// r.Kind, r.Spec, r.Variant, r.Pair; r.ID() derives the id); results.json
// holds only the id (MarshalJSON, UnmarshalJSON). Ranks below is the
// per-rank evidence; the world size is r.Case.Ranks.
type Result struct {
	Case     `json:"-"`
	Labels   []string `json:"labels"`
	Outcome  Outcome  `json:"outcome"`
	Expected Outcome  `json:"expected"`
	Verdict  Verdict  `json:"verdict,omitempty"`
	// Baseline is the outcome the verdict compared against (a fails.txt
	// entry when gated), set only where it differs from Expected.
	Baseline Outcome `json:"baseline,omitempty"`
	// NotSupported names the capability the hardware or driver lacks that
	// explains this result (NotSupportedReason); "" otherwise.
	NotSupported string `json:"not_supported,omitempty"`
	// CapabilityLost names the capability the device advertised that this
	// not-supported result contradicts, with the device's answer and what
	// the call said (verdict capability-lost); "" otherwise.
	CapabilityLost string `json:"capability_lost,omitempty"`
	// JudgedFrom is, for outcome not-run, the case this one was judged
	// from and that case's outcome; nil for a case that ran.
	JudgedFrom *JudgedFrom       `json:"judged_from,omitempty"`
	Detail     string            `json:"detail"`
	Duration   float64           `json:"duration_s"`
	Fault      *Fault            `json:"fault,omitempty"`
	Ranks      []Rank            `json:"ranks"`
	Metrics    map[string]Metric `json:"metrics,omitempty"`
	Repro      string            `json:"repro,omitempty"`
	KernelLog  []string          `json:"kernel_log,omitempty"`
	// Evidence grades a pass of a mutation-scored case (the litmus
	// environments): "strong" when one of its mutants showed its weak
	// outcome on this machine in this run, "weak" when none did, so the
	// pass could not have told a broken ordering from a working one;
	// "inconclusive" when its outcome histogram never showed the
	// interleavings its shape needs. Empty for cases without mutants. Never set on an outcome but pass.
	Evidence Evidence `json:"evidence,omitempty"`
	// Inject is the driver-fault injector's rules the case ran under
	// (internal/inject); absent in every real measurement.
	Inject []string `json:"inject,omitempty"`
	// Rerun is the second attempt, in a fresh world, of a gated case whose
	// first attempt (Outcome, Detail) did not meet its baseline; nil when
	// there was none. The verdict is judged from both, so a re-render
	// judges a flake as the run did.
	Rerun *Attempt `json:"rerun,omitempty"`
	// PerfReruns holds, per metric the perf gate flagged on this result
	// (median past its perf.txt limit), the medians of its re-measurements
	// in fresh worlds; nil when none were made. The perf verdict is judged
	// from them (expect.JudgeMetrics), so a re-render judges a perf-noise as the
	// run did.
	PerfReruns map[string][]float64 `json:"perf_reruns,omitempty"`
}

// JudgedFrom is the case a not-run result was judged from (the first of
// its kind's cases in a row that failed the same way) and its outcome.
type JudgedFrom struct {
	Case    string  `json:"case"`
	Outcome Outcome `json:"outcome"`
}

// Attempt is one more run of a case (Result.Rerun).
type Attempt struct {
	Outcome  Outcome  `json:"outcome"`
	Detail   string   `json:"detail"`
	Duration float64  `json:"duration_s"`
	Evidence Evidence `json:"evidence,omitempty"`
}

// Evidence is what a pass is worth (Result.Evidence).
type Evidence string

const (
	EvidenceStrong Evidence = "strong"
	EvidenceWeak   Evidence = "weak"
	// EvidenceInconclusive: the outcome histogram is degenerate (it never
	// shows the interleavings the shape needs, kernels.LitmusNeeds), so the
	// absence of the forbidden outcome says nothing about the ordering.
	EvidenceInconclusive Evidence = "inconclusive"
)

// OutcomeIs reports whether r's raw outcome is o: r.OutcomeIs(r.Expected)
// is "the outcome equals the expected one", which is not "met". Whether a
// result counts against the run is Unexpected, the one pass/fail
// predicate (it knows not-supported, baselines and flakes); decide
// pass/fail on Unexpected, never on OutcomeIs.
func (r Result) OutcomeIs(o Outcome) bool { return r.Outcome == o }

// Report is the whole results.json.
type Report struct {
	Schema int `json:"schema"`
	// State is "no-plan" for the record written before the run had a
	// plan (Prepare's first write, found by a run killed before its first
	// checkpoint), "running" for a checkpoint written while cases ran, and
	// empty for the run's final record. A no-plan record is no run: every
	// tool treats it as no result (ErrNoPlan), never as 0 cases passed.
	State       string      `json:"state,omitempty"`
	Environment Environment `json:"environment"`
	Results     []Result    `json:"results"`
	Gate        *Gate       `json:"gate,omitempty"`
	// Summary is the run's one verdict (Summarize).
	Summary *Summary `json:"summary,omitempty"`
	// Pairs is the per-pair matrix: one row per backend, kind and ordered
	// pair of ranks, built from the cases labelled pair=<src>-<dst>.
	Pairs []PairRow `json:"pairs,omitempty"`
	// Timing is what growing the world costs: each world's start and the
	// suite's wall clock.
	Timing *Timing `json:"timing,omitempty"`
	// Matrices are the per-pair metrics in the shape of nvbandwidth's JSON
	// output (one square matrix per metric and case family, null where no
	// pair was measured), so scripts written for nvbandwidth read ours.
	Matrices []PairMatrix `json:"matrices,omitempty"`
	// WorldEvents are what happened to the ranks outside the cases' bodies
	// (WorldEvent): a rank that crashed or hung while its world started,
	// died idle, a world retired or respawned. Records written before
	// they were kept have none.
	WorldEvents []WorldEvent `json:"world_events,omitempty"`
	// AB is an A/B run's judgement of stack B against stack A (--ab;
	// ab.go): both stacks and every case's pair. Absent without --ab.
	AB *AB `json:"ab,omitempty"`
}

// PairMatrix is one metric over every ordered pair of ranks of one case
// family. Matrix[row][column] holds the median of the case that measured
// the pair (row = the case's first rank, column = its second); Direction
// says which way the data moved, in nvbandwidth's words ("GPU(row) ->
// GPU(column)", "GPU(row) <- GPU(column)", ...). Sum, Min, Max and Average
// are over the measured cells only.
type PairMatrix struct {
	Name        string       `json:"name"`
	Metric      string       `json:"metric"`
	Unit        string       `json:"unit"`
	Direction   string       `json:"direction"`
	Description string       `json:"description"`
	Matrix      [][]*float64 `json:"matrix"`
	Sum         float64      `json:"sum"`
	Min         float64      `json:"min"`
	Max         float64      `json:"max"`
	Average     float64      `json:"average"`
}

// PairRow summarises one ordered pair of ranks for one backend and kind:
// how many of its cases ran, how many missed their expected outcome, the
// worst outcome among them, and each metric they measured (the case's
// median, with its unit).
type PairRow struct {
	Backend string  `json:"backend"`
	Kind    string  `json:"kind"`
	Src     int     `json:"src"`
	Dst     int     `json:"dst"`
	Cases   int     `json:"cases"`
	Unmet   int     `json:"unmet"`
	Worst   Outcome `json:"worst"`
	// SharedGPU: the pair's two ranks ran on one GPU (the same device in
	// the cases' rank evidence, GPU backends only), so its numbers are of
	// one GPU's memory and time-sliced kernels, not of a link.
	SharedGPU bool              `json:"shared_gpu,omitempty"`
	Metrics   map[string]Metric `json:"metrics,omitempty"`
}

// Timing is the suite's own cost.
type Timing struct {
	SuiteWallS float64      `json:"suite_wall_s"`
	Worlds     []WorldStart `json:"worlds"`
}

// WorldStart is one world's start: spawn, hello, backend open (context,
// module load) in every rank, device locks.
type WorldStart struct {
	Backend string  `json:"backend"`
	Ranks   int     `json:"ranks"`
	Seconds float64 `json:"seconds"`
}

// Gate summarises gate mode.
type Gate struct {
	Pass    bool     `json:"pass"`
	Reasons []string `json:"reasons"`
}

// States of a results.json (Report.State).
const (
	StateNoPlan  = "no-plan"
	StateRunning = "running"
)

// ErrNoPlan: the record holds no plan (state no-plan, or no case at all),
// so there is no run to judge, compare or merge.
var ErrNoPlan = errors.New("no run recorded: the results.json holds no plan (state no-plan, 0 cases)")

// NoPlan returns ErrNoPlan when r records no run: state no-plan or no
// case at all (a results: [] or null from any writer).
func (r *Report) NoPlan() error {
	if r.State == StateNoPlan || len(r.Results) == 0 {
		return ErrNoPlan
	}
	return nil
}

// Write stores the report atomically (temp file + rename), so an
// interrupted run never leaves half a results.json.
func (r *Report) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode: %w", err)
	}
	return WriteAtomic(path, append(b, '\n'))
}

// Read loads a results.json: a regular file under MaxInput that passes
// Validate, or an error naming the file and the first problems (joined
// into one line).
func Read(path string) (*Report, error) {
	b, err := ReadRegular(path, MaxInput)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	// A committed run keeps a large results.json gzipped
	// (results.json.gz): read by its bytes, whatever its name.
	if b, err = gunzipped(path, b); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	// A running record's changes since the plan are in its journal
	// (journal.go): a killed run reads as it stood.
	if r.State == StateRunning {
		j, err := ReadRegular(JournalPath(path), MaxInput)
		if err == nil {
			err = ApplyJournal(&r, j)
		} else if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", JournalPath(path), err)
		}
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("report: %s: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return &r, nil
}

// SoakMetrics summarises a metric over every run of a soak: the median of
// the runs' medians (the first run, in a world that has not run this case
// yet, weighs one vote in many), the smallest min and largest max, and
// every sample counted.
func SoakMetrics(runs []map[string]Metric) map[string]Metric {
	meds := map[string][]float64{}
	out := map[string]Metric{}
	for _, ms := range runs {
		for name, m := range ms {
			meds[name] = append(meds[name], m.Median)
			acc, seen := out[name]
			if !seen {
				acc = m
				acc.N = 0
			}
			acc.Min, acc.Max = min(acc.Min, m.Min), max(acc.Max, m.Max)
			acc.N += m.N
			if seen {
				acc.Samples = append(slices.Clone(acc.Samples), m.Samples...)
			}
			out[name] = acc
		}
	}
	for name, v := range meds {
		m := out[name]
		sort.Float64s(v)
		m.Median = v[len(v)/2]
		if len(v)%2 == 0 {
			m.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		m.Method += fmt.Sprintf(" (soak: median of %d runs' medians)", len(v))
		out[name] = m
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
