package suite

import (
	"fmt"
	"io"
	"strings"
	"time"

	"p2patomics/harness/report"
)

// noteGinkgoReports: a run whose Ginkgo reports were not written (gerr)
// exits 3 (an interrupted one stays 4, ExitWithGinkgoReports), so its last
// line and reports must not say PASS, exit 0 (issue 38 item 7).
func (s *sinks) noteGinkgoReports(gerr error, start time.Time, rep *report.Report, code int, events []string) {
	if gerr == nil || code == ExitInterrupted || code == ExitNoReport || rep.Summary == nil {
		return
	}
	s.recordNotWritten(start, rep, []string{gerr.Error()}, events)
}

// printEnd prints the run's last lines: the world events a person must
// see, the worlds' cost, where the reports are, and the conclusion with
// the verdict line last.
func printEnd(w io.Writer, style report.Style, out string, rep *report.Report, events []string, timing *report.Timing) {
	for _, e := range events {
		// Every world's start is in summary.txt; stdout keeps the events
		// a person must see (a rank that died idle, an unreadable log).
		if !strings.Contains(e, " ready in ") {
			fmt.Fprintf(w, "world event: %s\n", e)
		}
	}
	for _, f := range rep.Summary.RunFaults {
		fmt.Fprintf(w, "run health: %s\n", f)
	}
	fmt.Fprintf(w, "worlds started: %d in %.1f s\n", len(timing.Worlds), timing.SuiteWallS)
	fmt.Fprintf(w, "reports: %s (results.json, report.html, junit.xml, summary.txt with the full table, results.csv, failures.csv)\n", out)
	report.WriteConclusion(w, style, rep)
}
