package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// live prints a case's line as it finishes, through the run's live-line
// sink alone: a case the run did not finish (an abort, admit's) is not
// checkpointed at this moment.
func (r *Run) live(res report.Result) {
	r.mu.Lock()
	line := r.liveSink()
	r.mu.Unlock()
	line.Handle(stream.CaseDone{Result: res})
}

// liveSink is the live line (stream.Live); r.mu is held.
func (r *Run) liveSink() *stream.Live {
	if r.line == nil {
		r.line = &stream.Live{W: r.stdout(), Style: r.Style, Total: len(r.planned)}
		if r.gate != nil {
			// Gated, "expected" is the baseline's outcome. JudgeOne has
			// set Baseline on every result the run prints; the sink sets
			// it too so a result that reaches it unjudged shows it.
			r.line.Baseline = r.gate.Baseline
		}
	}
	return r.line
}

func (r *Run) stdout() io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return os.Stdout
}

// writeOutputs writes the run's reports: results.json first (the record:
// the heatmaps, junit.xml and the case folders must not take the space it
// needs), then the derived reports (outputs.WriteReports: the verdict
// first), then the heatmaps. The reports are the product: a run whose
// reports are not written has no verdict anyone can read later, so a
// failure is one line and ExitNoReport (else 0).
func (r *Run) writeOutputs(rep *report.Report, events []string) int {
	out := r.Opts.Out
	code := 0
	r.release()
	if err := r.writeRecord(filepath.Join(out, "results.json"), rep); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		code = ExitNoReport
	}
	var notWritten []string
	// The derived reports go through the sink p2preport replays through.
	reports := &stream.Reports{Dir: out}
	reports.Handle(stream.RunDone{Report: rep, Events: events, Start: r.t0})
	if err := reports.Err(); err != nil {
		notWritten = append(notWritten, err.Error())
	}
	if files, err := heatmap.WriteAll(filepath.Join(out, "heatmaps"), rep); err != nil {
		notWritten = append(notWritten, "heatmaps: "+err.Error())
	} else if len(files) > 0 {
		fmt.Fprintf(r.stdout(), "heatmaps: %s\n", filepath.Join(out, "heatmaps", "index.html"))
	}
	if len(notWritten) > 0 {
		what := oneLine(strings.Join(notWritten, "; "))
		fmt.Fprintf(os.Stderr, "p2patomics: reports not written: %s\n", what)
		code = ExitNoReport
	}
	if code == ExitNoReport && rep.Summary != nil {
		r.recordNotWritten(rep, notWritten)
	}
	return code
}

// GinkgoReportsNotWritten tells the run, before Finish, that Ginkgo's own
// reports (--ginkgo.json-report, ...; written when Ginkgo's run ends) could
// not be written: the run then exits 3 (ExitWithGinkgoReports), and
// Finish records that in the summary, results.json and junit.xml.
func (r *Run) GinkgoReportsNotWritten(err error) {
	r.mu.Lock()
	r.ginkgoErr = err
	r.mu.Unlock()
}

// noteGinkgoReports: a run whose Ginkgo reports were not written exits 3
// (an interrupted one stays 4, ExitWithGinkgoReports), so its last line and
// reports must not say PASS, exit 0 (issue 38 item 7).
func (r *Run) noteGinkgoReports(rep *report.Report, code int) {
	r.mu.Lock()
	err := r.ginkgoErr
	r.mu.Unlock()
	if err == nil || code == ExitInterrupted || code == ExitNoReport || rep.Summary == nil {
		return
	}
	r.recordNotWritten(rep, []string{err.Error()})
}

// recordNotWritten makes the reports that were written say exit 3: the
// summary (stdout's last line), results.json and junit.xml again, each as
// far as --out has room (a full disk may refuse the rewrite: the line on
// stderr and the exit status still say it).
func (r *Run) recordNotWritten(rep *report.Report, notWritten []string) {
	what := "results.json"
	if len(notWritten) > 0 {
		what = strings.Join(notWritten, "; ")
	}
	rep.Summary.ReportsNotWritten(oneLine(what))
	if _, err := os.Stat(filepath.Join(r.Opts.Out, "results.json")); err == nil {
		_ = r.writeRecord(filepath.Join(r.Opts.Out, "results.json"), rep)
	}
	if _, err := os.Stat(filepath.Join(r.Opts.Out, "junit.xml")); err == nil {
		_ = report.WriteJUnit(filepath.Join(r.Opts.Out, "junit.xml"), rep, r.t0)
	}
}

// printEnd prints the run's last lines: the world events a person must
// see, the worlds' cost, where the reports are, and the conclusion with
// the verdict line last.
func (r *Run) printEnd(rep *report.Report, events []string, timing *report.Timing) {
	w := r.stdout()
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
	fmt.Fprintf(w, "reports: %s (results.json, report.html, junit.xml, summary.txt with the full table, results.csv, failures.csv)\n", r.Opts.Out)
	report.WriteConclusion(w, r.Style, rep)
}
