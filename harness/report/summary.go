package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"p2patomics/internal/device"
)

// NeedsPrefix starts a case label naming the device capability the case's
// result depends on: a device.Caps field by its results.json name
// (device.CapNames), as Needs spells it: "needs=host_atomics". Where a
// device answers that capability no, a fail of that case is what the
// hardware predicts, so it is not-supported rather than unexpected; its
// evidence stays.
const NeedsPrefix = "needs="

// Needs is the label saying a case's result depends on capability c
// (device.CapHostAtomics, ...).
func Needs(c string) string { return NeedsPrefix + c }

// legacyNeeds maps the vendor attribute a needs= label named before labels
// named capabilities (the results.json files committed before then carry
// it) to the capability that answers it, so those records re-render to
// the verdict they were given.
var legacyNeeds = map[string]string{"host_native_atomic_supported": device.CapHostAtomics}

// NotSupportedReason says why r is not-supported (deqp-runner's
// NotSupported): a capability the hardware or driver lacks, named in the
// reason. It is "" when r is not.
//
//   - A skip that is not a gate's "missing" entry: the harness skips a case
//     only for a missing capability (harness.SkipError; the rank's
//     ErrNotSupported), and the skip's detail names it.
//   - A fail of a case expected to pass whose needs= capability some
//     device in env answers no: the observed failure is what that predicts.
//
// Crashes, timeouts and errors are never not-supported: a missing
// capability explains wrong numbers, not a dead rank.
func NotSupportedReason(r Result, env Environment) string {
	switch {
	case r.Outcome == NotRunOutcome && r.JudgedFrom != nil && r.JudgedFrom.Outcome == Skip:
		// Judged from a case that was not supported: the same call said
		// so for its whole kind, and the detail carries its words.
		return r.Detail
	case r.Outcome == Skip && r.Verdict != Missing:
		if r.Detail == "" {
			return "skipped: a capability this device or driver lacks"
		}
		return r.Detail
	case r.Outcome == Fail && r.Expected == Pass:
		for _, l := range r.Labels {
			name, ok := strings.CutPrefix(l, NeedsPrefix)
			if !ok {
				continue
			}
			if legacy, ok := legacyNeeds[name]; ok {
				name = legacy
			}
			if dev, no, ok := lacking(env.GPUs, name); ok {
				return fmt.Sprintf("device %d lacks %s (%s), so this fail is what the hardware predicts (observed: %s)",
					dev, name, no.Reason, r.Detail)
			}
		}
	}
	return ""
}

// ControlLabels mark a case whose expected outcome is itself the evidence
// (specs' LabelControl and LabelPlanted, and the canary spec's identity
// label): it must run and show its outcome; ending skip, error or not-run
// it has lost its control (expect.Judge).
var ControlLabels = []string{"control", "planted", "canary"}

// IsControl reports whether r is a control, a planted bug or a canary
// (ControlLabels), or expects a non-pass outcome (an expected fail, crash
// or timeout is a control of what the harness notices).
func IsControl(r Result) bool {
	if ExpectsFailure(r.Expected) {
		return true
	}
	for _, l := range r.Labels {
		if slices.Contains(ControlLabels, l) {
			return true
		}
	}
	return false
}

// ExpectsFailure: a baseline of fail, crash, timeout or worse is an
// expected failure, a control of what the harness notices.
func ExpectsFailure(o Outcome) bool { return o.Severity() >= Fail.Severity() }

// LosesControl: a control, planted bug, canary or expected failure that
// ends so showed nothing of what it controls (it was refused, not
// supported, or never ran): never an improvement.
func LosesControl(o Outcome) bool { return o == Skip || o == Error || o == NotRunOutcome }

// lacking is the first GPU that answers capability name no, and its
// answer; a GPU that did not answer (the zero Cap) lacks nothing, and a
// name Caps has no field for is lacked by none.
func lacking(gpus []GPU, name string) (int, device.Cap, bool) {
	for _, g := range gpus {
		c, ok := g.Caps.Named(name)
		if ok && c.Known() && !c.OK {
			return g.Ordinal, c, true
		}
	}
	return 0, device.Cap{}, false
}

// Exit statuses a verdict gives (Summary.ExitStatus); 2 (usage) and 3
// (reports not written) are the suite's own (docs/GATING.md).
const (
	ExitPass        = 0
	ExitFail        = 1
	ExitInterrupted = 4 // SIGINT, SIGTERM or SIGHUP stopped the run; the reports are written
)

// Verdict words of a Summary.
const (
	VerdictPass        = "PASS"
	VerdictFail        = "FAIL"
	VerdictInterrupted = "INTERRUPTED"
)

// Summary is the run's one verdict, from which the exit status, the last
// line of stdout, junit.xml and the per-spec pass/fail are all told.
type Summary struct {
	// Verdict is "PASS", "FAIL", "INTERRUPTED" or "NO RESULT" (no case recorded).
	Verdict    string `json:"verdict"`
	ExitStatus int    `json:"exit_status"`
	// Gate is the expectation paths the run was gated against; "" when
	// ungated (each case's own expected outcome is the baseline).
	Gate         string            `json:"gate,omitempty"`
	Cases        int               `json:"cases"`
	ByOutcome    map[Outcome]int   `json:"by_outcome"`
	ByVerdict    map[Verdict]int   `json:"by_verdict"`
	Unexpected   []UnexpectedCase  `json:"unexpected"`
	NotSupported []NotSupportedRef `json:"not_supported"`
	// Interrupted names the signal that stopped the run before its end
	// ("SIGINT"); "" for a run that ran to its end. An interrupted run's
	// verdict is INTERRUPTED whatever its cases did, and the cases it did
	// not finish are NotRun, never regressions.
	Interrupted string `json:"interrupted,omitempty"`
	// NotRun lists the cases an interrupted run did not finish.
	NotRun []string `json:"not_run,omitempty"`
	// Line is the last line of stdout.
	Line string `json:"line"`
	// Inject is the driver-fault injector's rules the run was made under
	// (environment.inject); the line names them.
	Inject []string `json:"inject,omitempty"`
	// NeverFired are the rules of Inject that never acted in the run
	// (environment.inject_fired): the line names each, so a rule that
	// injected nothing never reads as a fault the gate passed.
	NeverFired []string `json:"inject_never_fired,omitempty"`
	// Perf is the perf gate's findings (a gate whose baseline has a
	// perf.txt); absent otherwise and in runs recorded before it.
	Perf *PerfSummary `json:"perf,omitempty"`
	// RunFaults are the run's health failures no case's result carries
	// (harness.Runner.Failures): a GPU fault a process that is none of the
	// run's ranks logged, or one charged to a case whose result was
	// already recorded. Any makes the verdict FAIL; the line names the
	// first.
	RunFaults []string `json:"run_faults,omitempty"`
	// Recorded is the baseline the run recorded (--update-expectations):
	// the line names its folder, and a forced update (--force or
	// P2PAT_FORCE=1) as forced, with what it blessed, so a regression
	// blessed into a baseline never reads as a plain PASS (issue 49 S4,
	// U26). Absent when the run recorded none, and in older records.
	Recorded *Recorded `json:"baseline_recorded,omitempty"`
	// Power is what the run could have caught and whether it reached its
	// --power target (power.go; issue 52); absent in records before it.
	Power *Power `json:"power,omitempty"`
}

// Recorded is a baseline a run wrote at its end.
type Recorded struct {
	Dir string `json:"dir"`
	// Forced: --force (or P2PAT_FORCE=1) was on, so the gate's refusal to
	// bless a regression was lifted; Blessed lists what it blessed (the
	// changes the refusal would have named), empty when there was none.
	Forced  bool     `json:"forced,omitempty"`
	Blessed []string `json:"blessed,omitempty"`
}

// MarkRecorded names the baseline the run recorded on the verdict line.
func (s *Summary) MarkRecorded(r *Recorded) {
	s.Recorded = r
	s.Line = s.line()
}

// FailRun records the run's health failures (RunFaults): a run that ran to
// its end with any is a FAIL whatever its cases did.
func (s *Summary) FailRun(faults []string) {
	if len(faults) == 0 || s.Verdict == NoResult {
		return
	}
	s.RunFaults = faults
	if s.Interrupted == "" {
		s.Verdict, s.ExitStatus = VerdictFail, ExitFail
	}
	s.Line = s.line()
}

// MarkInjected names the injector's rules on the verdict line: a run
// whose driver was made to lie is never read as a measurement of it.
func (s *Summary) MarkInjected(rules []string) {
	if len(rules) == 0 {
		return
	}
	s.Inject = rules
	s.Line = s.line()
}

// MarkFired names on the verdict line each rule that never fired
// (fired: the run's count per rule; nil in a record made before the
// counts, which claims nothing).
func (s *Summary) MarkFired(rules []string, fired map[string]uint64) {
	if fired == nil {
		return
	}
	s.NeverFired = nil
	for _, r := range rules {
		if fired[r] == 0 {
			s.NeverFired = append(s.NeverFired, r)
		}
	}
	s.Line = s.line()
}

// UnexpectedCase is one case the verdict calls unexpected: it went from
// what the baseline holds (Was) to Outcome.
type UnexpectedCase struct {
	ID      string  `json:"id"`
	Verdict Verdict `json:"verdict"`
	Was     Outcome `json:"was"`
	Outcome Outcome `json:"outcome"`
	// Folder is the case's evidence folder (written for every case that
	// did not pass), "" when there is none.
	Folder string `json:"folder,omitempty"`
	// Note says why an outcome equal to the baseline's is unexpected (a
	// litmus pass whose evidence is weaker than the baseline's).
	Note string `json:"note,omitempty"`
	// Rerun is the second attempt's outcome (a new flake's, or a crash's
	// that a passing rerun does not forgive); "" when there was none.
	Rerun Outcome `json:"rerun,omitempty"`
}

// Now is what the case is now, as a person reads it: its outcome, or
// "missing" for a baseline case the run did not plan (recorded as a skip).
func (u UnexpectedCase) Now() string {
	if u.Verdict == Missing {
		return "missing"
	}
	return string(u.Outcome)
}

// NotSupportedRef is one not-supported case and its reason.
type NotSupportedRef struct {
	ID      string  `json:"id"`
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason"`
}

// Unexpected reports whether the verdict counts r against the run. A
// result not judged yet (no verdict) counts when it missed its expected
// outcome and is not not-supported.
func Unexpected(r Result) bool {
	if r.Verdict != "" {
		return r.Verdict.Gating()
	}
	return !r.OutcomeIs(r.Expected) && r.NotSupported == ""
}

// Was is the outcome r's verdict compared against: its baseline outcome
// when the gate recorded one, else its expected outcome.
func Was(r Result) Outcome {
	if r.Baseline != "" {
		return r.Baseline
	}
	return r.Expected
}

// NoResult is the verdict of a record with no case, ExitNoResult its exit
// status (the suite's "reports not written", 3: there is no run to read).
const (
	NoResult     = "NO RESULT"
	ExitNoResult = 3
)

// ReportsNotWritten marks a run whose reports could not all be written
// (what names them): its exit status is 3 and its line says so first, so
// results.json never records exit_status 0, nor stdout ends on a PASS line,
// for a run that exits 3. Verdict stays the cases' verdict.
func (s *Summary) ReportsNotWritten(what string) {
	s.ExitStatus = ExitNoResult
	s.Line = fmt.Sprintf("p2patomics: REPORTS NOT WRITTEN (exit 3: %s); the cases: %s", what, strings.TrimPrefix(s.Line, "p2patomics: "))
}

// Err is ErrNoPlan for a NO RESULT summary, else nil.
func (s Summary) Err() error {
	if s.Verdict == NoResult {
		return ErrNoPlan
	}
	return nil
}

// Summarize tells the run's verdict from its judged results. gate is the
// expectation paths ("" ungated); out is the --out folder as the user gave
// it, for the case folders the last line points at.
func Summarize(results []Result, gate, out string) Summary {
	return SummarizeRun(results, gate, out, "")
}

// SummarizeRun is Summarize for a run that interrupted (the signal's
// name) stopped before its end ("" for one that ran to its end): its
// incomplete cases are listed as not run, never unexpected, and its
// verdict is INTERRUPTED.
func SummarizeRun(results []Result, gate, out, interrupted string) Summary {
	s := Summary{Gate: gate, Cases: len(results), ByOutcome: map[Outcome]int{}, ByVerdict: map[Verdict]int{},
		Unexpected: []UnexpectedCase{}, NotSupported: []NotSupportedRef{}, Interrupted: interrupted}
	for _, r := range results {
		if interrupted != "" && r.Outcome == Incomplete {
			r.Verdict = NotRun
			s.NotRun = append(s.NotRun, r.ID())
		}
		s.ByOutcome[r.Outcome]++
		if r.Verdict != "" {
			s.ByVerdict[r.Verdict]++
		}
		if r.NotSupported != "" {
			s.NotSupported = append(s.NotSupported, NotSupportedRef{ID: r.ID(), Outcome: r.Outcome, Reason: r.NotSupported})
		}
		if !Unexpected(r) {
			continue
		}
		u := UnexpectedCase{ID: r.ID(), Verdict: r.Verdict, Was: Was(r), Outcome: r.Outcome}
		if r.Rerun != nil {
			u.Rerun = r.Rerun.Outcome
		}
		if u.Was == u.Outcome && r.Evidence != "" {
			u.Note = fmt.Sprintf("evidence %s, the baseline's strong", r.Evidence)
		}
		u.Note = lostNote(r, u.Note)
		if u.Verdict == "" {
			u.Verdict = Regression
			if r.Outcome.Severity() < r.Expected.Severity() {
				u.Verdict = UnexpectedPass
			}
		}
		// The runner writes a folder for every case it ran that did not
		// pass; an incomplete, aborted or missing case never ran.
		if r.Outcome != Pass && r.Outcome != Incomplete && r.Outcome != Abort && r.Outcome != NotRunOutcome && r.Verdict != Missing {
			u.Folder = filepath.Join(out, "cases", r.ID()) + "/"
		}
		s.Unexpected = append(s.Unexpected, u)
	}
	s.Verdict, s.ExitStatus = VerdictPass, ExitPass
	if len(results) == 0 {
		// Zero cases is no run (a usage error's or a full disk's
		// record), never a PASS of nothing.
		s.Verdict, s.ExitStatus = NoResult, ExitNoResult
		s.Line = "p2patomics: NO RESULT — no case recorded (state no-plan): nothing ran, nothing to judge"
		return s
	}
	switch {
	case interrupted != "":
		s.Verdict, s.ExitStatus = VerdictInterrupted, ExitInterrupted
	case len(s.Unexpected) > 0:
		s.Verdict, s.ExitStatus = VerdictFail, ExitFail
	}
	s.Line = s.line()
	return s
}

// lostNote is the note an unexpected case's line carries for what it
// lost: the capability its device advertised (capability-lost), the
// control it no longer is, the case a not-run was judged from.
func lostNote(r Result, note string) string {
	switch {
	case r.Verdict == CapabilityLost:
		return r.CapabilityLost
	case r.Outcome == NotRunOutcome && r.JudgedFrom != nil && IsControl(r):
		return fmt.Sprintf("control lost: not run, judged from %s (%s)", r.JudgedFrom.Case, r.JudgedFrom.Outcome)
	case r.Outcome == NotRunOutcome && r.JudgedFrom != nil:
		return fmt.Sprintf("not run, judged from %s (%s)", r.JudgedFrom.Case, r.JudgedFrom.Outcome)
	case r.Verdict == Regression && (IsControl(r) || ExpectsFailure(Was(r))) && (LosesControl(r.Outcome) || r.Outcome.Severity() < Was(r).Severity()):
		return "control lost"
	}
	return note
}

// maxNamed is how many unexpected cases the last line names.
const maxNamed = 3

func (s Summary) line() string {
	l := s.verdictLine()
	if len(s.Inject) > 0 {
		l += " [driver faults injected: " + strings.Join(s.Inject, ",") + "]"
	}
	for _, r := range s.NeverFired {
		l += "; rule " + r + " never fired"
	}
	if r := s.Recorded; r != nil {
		l += "; baseline recorded in " + r.Dir
		switch {
		case r.Forced && len(r.Blessed) > 0:
			l += fmt.Sprintf(" with --force: %s blessed (first: %s)", plural(len(r.Blessed), "regression"), r.Blessed[0])
		case r.Forced:
			l += " with --force (it blessed no regression)"
		}
	}
	return l
}

func (s Summary) verdictLine() string {
	basis := "no baseline: each case's expected outcome"
	if s.Gate != "" {
		basis = "gate " + s.Gate
	}
	ns := ""
	if n := len(s.NotSupported); n > 0 {
		ns = fmt.Sprintf(", %d not supported", n)
	}
	// Flakes that do not gate are still findings: the line counts them.
	if n := s.ByVerdict[KnownFlake]; n > 0 {
		ns += ", " + plural(n, "known flake")
	}
	if n := s.ByVerdict[Flake]; n > 0 {
		ns += fmt.Sprintf(", %s allowed (--allow-new-flakes)", plural(n, "new flake"))
	}
	if s.Interrupted != "" {
		ran := s.Cases - len(s.NotRun)
		return fmt.Sprintf("p2patomics: INTERRUPTED — %d of %s ran, %d unexpected so far%s (%s; %s)",
			ran, plural(s.Cases, "case"), len(s.Unexpected), ns, s.Interrupted, basis)
	}
	health := ""
	if n := len(s.RunFaults); n > 0 {
		health = "run health: " + s.RunFaults[0]
		if n > 1 {
			health += fmt.Sprintf(" (+%d more in results.json summary.run_faults)", n-1)
		}
	}
	perf := s.perfLine()
	perfFails := len(s.Perf.Failing()) > 0
	switch {
	case len(s.Unexpected) == 0 && !perfFails && health == "":
		if perf != "" {
			ns += "; " + perf
		}
		// The power (power.go) before the basis, so the line still ends
		// on it (scripts match "(gate …)" last).
		return fmt.Sprintf("p2patomics: PASS — %s, 0 unexpected%s%s (%s)", plural(s.Cases, "case"), ns, s.Power.line(), basis)
	case len(s.Unexpected) == 0 && !perfFails:
		return fmt.Sprintf("p2patomics: FAIL — %s, 0 unexpected; %s%s", plural(s.Cases, "case"), health, s.Power.line())
	case len(s.Unexpected) == 0:
		line := fmt.Sprintf("p2patomics: FAIL — %s (%s)", perf, basis)
		if health != "" {
			line += "; " + health
		}
		return line + s.Power.line()
	}
	named := strings.Join(s.unexpectedNamed(basis), "; ")
	if perfFails {
		named += "; " + perf
	}
	if health != "" {
		named += "; " + health
	}
	named += s.Power.line()
	return fmt.Sprintf("p2patomics: FAIL — %s: %s", s.unexpectedHead(), named)
}

// unexpectedHead counts the unexpected cases, by verdict when they differ
// ("3 regression", "4 unexpected (3 regression, 1 missing)").
func (s Summary) unexpectedHead() string {
	kinds := map[Verdict]int{}
	var order []Verdict
	for _, u := range s.Unexpected {
		if kinds[u.Verdict] == 0 {
			order = append(order, u.Verdict)
		}
		kinds[u.Verdict]++
	}
	if len(order) == 1 {
		return plural(len(s.Unexpected), string(order[0])) + s.neverRun()
	}
	var parts []string
	for _, v := range order {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[v], v))
	}
	return fmt.Sprintf("%d unexpected (%s)%s", len(s.Unexpected), strings.Join(parts, ", "), s.neverRun())
}

// neverRun counts the unexpected cases judged without running (outcome
// not-run: judged from a crash streak, or left out of a wedged world),
// " (97 never run: judged from x (crash))", "" when there are none: a
// count of regressions must not read as that many cases that ran and broke
// (issue 49 U20). The reason is the one they share, else how many differ.
func (s Summary) neverRun() string {
	n := 0
	var why []string
	seen := map[string]bool{}
	for _, u := range s.Unexpected {
		if u.Outcome != NotRunOutcome {
			continue
		}
		n++
		r := strings.TrimPrefix(strings.TrimPrefix(u.Note, "control lost: "), "not run, ")
		if r != "" && !seen[r] {
			seen[r] = true
			why = append(why, r)
		}
	}
	switch {
	case n == 0:
		return ""
	case len(why) == 0:
		return fmt.Sprintf(" (%d never run)", n)
	case len(why) == 1:
		return fmt.Sprintf(" (%d never run: %s)", n, why[0])
	}
	from := true
	for _, r := range why {
		from = from && strings.HasPrefix(r, "judged from ")
	}
	if from {
		return fmt.Sprintf(" (%d never run: judged from %d earlier cases, first %s)", n, len(why), strings.TrimPrefix(why[0], "judged from "))
	}
	return fmt.Sprintf(" (%d never run: %s; %d other reasons)", n, why[0], len(why)-1)
}

// unexpectedNamed names the first maxNamed unexpected cases, each with its
// change, rerun, note and evidence folder, then how many more.
func (s Summary) unexpectedNamed(basis string) []string {
	var named []string
	for i, u := range s.Unexpected {
		if i == maxNamed {
			named = append(named, fmt.Sprintf("+%d more (%s)", len(s.Unexpected)-maxNamed, basis))
			break
		}
		one := fmt.Sprintf("%s %s → %s", u.ID, u.Was, u.Now())
		if u.Rerun != "" {
			one += ", rerun " + string(u.Rerun)
		}
		if u.Note != "" {
			one += " (" + u.Note + ")"
		}
		if u.Folder != "" {
			one += " (" + u.Folder + ")"
		}
		named = append(named, one)
	}
	return named
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	switch {
	case what == string(Missing):
		return fmt.Sprintf("%d %s", n, what)
	case strings.HasSuffix(what, "flake"):
		return fmt.Sprintf("%d %ss", n, what)
	case strings.HasSuffix(what, "s"):
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
