package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"p2patomics/harness/outputs"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// recordNotWritten makes the reports that were written say exit 3: the
// summary (stdout's last line), results.json, junit.xml and summary.txt
// again. The usual cause is a full --out, where the derived reports took
// the room an atomic rewrite needs for its second copy: then each file is
// replaced in its own space (rewrite), results.json trimmed and compact as
// the final write does on a full disk, so the record never says exit 0
// for a run that exits 3 (issue 49 B10, U9: results.json and junit.xml
// said PASS, exit 0 on a 300 KiB tmpfs). What still cannot be rewritten is
// named on stderr, with what it still reads.
func recordNotWritten(out string, start time.Time, rep *report.Report, notWritten []string, events []string) {
	what := "results.json"
	if len(notWritten) > 0 {
		what = strings.Join(notWritten, "; ")
	}
	before := rep.Summary.ExitStatus
	rep.Summary.ReportsNotWritten(oneLine(what))
	var failed []string
	if path := filepath.Join(out, "results.json"); exists(path) {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = rewrite(path, append(b, '\n'))
		}
		if stream.NoSpace(err) {
			stream.Trim(rep)
			if b, err = json.Marshal(rep); err == nil {
				err = rewrite(path, append(b, '\n'))
			}
		}
		if err != nil {
			failed = append(failed, "results.json ("+err.Error()+")")
		}
	}
	if path := filepath.Join(out, "junit.xml"); exists(path) {
		b, err := report.JUnit(rep, start)
		if err == nil {
			err = rewrite(path, b)
		}
		if err != nil {
			failed = append(failed, "junit.xml ("+err.Error()+")")
		}
	}
	if path := filepath.Join(out, "summary.txt"); exists(path) {
		if err := rewrite(path, outputs.SummaryText(rep, events)); err != nil {
			failed = append(failed, "summary.txt ("+err.Error()+")")
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "p2patomics: not rewritten to say exit 3, so they still read the cases' verdict and exit %d: %s\n",
			before, oneLine(strings.Join(failed, "; ")))
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// writeAtomic is report.WriteAtomic (a test fakes a full disk).
var writeAtomic = report.WriteAtomic

// rewrite replaces path's content with data, atomically where the disk
// has room for a second copy beside the first; where it has not, the old
// copy is removed first so the new one has its space, and put back (from
// memory: its space is free again) when the new one still does not fit.
func rewrite(path string, data []byte) error {
	err := writeAtomic(path, data)
	if !stream.NoSpace(err) {
		return err
	}
	old, rerr := os.ReadFile(path)
	if rerr != nil {
		return err
	}
	if rerr := os.Remove(path); rerr != nil {
		return err
	}
	if err := writeAtomic(path, data); err != nil {
		_ = writeAtomic(path, old)
		return err
	}
	return nil
}

// noteGinkgoReports: a run whose Ginkgo reports were not written (gerr)
// exits 3 (an interrupted one stays 4, ExitWithGinkgoReports), so its last
// line and reports must not say PASS, exit 0 (issue 38 item 7).
func noteGinkgoReports(gerr error, out string, start time.Time, rep *report.Report, code int, events []string) {
	if gerr == nil || code == ExitInterrupted || code == ExitNoReport || rep.Summary == nil {
		return
	}
	recordNotWritten(out, start, rep, []string{gerr.Error()}, events)
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
