package expect

import (
	"fmt"
	"sort"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// Judge gives one case its verdict against the baseline (deqp-runner's
// with_baseline, in the outcomes' order (docs/ARCHITECTURE.md) pass < skip < fail < error < timeout <
// crash < incomplete < abort). The baseline outcome b is s.Fails[id] when
// listed, else the case's own expected outcome.
//
//	outcome == b, b listed in fails.txt, not pass → expected-fail
//	outcome == b otherwise                        → expected
//	outcome less severe than b                    → unexpected-pass (outcome pass)
//	                                                unexpected-improvement (otherwise)
//	outcome more severe than b, id in flakes      → known-flake
//	outcome more severe than b, rerun met b       → new-flake (flake with
//	                                                s.AllowNewFlakes, but
//	                                                never after a crash or
//	                                                a timeout)
//	outcome more severe than b                    → regression
//
// A rerun that met the baseline is a finding (new-flake, gating) unless
// the run allows new flakes; a first attempt that crashed (a signal, a
// GPU fault, a dead rank) or timed out is never forgiven by it: only
// flakes.txt can say that case is known to do so.
//
// So a crash canary that crashes is "expected", or "expected-fail" when
// fails.txt lists it as a crash; --update-expectations lists only cases
// whose outcome differs from their expected, so canaries stay unlisted.
// A case whose id matches flakes.txt is a known-flake on any departure from
// its baseline, improvements included (a flaky case is not gated either way).
// A case that matches skips.txt and reports skip is expected. rerun is the
// same case run again in a fresh world after a first regression (nil:
// r.Rerun, the rerun the result recorded, if any); only an exact match of
// the baseline makes it a flake.
func Judge(r report.Result, s *Set, rerun *report.Result) report.Verdict {
	if rerun == nil && r.Rerun != nil {
		rerun = &report.Result{Case: r.Case, Outcome: r.Rerun.Outcome, Expected: r.Expected, Evidence: r.Rerun.Evidence}
	}
	b := s.Baseline(r)
	got := r.Outcome
	if got == report.NotRunOutcome {
		return judgeNotRun(r, s, b)
	}
	if got == report.Skip {
		if _, ok := s.Skipped(r.ID()); ok {
			return report.Expected
		}
	}
	if got == b && lostEvidence(r, s) {
		// The pass is the baseline's, but no mutant was killed this time:
		// the case could no longer have failed on a broken ordering.
		if _, ok := s.Flaky(r.ID()); ok {
			return report.KnownFlake
		}
		if rerun != nil && rerun.Outcome == b && !lostEvidence(*rerun, s) {
			return s.newFlake()
		}
		return report.Regression
	}
	if got == b {
		if _, listed := s.listed(r.ID()); listed && b != report.Pass {
			return report.ExpectedFail
		}
		return report.Expected
	}
	if _, ok := s.Flaky(r.ID()); ok {
		return report.KnownFlake
	}
	if severity(got) < severity(b) && got == report.Pass {
		return report.UnexpectedPass
	}
	if severity(got) < severity(b) {
		// Only a pass is an improvement. A case whose baseline is a
		// fail, crash or timeout (a control, planted bug, canary or a
		// known failure) that now ends otherwise did not show the failure
		// it controls: a skip, an error or a different failure is a lost
		// control, and accepting it as "better" would accept the broken
		// path. Never rerun into a flake: the rerun judges a regression
		// the same way.
		return report.Regression
	}
	if rerun != nil && rerun.Outcome == b {
		if Unforgivable(got) {
			return report.NewFlake // not even --allow-new-flakes forgives it
		}
		return s.newFlake()
	}
	return report.Regression
}

// judgeNotRun is the verdict of a case judged without running (outcome
// not-run). It showed nothing, so it can never be expected on its own:
// a control, planted bug, canary or expected failure has lost its control
// (regression); any other case meets the baseline only where the baseline
// lists (fails.txt, or skips.txt for a skip) the very outcome the case it
// was judged from ended with (the kind's refusal the baseline already
// knows: expected-fail, expected for skips.txt), and is a regression
// otherwise. Never a flake either way: it did not run to be flaky.
func judgeNotRun(r report.Result, s *Set, b report.Outcome) report.Verdict {
	if report.IsControl(r) || r.JudgedFrom == nil {
		return report.Regression
	}
	from := r.JudgedFrom.Outcome
	if _, ok := s.Skipped(r.ID()); ok && from == report.Skip {
		return report.Expected
	}
	if _, listed := s.listed(r.ID()); listed && b == from && b != report.Pass {
		return report.ExpectedFail
	}
	return report.Regression
}

// Unforgivable outcomes of a first attempt are never forgiven by a rerun
// that met the baseline: a crash (a signal, a GPU fault, a dead rank) or a
// timeout is what a driver gate exists to catch, however rarely it
// happens, so it stays new-flake (gating) even with --allow-new-flakes;
// only flakes.txt can say that case is known to do so.
func Unforgivable(o report.Outcome) bool { return o == report.Crash || o == report.Timeout }

// newFlake is the verdict of a rerun that met the baseline: new-flake,
// gating, or flake where the run allows new flakes (--allow-new-flakes).
func (s *Set) newFlake() report.Verdict {
	if s != nil && s.AllowNewFlakes {
		return report.Flake
	}
	return report.NewFlake
}

// lostEvidence: a pass of a case whose baseline pass had strong evidence
// (evidence.txt) came with less than strong evidence now.
func lostEvidence(r report.Result, s *Set) bool {
	return s != nil && r.Outcome == report.Pass && s.Strong[r.ID()] && r.Evidence != report.EvidenceStrong
}

func (s *Set) listed(id string) (report.Outcome, bool) {
	if s == nil {
		return "", false
	}
	o, ok := s.Fails[id]
	return o, ok
}

// severity orders unknown outcomes above every known one, so a corrupt
// outcome can only ever read as a regression.
func severity(o report.Outcome) int {
	if n := o.Severity(); n >= 0 {
		return n
	}
	return len(report.Outcomes)
}

// NeedsRerun reports whether a first verdict asks for the case to be run
// once more in a fresh world (deqp-runner reruns unexpected failures).
func NeedsRerun(v report.Verdict) bool { return v == report.Regression }

// Gate judges a whole run. Results that already carry a verdict (the suite
// set it with Judge after a rerun) keep it; the others are judged with no
// rerun. Every id in s.Cases that the current selection includes
// (selected(id); nil selects all), that did not run and that does not match
// skips.txt is appended as a "missing" entry (outcome skip, expected the
// baseline's). The gate fails on any gating verdict (report.Verdict.Gating:
// regression, unexpected-pass, unexpected-improvement, missing); Reasons
// holds one sentence per gating case, in result order.
func Gate(results []report.Result, s *Set, selected func(id string) bool) ([]report.Result, report.Gate) {
	out := make([]report.Result, 0, len(results))
	ran := make(map[string]bool, len(results))
	for _, r := range results {
		if r.Verdict == "" {
			r.Verdict = Judge(r, s, nil)
		}
		ran[r.ID()] = true
		out = append(out, r)
	}
	if s != nil {
		ids := make([]string, 0, len(s.Cases))
		for id := range s.Cases {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if ran[id] {
				continue
			}
			if selected != nil && !selected(id) {
				continue
			}
			if _, skip := s.Skipped(id); skip {
				continue
			}
			b := report.Pass
			if o, ok := s.Fails[id]; ok {
				b = o
			}
			out = append(out, report.Result{
				Case:     report.ParseCase(id, nil),
				Labels:   []string{},
				Outcome:  report.Skip,
				Expected: b,
				Verdict:  report.Missing,
				Detail:   "missing: in the baseline's cases.txt but not run",
				Ranks:    []report.Rank{},
			})
		}
	}
	g := report.Gate{Pass: true, Reasons: []string{}}
	for _, r := range out {
		if !r.Verdict.Gating() {
			continue
		}
		g.Pass = false
		g.Reasons = append(g.Reasons, Reason(r, s))
	}
	return out, g
}

// Reason is the one-sentence explanation of a case's verdict, as the gate
// prints it.
func Reason(r report.Result, s *Set) string {
	b := s.Baseline(r)
	const update = " (update the baseline with --update-expectations)"
	switch r.Verdict {
	case report.CapabilityLost:
		return fmt.Sprintf("capability lost: %s went %s → %s: %s", r.ID(), b, r.Outcome, strings.TrimPrefix(r.CapabilityLost, "capability lost: "))
	case report.Regression:
		if lostEvidence(r, s) {
			return fmt.Sprintf("regression: %s passed with %s evidence (no mutant killed); the baseline's pass had strong evidence", r.ID(), evidenceWord(r.Evidence))
		}
		return regressionReason(r, b)
	case report.NewFlake:
		if lostEvidence(r, s) {
			return fmt.Sprintf("new flake: %s passed without strong evidence and regained it on rerun (list it in flakes.txt, or pass --allow-new-flakes)", r.ID())
		}
		if Unforgivable(r.Outcome) {
			return fmt.Sprintf("new flake: %s went %s → %s, then %s on a rerun in a fresh world; a %s is never forgiven by a rerun (list the case in flakes.txt if it is a known flake)", r.ID(), b, r.Outcome, rerunWord(r), r.Outcome)
		}
		return fmt.Sprintf("new flake: %s went %s → %s, then %s on a rerun in a fresh world; flakes.txt does not list it (list it there, or pass --allow-new-flakes)", r.ID(), b, r.Outcome, rerunWord(r))
	case report.UnexpectedPass:
		return fmt.Sprintf("unexpected pass: %s went %s → %s%s", r.ID(), b, r.Outcome, update)
	case report.UnexpectedImprovement:
		return fmt.Sprintf("unexpected improvement: %s went %s → %s%s", r.ID(), b, r.Outcome, update)
	case report.Missing:
		return fmt.Sprintf("missing: %s ran in the baseline but not now", r.ID())
	case report.Flake:
		if lostEvidence(r, s) {
			return fmt.Sprintf("flake: %s passed without strong evidence and regained it on rerun", r.ID())
		}
		return fmt.Sprintf("flake: %s went %s → %s and met the baseline on rerun (allowed by --allow-new-flakes)", r.ID(), b, r.Outcome)
	case report.KnownFlake:
		return fmt.Sprintf("known flake: %s went %s → %s", r.ID(), b, r.Outcome)
	case report.ExpectedFail:
		return fmt.Sprintf("expected fail: %s is %s as in the baseline", r.ID(), r.Outcome)
	}
	return fmt.Sprintf("expected: %s is %s", r.ID(), r.Outcome)
}

// regressionReason says what a regression lost: a control that showed
// nothing (control lost), a case judged without running (and from which
// case), or an outcome more severe than the baseline's.
func regressionReason(r report.Result, b report.Outcome) string {
	from := ""
	if r.Outcome == report.NotRunOutcome && r.JudgedFrom != nil {
		from = fmt.Sprintf(" (judged from %s, which ended %s)", r.JudgedFrom.Case, r.JudgedFrom.Outcome)
	}
	if (report.IsControl(r) || report.ExpectsFailure(b)) && (report.LosesControl(r.Outcome) || severity(r.Outcome) < severity(b)) {
		return fmt.Sprintf("regression: %s went %s → %s%s: control lost (a control, planted bug, canary or expected failure that no longer shows its outcome is not an improvement)", r.ID(), b, r.Outcome, from)
	}
	return fmt.Sprintf("regression: %s went %s → %s%s", r.ID(), b, r.Outcome, from)
}

// CheckStack compares a "# stack:" header with this run's fingerprint.
// Every key of the header must match env.Stack() (report's Stack); "driver"
// matches the exact version or a driver line that prefixes it ("580"
// matches "580.159.04"). For the host backend's vendor only vendor and arch take part,
// so an OS or kernel upgrade does not trip it. An empty header always
// matches; allowMismatch turns a mismatch into nil. The error is one line.
func CheckStack(stack map[string]string, env report.Environment, allowMismatch bool) error {
	if len(stack) == 0 || allowMismatch {
		return nil
	}
	cur := env.Stack()
	host := backends.Driverless(strings.ToLower(stack["vendor"])) || (stack["vendor"] == "" && backends.Driverless(cur["vendor"]))
	var bad []string
	keys := make([]string, 0, len(stack))
	for k := range stack {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if host && k != "vendor" && k != "arch" {
			continue
		}
		want, got := stack[k], cur[k]
		ok := strings.EqualFold(want, got)
		if k == "driver" && !ok {
			ok = strings.HasPrefix(got, want+".")
		}
		if !ok {
			if got == "" {
				got = "(unknown)"
			}
			bad = append(bad, fmt.Sprintf("%s=%s but this run has %s", k, want, got))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("stack mismatch: expectations say %s; this run is %s (%s; pass --allow-stack-mismatch to gate anyway)",
		FormatStack(stack), FormatStack(cur), strings.Join(bad, ", "))
}

func rerunWord(r report.Result) string {
	if r.Rerun == nil {
		return "the baseline's outcome"
	}
	return string(r.Rerun.Outcome)
}

func evidenceWord(e report.Evidence) string {
	if e == "" {
		return "no"
	}
	return string(e)
}
