package suite

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// recordNotWritten makes the reports that were written say exit 3: the
// summary (stdout's last line), then ReportsNotWritten on the stream, so
// the sink that wrote each file rewrites it (the checkpoint results.json,
// the reports sink junit.xml and summary.txt). The usual cause is a full
// --out, where the derived reports took the room an atomic rewrite needs
// for its second copy: then each sink replaces its file in its own space,
// results.json trimmed and compact as the final write does on a full
// disk, so the record never says exit 0 for a run that exits 3 (issue 49
// B10, U9: results.json and junit.xml said PASS, exit 0 on a 300 KiB
// tmpfs). What still cannot be rewritten is named on stderr, with what it
// still reads.
func (s *sinks) recordNotWritten(start time.Time, rep *report.Report, notWritten []string, events []string) {
	what := "results.json"
	if len(notWritten) > 0 {
		what = strings.Join(notWritten, "; ")
	}
	before := rep.Summary.ExitStatus
	rep.Summary.ReportsNotWritten(oneLine(what))
	s.emit(stream.ReportsNotWritten{Report: rep, Events: events, Start: start})
	var failed []string
	if c := s.get().ckpt; c != nil {
		if err := c.AmendErr(); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if r := s.get().reports; r != nil {
		if err := r.AmendErr(); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "p2patomics: not rewritten to say exit 3, so they still read the cases' verdict and exit %d: %s\n",
			before, oneLine(strings.Join(failed, "; ")))
	}
}

// writeAtomic is how the sinks replace a file whole on ReportsNotWritten,
// report.WriteAtomic (a test fakes a full disk).
var writeAtomic = report.WriteAtomic

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
