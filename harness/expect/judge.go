package expect

import (
	"fmt"
	"regexp"

	"p2patomics/harness/perf"
	"p2patomics/harness/power"
	"p2patomics/harness/report"
)

// JudgeOne gives one finished case its verdict the way the whole run is
// judged (JudgeRun), so Ginkgo's pass/fail of its spec agrees with the
// run's verdict. s is nil when ungated. A result that already carries a
// verdict (set after a rerun) keeps it.
//
// A not-supported result that contradicts what the device advertised
// (CapabilityLost) is capability-lost, gated or not and whatever the
// baseline or a rerun said: a baseline's skip row written when the device
// lacked the capability no longer explains it. Ungated, a control that
// was judged without running (outcome not-run) has lost its control
// (Judge), not-supported or not.
func JudgeOne(r report.Result, s *Set, env report.Environment) report.Result {
	r.NotSupported = report.NotSupportedReason(r, env)
	if s != nil {
		// Re-judged against another baseline (p2preport --expectations),
		// the recorded run's baseline outcome no longer applies: every
		// surface shows Baseline as "expected" (report.Was).
		r.Baseline = ""
		if b := s.Baseline(r); b != r.Expected {
			r.Baseline = b
		}
	}
	if lost := CapabilityLost(r, env); lost != "" {
		r.NotSupported, r.CapabilityLost, r.Verdict = "", lost, report.CapabilityLost
		return r
	}
	if r.Verdict != "" {
		return r
	}
	if s == nil && r.NotSupported != "" && !(r.Outcome == report.NotRunOutcome && report.IsControl(r)) {
		// Ungated, a capability the device lacks is never a failure by
		// itself (deqp-runner's NotSupported); gated, the baseline decides,
		// so a case that passed there and is not supported now regresses.
		if r.OutcomeIs(r.Expected) {
			r.Verdict = report.Expected
		} else {
			r.Verdict = report.ExpectedFail
		}
		return r
	}
	r.Verdict = Judge(r, s, nil)
	return r
}

// Option changes how JudgeRun tells the verdict.
type Option func(*judging)

type judging struct {
	interrupted string
	runFaults   []string
	power       *power.Target
}

// StatePower has JudgeRun state the run's power against target t
// (harness/power; summary.power and the verdict line). The suite always
// asks; a replay asks when the record stated it (its target kept).
func StatePower(t power.Target) Option { return func(j *judging) { j.power = &t } }

// RunFaults gives JudgeRun the run's health failures no case carries
// (report.Summary.RunFaults): any makes the verdict FAIL.
func RunFaults(faults []string) Option { return func(j *judging) { j.runFaults = faults } }

// Interrupted tells JudgeRun that the signal sig (its name, "SIGINT")
// stopped the run before its end: every incomplete case is not-run, not a
// regression, and the verdict is INTERRUPTED ("" changes nothing).
func Interrupted(sig string) Option { return func(j *judging) { j.interrupted = sig } }

// JudgeRun is the one verdict function: it judges every result (JudgeOne)
// and, gated, adds the baseline's missing cases (Gate), then tells the
// verdict as a Summary. gate names the expectation paths ("" ungated);
// out is the --out folder the summary's case folders are under.
// The returned Gate is nil when ungated. Every tool that shows a verdict
// of a recorded run comes here through JudgeReport, with the suite's
// stack rules.
func JudgeRun(results []report.Result, s *Set, env report.Environment, selected func(id string) bool, gate, out string, opts ...Option) ([]report.Result, *report.Gate, report.Summary) {
	var j judging
	for _, o := range opts {
		o(&j)
	}
	judged := make([]report.Result, 0, len(results))
	for _, r := range results {
		if j.interrupted != "" && r.Outcome == report.Incomplete {
			r.Verdict = report.NotRun
		}
		judged = append(judged, JudgeOne(r, s, env))
	}
	var g *report.Gate
	if s != nil {
		var gg report.Gate
		judged, gg = Gate(judged, s, selected)
		g = &gg
	}
	sum := report.SummarizeRun(judged, gate, out, j.interrupted)
	sum.FailRun(j.runFaults)
	sum.MarkInjected(env.Inject)
	sum.MarkFired(env.Inject, env.InjectFired)
	judgePerf(s, judged, g, &sum)
	if j.power != nil {
		var lines []perf.Line
		if s != nil && s.Perf != nil {
			lines = s.Perf.Lines
		}
		sum.MarkPower(power.Of(judged, lines, *j.power))
	}
	return judged, g, sum
}

// Rejudge is how JudgeReport judges a recorded run.
type Rejudge struct {
	// Set is the baseline to judge against afresh; nil keeps the verdicts
	// the run recorded (a gated run's) where the outcomes agree with them
	// (Recheck), judging the cases without one.
	Set *Set
	// Gate names Set's paths (with Set), or the recorded gate (without).
	Gate string
	// Out is the folder the reports go to (the case folders' parent).
	Out string
	// AllowStackMismatch is the suite's --allow-stack-mismatch.
	AllowStackMismatch bool
}

// Check is JudgeReport's refusals, made before anything is judged or
// rewritten: with a Set, its stack header must match the run's
// fingerprint (CheckStack), one of its perf baselines the run's GPUs
// (Set.ChoosePerf: the one that does becomes Set.Perf), and it must share
// enough case ids with the run (CheckShared). The error is one line.
func (o Rejudge) Check(rep *report.Report) error {
	if o.Set == nil {
		return nil
	}
	if err := CheckStack(o.Set.Stack, rep.Environment, o.AllowStackMismatch); err != nil {
		return err
	}
	if err := o.Set.ChoosePerf(rep.Environment, o.AllowStackMismatch); err != nil {
		return err
	}
	ids := make([]string, 0, len(rep.Results))
	for _, r := range rep.Results {
		if r.Verdict != report.Missing {
			ids = append(ids, r.ID())
		}
	}
	return CheckShared(o.Set, ids)
}

// JudgeReport judges a recorded run (results.json) in place with the
// suite's rules, so every tool that shows a verdict (p2preport,
// p2pheatmap, report.html, p2pfleet) shows the one the suite would: the
// baseline's stack header must match the run's fingerprint (CheckStack)
// and the baseline must share enough case ids with the run (CheckShared),
// else it returns that one-line error and leaves rep as it was; a rerun
// the run recorded is judged as the run judged it; an interrupted run
// (summary.interrupted) stays interrupted.
func JudgeReport(rep *report.Report, o Rejudge) error {
	if err := o.Check(rep); err != nil {
		return err
	}
	interrupted := ""
	var runFaults []string
	if rep.Summary != nil {
		interrupted, runFaults = rep.Summary.Interrupted, rep.Summary.RunFaults
	}
	gated := rep.Gate != nil || (rep.Summary != nil && rep.Summary.Gate != "")
	// A record without a summary predates the recorded baseline outcome
	// (Result.Baseline): its expected-fail verdicts name no outcome.
	legacy := rep.Summary == nil
	results := make([]report.Result, 0, len(rep.Results))
	for _, r := range rep.Results {
		if r.Verdict == report.Missing {
			continue // the gate adds the baseline's missing cases afresh
		}
		if o.Set != nil || r.Verdict == report.NotRun {
			r.Verdict = ""
		} else {
			r.Verdict = Recheck(r, gated, legacy, rep.Environment)
		}
		results = append(results, r)
	}
	gate := o.Gate
	if o.Set == nil && gate == "" && rep.Summary != nil && rep.Summary.Gate != "" {
		gate = rep.Summary.Gate
	}
	if o.Set == nil {
		// Recorded missing entries are the run's: keep them.
		for _, r := range rep.Results {
			if r.Verdict == report.Missing {
				results = append(results, r)
			}
		}
	}
	judged, g, sum := JudgeRun(results, o.Set, rep.Environment, nil, gate, o.Out, replayOptions(rep, interrupted, runFaults)...)
	if o.Set == nil && rep.Gate != nil {
		// A gated run's gate, as recorded, with the recorded verdicts.
		var gg report.Gate
		judged, gg = Gate(judged, nil, nil)
		g = &gg
	}
	rep.Results, rep.Summary = judged, &sum
	if g != nil {
		rep.Gate = g
	}
	// An A/B run's judgement of B stands in every re-judged record (a B
	// worse than A fails it; the line names B), as the suite said it.
	report.ApplyAB(rep.Summary, rep.AB)
	return nil
}

// replayOptions are JudgeRun's options for a re-judged record: its
// interruption and run faults, and its power where the record stated one.
func replayOptions(rep *report.Report, interrupted string, runFaults []string) []Option {
	opts := []Option{Interrupted(interrupted), RunFaults(runFaults)}
	if rep.Summary != nil && rep.Summary.Power != nil {
		// The record stated its power: the replay states it again, against
		// the target it was run with (a target that no longer parses is
		// stated without one).
		t, _ := power.Parse(rep.Summary.Power.Target)
		opts = append(opts, StatePower(t))
	}
	return opts
}

// Recheck is the verdict a recorded result keeps when a run is re-judged
// without a baseline (JudgeReport with no Set): the recorded verdict is
// never trusted by itself (issue 49 S3: a crash marked "expected" in a
// pass case read PASS in every tool). The result is judged again from its
// outcome, expected outcome, recorded baseline outcome and rerun, with
// only what a record cannot otherwise show taken from its verdict: a
// fails.txt listing (expected-fail), a flakes.txt match (known-flake), a
// skips.txt match (expected for a skip, gated runs only) and
// --allow-new-flakes (flake). None of those claims can excuse an outcome
// the judge would not excuse with the claimed file (a crash is no
// expected-fail of a pass, a crash rerun is never a flake). A recorded
// gating verdict is kept: a record that says a case failed is believed
// (lost strong evidence, for one, is not in the record). gated says the
// run was gated; legacy that the record predates Result.Baseline (no
// summary), so an expected-fail there claims the outcome it shows; env is
// the run's fingerprint (not-supported, capability-lost).
func Recheck(r report.Result, gated, legacy bool, env report.Environment) report.Verdict {
	v := r.Verdict
	if v == "" || v.Gating() {
		return v
	}
	r.Verdict = ""
	var s *Set
	if gated {
		s = NewSet()
		id := r.ID()
		exact := regexp.MustCompile("^" + regexp.QuoteMeta(id) + "$")
		switch {
		case r.Baseline != "":
			s.Fails[id] = r.Baseline
		case v == report.ExpectedFail && legacy:
			s.Fails[id] = r.Outcome
		case v == report.ExpectedFail:
			s.Fails[id] = r.Expected
		}
		switch {
		case v == report.KnownFlake:
			s.Flakes = []Pattern{{Re: exact, Text: id}}
		case v == report.Flake:
			s.AllowNewFlakes = true
		case v == report.Expected && (r.Outcome == report.Skip || r.Outcome == report.NotRunOutcome && r.JudgedFrom != nil && r.JudgedFrom.Outcome == report.Skip):
			// A skip, or a case judged from a skip, that skips.txt lists.
			s.Skips = []Pattern{{Re: exact, Text: id}}
		}
	}
	if j := JudgeOne(r, s, env).Verdict; j.Gating() {
		return j
	}
	return v
}

// MinShared is the least fraction of a run's cases that a baseline must
// have run (cases.txt, or fails.txt where there is no cases.txt) for a
// gate against it to mean anything (CheckShared).
const MinShared = 0.5

// CheckShared refuses a baseline that shares less than MinShared of ids
// (the planned or recorded case ids) with its cases: a gate against it
// would compare nothing and pass. It is not a stack check, so
// --allow-stack-mismatch does not lift it. A baseline that names no case
// id at all (only flakes.txt or skips.txt) is not checked; nor is an
// empty ids. The error is one line.
func CheckShared(s *Set, ids []string) error {
	if s == nil || len(ids) == 0 {
		return nil
	}
	known := s.Cases
	if len(known) == 0 {
		known = map[string]bool{}
		for id := range s.Fails {
			known[id] = true
		}
	}
	if len(known) == 0 {
		return nil
	}
	shared := 0
	var first string
	for _, id := range ids {
		if known[id] {
			shared++
		} else if first == "" {
			first = id
		}
	}
	if float64(shared) >= MinShared*float64(len(ids)) {
		return nil
	}
	return fmt.Errorf("the baseline (%d case ids) shares %d of this run's %d cases (less than %.0f%%; %s is not in it): a gate against it would compare nothing; choose the baseline of this selection and stack",
		len(known), shared, len(ids), MinShared*100, first)
}
