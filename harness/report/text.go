package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Style colours text for a terminal; the zero Style writes plain text
// (stdout is not a terminal, or NO_COLOR is set).
type Style struct{ Color bool }

func (s Style) paint(code, text string) string {
	if !s.Color {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Shown is the outcome as the table, the live line and junit's system-out
// show it: a pass whose evidence is weak (no mutant killed, docs/LITMUS.md)
// or inconclusive (a degenerate outcome histogram) says so, so that it never
// reads like a pass that proved something.
func Shown(r Result) string {
	if r.Verdict == Missing {
		// Recorded as a skip (the schema's outcomes), but it was never
		// planned: "pass → skip" read as a case that skipped (issue 49
		// U15).
		return "missing"
	}
	if r.Outcome == Pass && r.Evidence == EvidenceWeak {
		return "pass (weak evidence)"
	}
	if r.Outcome == Pass && r.Evidence == EvidenceInconclusive {
		return "pass (inconclusive)"
	}
	return string(r.Outcome)
}

// LiveLine is the line printed as case n of total finishes: count, id,
// outcome, expected outcome, time, and the verdict when it is not
// "expected". The expected outcome is Was(r), the one the verdict was
// judged against (the baseline's when gated), as in summary.txt,
// report.html and junit.xml: a line that said "expected pass" beside a
// verdict judged against a baseline's fail would contradict itself.
func LiveLine(st Style, n, total int, r Result) string {
	w := len(fmt.Sprint(total))
	mark := st.paint("32", "ok  ")
	switch {
	case Unexpected(r):
		mark = st.paint("31;1", "FAIL")
	case r.NotSupported != "":
		mark = st.paint("33", "n/s ")
	}
	line := fmt.Sprintf("[%*d/%d] %s %-10s expected %-10s %7.3fs  %s", w, n, total, mark, Shown(r), Was(r), r.Duration, r.ID())
	if r.Verdict != "" && r.Verdict != Expected {
		line += "  (" + string(r.Verdict) + ")"
	}
	return line
}

// Legend explains the collapsed section of expected non-pass outcomes.
const Legend = "expected non-pass: controls and canaries built to fail, crash or time out did so (a planted bug caught, a fault contained); met, not failures"

// BaselineLegend explains the collapsed section of cases that met the
// baseline but not their spec's expected outcome.
const BaselineLegend = "as the baseline expects: outcomes the spec does not expect but the expectation folder lists (expected-fail) or calls flaky (known-flake, flake); not failures"

// WriteConclusion prints the end of the run for a person: the unexpected
// cases first (with repro and evidence folder), then the not-supported
// ones, then the expected non-pass outcomes collapsed to one line per
// outcome under a one-line legend, and the verdict line last.
func WriteConclusion(w io.Writer, st Style, rep *Report) {
	s := rep.Summary
	if s == nil {
		return
	}
	writeUnexpected(w, st, rep)
	writeNotSupported(w, st, s)
	writeMetAnyway(w, rep)
	if len(s.NotRun) > 0 {
		fmt.Fprintf(w, "\n%s\n  %s\n", st.paint("33", fmt.Sprintf("not run (%d): %s stopped the run before they finished; not regressions", len(s.NotRun), s.Interrupted)),
			clip(strings.Join(s.NotRun, " "), 160))
	}
	fmt.Fprintln(w)
	colour := map[bool]string{true: "32;1", false: "31;1"}[s.ExitStatus == 0]
	if s.Interrupted != "" {
		colour = "33;1"
	}
	fmt.Fprintln(w, st.paint(colour, s.Line))
}

// writeUnexpected: each unexpected case with its detail, evidence folder
// and the line that reruns it.
func writeUnexpected(w io.Writer, st Style, rep *Report) {
	s := rep.Summary
	if len(s.Unexpected) == 0 {
		return
	}
	byID := map[string]Result{}
	for _, r := range rep.Results {
		byID[r.ID()] = r
	}
	fmt.Fprintf(w, "\n%s\n", st.paint("31;1", fmt.Sprintf("unexpected (%d):", len(s.Unexpected))))
	for _, u := range s.Unexpected {
		r := byID[u.ID]
		fmt.Fprintf(w, "  %s: %s → %s  %s\n", u.Verdict, u.Was, u.Now(), u.ID)
		if r.Detail != "" {
			fmt.Fprintf(w, "      %s\n", clip(r.Detail, 200))
		}
		if u.Folder != "" {
			fmt.Fprintf(w, "      evidence: %s\n", u.Folder)
		}
		switch {
		case u.Folder != "":
			// Absolute, so the line runs as printed from anywhere.
			fmt.Fprintf(w, "      repro: sh %s\n", ShellQuote(absPath(filepath.Join(u.Folder, "repro.sh"))))
		case r.Repro != "":
			fmt.Fprintf(w, "      repro: %s\n", r.Repro)
		}
	}
}

// writeNotSupported: one line per distinct reason, naming how many cases
// it covers (40 vmm-host counters lost updates for one attribute).
func writeNotSupported(w io.Writer, st Style, s *Summary) {
	if len(s.NotSupported) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.paint("33", fmt.Sprintf("not supported (%d): capabilities this device or driver lacks; not failures by themselves", len(s.NotSupported))))
	type group struct {
		reason string
		ids    []string
	}
	var groups []*group
	idx := map[string]*group{}
	for _, n := range s.NotSupported {
		key := reasonKey(n.Reason)
		g := idx[key]
		if g == nil {
			g = &group{reason: key}
			idx[key] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, n.ID)
	}
	for _, g := range groups {
		if len(g.ids) == 1 {
			fmt.Fprintf(w, "  %s: %s\n", g.ids[0], clip(g.reason, 200))
			continue
		}
		fmt.Fprintf(w, "  %d cases (%s, …): %s\n", len(g.ids), g.ids[0], clip(g.reason, 200))
	}
}

// writeMetAnyway: the cases that met without passing, collapsed: those
// that met the baseline but not the spec (fails.txt entries, flakes),
// then the controls and canaries that did what they were built to.
func writeMetAnyway(w io.Writer, rep *Report) {
	controls := map[Outcome][]string{}
	baseline := map[string][]string{}
	var keys []string
	for _, r := range rep.Results {
		if Unexpected(r) || r.NotSupported != "" || r.Verdict == NotRun {
			continue
		}
		switch {
		case r.Verdict != "" && r.Verdict != Expected:
			k := fmt.Sprintf("%s (%s)", r.Outcome, r.Verdict)
			if baseline[k] == nil {
				keys = append(keys, k)
			}
			baseline[k] = append(baseline[k], r.ID())
		case r.Outcome != Pass && r.Outcome == r.Expected:
			controls[r.Outcome] = append(controls[r.Outcome], r.ID())
		}
	}
	if len(keys) > 0 {
		fmt.Fprintf(w, "\n%s\n", BaselineLegend)
		sort.Strings(keys)
		for _, k := range keys {
			ids := baseline[k]
			fmt.Fprintf(w, "  %d %s: %s\n", len(ids), k, clip(strings.Join(ids, " "), 160))
		}
	}
	if len(controls) > 0 {
		fmt.Fprintf(w, "\n%s\n", Legend)
		for _, o := range Outcomes {
			if ids := controls[o]; len(ids) > 0 {
				fmt.Fprintf(w, "  %d %s as expected: %s\n", len(ids), o, clip(strings.Join(ids, " "), 160))
			}
		}
	}
}

// reasonKey groups not-supported reasons: the part before "(observed:"
// (each case observed its own numbers).
func reasonKey(reason string) string {
	if i := strings.Index(reason, " (observed:"); i > 0 {
		return reason[:i]
	}
	return reason
}

// clip shortens s to about n bytes without cutting a case id (a word) or
// a UTF-8 character in two: it ends at the last space, comma or semicolon
// before n and says "…" where it cut; a first word longer than n is kept
// whole (issue 49 U13: id lists read "host.memfd.waitflag.bo...").
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexAny(s[:n], " ,;")
	if cut <= 0 {
		if cut = strings.IndexAny(s, " ,;"); cut < 0 {
			return s
		}
	}
	return strings.TrimRight(s[:cut], " ,;") + " …"
}

// writeEvents writes a run's world events, one a line: a live run's as
// printed, else (events nil: re-rendered from results.json by p2preport)
// the record's typed ones.
func writeEvents(w io.Writer, rep *Report, events []string) {
	if events == nil {
		for _, e := range rep.WorldEvents {
			events = append(events, e.Line())
		}
	}
	for _, e := range events {
		fmt.Fprintf(w, "world event: %s\n", e)
	}
}

// tableDetail is a result's DETAIL column: its metrics' medians, by name,
// before its detail.
func tableDetail(r Result) string {
	if len(r.Metrics) == 0 {
		return r.Detail
	}
	names := make([]string, 0, len(r.Metrics))
	for n := range r.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	var ms []string
	for _, n := range names {
		m := r.Metrics[n]
		ms = append(ms, fmt.Sprintf("%s=%.3g %s", n, m.Median, m.Unit))
	}
	return strings.TrimSpace(strings.Join(ms, " ") + " " + r.Detail)
}

// WriteTable writes the full per-case table (out/summary.txt): every case
// with outcome, expected, verdict, time and detail, then the totals and
// the verdict line. events are a live run's world events as printed (nil:
// rep's, re-rendered from results.json).
func WriteTable(w io.Writer, rep *Report, events []string) {
	results := rep.Results
	idw := 10
	for _, r := range results {
		idw = max(idw, len(r.ID()))
	}
	fmt.Fprintf(w, "%-*s  %-10s %-10s %-22s %9s  %s\n", idw, "CASE", "OUTCOME", "EXPECTED", "VERDICT", "TIME", "DETAIL")
	for _, r := range results {
		detail := tableDetail(r)
		v := string(r.Verdict)
		if r.NotSupported != "" {
			v += " (not-supported)"
		}
		// EXPECTED is what the verdict was judged against (Was), the
		// stdout line's "expected" (issue 38 item 8).
		fmt.Fprintf(w, "%-*s  %-10s %-10s %-22s %8.3fs  %s\n", idw, r.ID(), Shown(r), Was(r), v, r.Duration, detail)
		if r.NotSupported != "" {
			fmt.Fprintf(w, "%-*s  not supported: %s\n", idw, "", reasonKey(r.NotSupported))
		}
		if len(r.KernelLog) > 0 {
			fmt.Fprintf(w, "%-*s  kernel log: %s (+%d more)\n", idw, "", r.KernelLog[0], len(r.KernelLog)-1)
		}
		if Unexpected(r) && r.Repro != "" {
			fmt.Fprintf(w, "%-*s  repro: %s\n", idw, "", r.Repro)
		}
	}
	writeEvents(w, rep, events)
	if s := rep.Summary; s != nil {
		var parts []string
		missing := s.ByVerdict[Missing] // recorded as skips: counted apart
		for _, o := range Outcomes {
			n := s.ByOutcome[o]
			if o == Skip {
				n -= missing
			}
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, o))
			}
		}
		if missing > 0 {
			parts = append(parts, fmt.Sprintf("%d missing (in the baseline, not planned)", missing))
		}
		var vs []string
		keys := make([]string, 0, len(s.ByVerdict))
		for v := range s.ByVerdict {
			keys = append(keys, string(v))
		}
		sort.Strings(keys)
		for _, k := range keys {
			vs = append(vs, fmt.Sprintf("%d %s", s.ByVerdict[Verdict(k)], k))
		}
		fmt.Fprintf(w, "\n%d cases: %s\nverdicts: %s\n%s\n", s.Cases, strings.Join(parts, ", "), strings.Join(vs, ", "), s.Line)
	}
}

// csvStatus is a result's status as deqp-runner's results.csv spells it:
// the outcome when the verdict is plain, else the verdict.
func csvStatus(r Result) string {
	switch r.Verdict {
	case ExpectedFail:
		return "ExpectedFail"
	case UnexpectedPass:
		return "UnexpectedPass"
	case UnexpectedImprovement:
		return "UnexpectedImprovement(" + title(string(r.Outcome)) + ")"
	case Flake:
		return "Flake"
	case KnownFlake:
		return "KnownFlake"
	case NewFlake:
		return "NewFlake"
	case NotRun:
		return "NotRun"
	case Missing:
		return "Missing"
	case CapabilityLost:
		return "CapabilityLost"
	}
	if r.Outcome == NotRunOutcome {
		// Not deqp-runner's NotRun (an interrupted run's case): judged
		// from another case without running.
		return "JudgedNotRun"
	}
	return title(string(r.Outcome))
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteCSVs writes deqp-runner's results.csv (test,status,duration for
// every case) and failures.csv (test,status for every case whose outcome
// is not its expected one, the outcome as status). failures.csv has the
// shape of a fails.txt, so it can be given as a baseline.
func WriteCSVs(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	var all, fails [][]string
	for _, r := range rep.Results {
		all = append(all, []string{r.ID(), csvStatus(r), fmt.Sprintf("%.3f", r.Duration)})
		if r.Outcome != r.Expected && r.Verdict != Missing {
			fails = append(fails, []string{r.ID(), title(string(r.Outcome))})
		}
	}
	for name, rows := range map[string][][]string{"results.csv": all, "failures.csv": fails} {
		var b strings.Builder
		cw := csv.NewWriter(&b)
		if err := cw.WriteAll(rows); err != nil {
			return fmt.Errorf("csv: %s: %w", name, err)
		}
		if err := WriteAtomic(filepath.Join(dir, name), []byte(b.String())); err != nil {
			return fmt.Errorf("csv: %w", err)
		}
	}
	return nil
}

// absPath is p made absolute against the working directory (p itself when
// that cannot be read).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// ShellQuote quotes s for sh when it holds anything but safe characters,
// so a printed command runs as printed from a checkout whose path holds a
// space ("p2p atomics"). The one rule for every command the suite prints.
func ShellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:=,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
