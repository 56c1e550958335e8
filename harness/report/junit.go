package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// JUnit's shape as Jenkins (xunit's junit-10.xsd) and GitLab read it:
// testsuites > testsuite (name, tests, failures, errors, skipped, time,
// timestamp, hostname) > properties?, testcase*, system-err?; a testcase holds
// skipped?, error*, failure*, system-out* in that order.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr"`
		Hostname   string          `xml:"hostname,attr"`
		Properties []junitProperty `xml:"properties>property"`
		Cases      []junitCase     `xml:"testcase"`
		SystemErr  string          `xml:"system-err,omitempty"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Skipped   *junitSkipped `xml:"skipped"`
		Error     *junitProblem `xml:"error"`
		Failure   *junitProblem `xml:"failure"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// erroring outcomes: an unexpected one is a JUnit <error> (the test could
// not finish), not a <failure> (it finished and was wrong).
func erroring(o Outcome) bool {
	switch o {
	case Error, NotRunOutcome, Timeout, Crash, Abort, Incomplete:
		return true
	}
	return false
}

// JUnit renders the judged report as JUnit XML. A failure or error is
// exactly what the verdict calls unexpected (Unexpected): an unexpected
// crash, timeout, error, abort or incomplete is an <error>, any other
// (a regression to fail, an unexpected pass, a missing case) a <failure>.
// Every other skip, and a case an interrupted run did not finish
// (verdict not-run), is <skipped> with its reason; every other non-pass
// outcome (a canary's crash, a planted fail, a not-supported fail) passes,
// with its outcome in system-out. The run's world events (a rank that
// crashed or hung while its world started, died idle, ...) are the suite's
// system-err, one a line; a start crash is also its case's <error>. A
// perf-regression or perf-missing (summary.perf) is a <failure> of its
// case, whatever the case's outcome; the other perf findings are in its
// system-out. stamp is when the run started.
func JUnit(rep *Report, stamp time.Time) ([]byte, error) {
	s := junitSuite{Name: "p2patomics", Timestamp: stamp.UTC().Format("2006-01-02T15:04:05"), Hostname: rep.Environment.NodeName()}
	s.Properties = junitProperties(rep)
	total := 0.0
	perf := perfByCase(rep.Summary)
	for _, r := range rep.Results {
		c := junitCaseOf(r)
		addPerf(&c, perf[r.ID()])
		delete(perf, r.ID()) // a rerun's later entry of the id must not repeat them
		switch {
		case c.Error != nil:
			s.Errors++
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
		total += r.Duration
		s.Cases = append(s.Cases, c)
	}
	if c, ok := runCase(rep.Summary); ok {
		s.Errors++
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	var evs []string
	for _, e := range rep.WorldEvents {
		evs = append(evs, "world event: "+e.Line())
	}
	s.SystemErr = strings.Join(evs, "\n")
	if rep.Timing != nil && rep.Timing.SuiteWallS > 0 {
		total = rep.Timing.SuiteWallS
	}
	s.Time = seconds(total)
	root := junitSuites{Name: "p2patomics", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped,
		Time: s.Time, Suites: []junitSuite{s}}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("junit: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.Write(b)
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// junitCaseOf is one result as a testcase: classname backend.kind, the
// outcome, verdict, reason, detail and repro in system-out; an unexpected
// result a <failure> (an <error> for the erroring outcomes), a not-run or
// skipped one <skipped> with its reason.
func junitCaseOf(r Result) junitCase {
	cls := r.ID()
	if r.Spec != "" {
		cls = r.Backend + "." + r.Kind
	}
	c := junitCase{Name: r.ID(), Classname: cls, Time: seconds(r.Duration)}
	// expected= is what the verdict was judged against (Was: the
	// baseline's outcome when gated), as on every other surface.
	out := fmt.Sprintf("outcome=%s expected=%s", Shown(r), Was(r))
	if r.Verdict != "" {
		out += " verdict=" + string(r.Verdict)
	}
	if r.NotSupported != "" {
		out += "\nnot supported: " + r.NotSupported
	}
	if r.Detail != "" {
		out += "\n" + r.Detail
	}
	if r.Repro != "" {
		out += "\nrepro: " + r.Repro
	}
	switch {
	case Unexpected(r):
		p := &junitProblem{Message: fmt.Sprintf("%s: %s → %s", verdictOf(r), Was(r), Shown(r)), Type: string(r.Outcome), Text: r.Detail}
		if erroring(r.Outcome) {
			c.Error = p
		} else {
			c.Failure = p
		}
	case r.Verdict == NotRun:
		// An interrupted run's unfinished case: not run, not an error.
		c.Skipped = &junitSkipped{Message: "not run: " + r.Detail}
	case r.Outcome == Skip:
		msg := r.Detail
		if r.NotSupported != "" {
			msg = "not supported: " + r.NotSupported
		}
		c.Skipped = &junitSkipped{Message: msg}
	}
	c.SystemOut = out
	return c
}

// runCase is the run's own testcase ("p2patomics.run") when the run as a
// whole did not end well though no case says so: interrupted (its
// unfinished cases are only <skipped>), no case recorded, or reports not
// written (exit 3). Its <error> makes a CI page red for every ending whose
// exit status is not 0 or 1.
func runCase(s *Summary) (junitCase, bool) {
	if s == nil {
		return junitCase{}, false
	}
	var typ string
	switch {
	case s.Interrupted != "" || s.ExitStatus == ExitInterrupted:
		typ = "interrupted"
	case s.Verdict == NoResult:
		typ = "no-result"
	case s.ExitStatus == ExitNoResult:
		typ = "reports-not-written"
	default:
		return junitCase{}, false
	}
	msg := fmt.Sprintf("%s: exit %d", typ, s.ExitStatus)
	return junitCase{Name: "p2patomics.run", Classname: "p2patomics", Time: "0.000",
		Error:     &junitProblem{Message: msg, Type: typ, Text: s.Line},
		SystemOut: s.Line}, true
}

// WriteJUnit writes JUnit(rep, stamp) to path.
func WriteJUnit(path string, rep *Report, stamp time.Time) error {
	b, err := JUnit(rep, stamp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	// Never through a symlink, never half written (WriteAtomic).
	if err := WriteAtomic(path, b); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	return nil
}

func verdictOf(r Result) Verdict {
	if r.Verdict != "" {
		return r.Verdict
	}
	if r.Outcome.Severity() < Was(r).Severity() {
		return UnexpectedPass
	}
	return Regression
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// junitProperties are the facts a CI page shows beside the verdict: the
// driver, the GPUs, the stack the expectations match on, the commit.
func junitProperties(rep *Report) []junitProperty {
	env := rep.Environment
	var ps []junitProperty
	add := func(k, v string) {
		if v != "" {
			ps = append(ps, junitProperty{k, v})
		}
	}
	if rep.Summary != nil {
		add("verdict", rep.Summary.Verdict)
		add("exit_status", fmt.Sprint(rep.Summary.ExitStatus))
		add("gate", rep.Summary.Gate)
		add("interrupted", rep.Summary.Interrupted)
	}
	add("vendor", env.Vendor)
	add("driver", env.Driver())
	add("gpus", strings.Join(env.GPUList(), ", "))
	add("stack", stackOf(env.Stack()))
	add("commit", env.HarnessFacts().Commit)
	return ps
}

// stackOf is the stack expectation folders match on, as "k=v" pairs.
func stackOf(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s []string
	for _, k := range keys {
		s = append(s, k+"="+m[k])
	}
	return strings.Join(s, " ")
}

// perfByCase is summary.perf's findings by case id.
func perfByCase(sum *Summary) map[string][]PerfFinding {
	out := map[string][]PerfFinding{}
	if sum == nil || sum.Perf == nil {
		return out
	}
	for _, f := range sum.Perf.Findings {
		out[f.ID] = append(out[f.ID], f)
	}
	return out
}

// addPerf puts a case's perf findings into its testcase: a failing one
// (PerfSummary.Failing) is a <failure> (joined to one the case already has;
// an <error> keeps precedence, with the finding in its text), the others
// lines of system-out.
func addPerf(c *junitCase, fs []PerfFinding) {
	for _, f := range fs {
		line := fmt.Sprintf("%s: %s; %s", f.Verdict, f.Named(), f.Detail)
		if !MetricFails(f.Verdict) {
			c.SystemOut += "\n" + line
			continue
		}
		switch {
		case c.Error != nil:
			c.Error.Text += "\n" + line
		case c.Failure != nil:
			c.Failure.Text += "\n" + line
		default:
			c.Failure = &junitProblem{Message: string(f.Verdict) + ": " + f.Named(), Type: string(f.Verdict), Text: line}
		}
	}
}
