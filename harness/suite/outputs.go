package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"p2patomics/harness/report"
)

// recordNotWritten makes the reports that were written say exit 3: the
// summary (stdout's last line), results.json and junit.xml again, each as
// far as out has room (a full disk may refuse the rewrite: the line on
// stderr and the exit status still say it).
func recordNotWritten(out string, start time.Time, rep *report.Report, notWritten []string) {
	what := "results.json"
	if len(notWritten) > 0 {
		what = strings.Join(notWritten, "; ")
	}
	rep.Summary.ReportsNotWritten(oneLine(what))
	if _, err := os.Stat(filepath.Join(out, "results.json")); err == nil {
		_ = rep.Write(filepath.Join(out, "results.json"))
	}
	if _, err := os.Stat(filepath.Join(out, "junit.xml")); err == nil {
		_ = report.WriteJUnit(filepath.Join(out, "junit.xml"), rep, start)
	}
}

// noteGinkgoReports: a run whose Ginkgo reports were not written (gerr)
// exits 3 (an interrupted one stays 4, ExitWithGinkgoReports), so its last
// line and reports must not say PASS, exit 0 (issue 38 item 7).
func noteGinkgoReports(gerr error, out string, start time.Time, rep *report.Report, code int) {
	if gerr == nil || code == ExitInterrupted || code == ExitNoReport || rep.Summary == nil {
		return
	}
	recordNotWritten(out, start, rep, []string{gerr.Error()})
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
