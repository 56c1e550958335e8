// Package outputs writes the reports a judged run is read through (all but
// results.json, which the suite writes first as the record) and says how
// stdout is styled. It lives apart from harness/suite so that the offline
// tools that re-render a recorded run (cmd/p2preport) import the writers
// without the run loop, the spawner and the signal handling behind them.
package outputs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"p2patomics/harness/htmlreport"
	"p2patomics/harness/report"
)

// WriteReports writes the reports derived from a judged report into dir:
// junit.xml, results.csv, failures.csv, summary.txt (the full table, the
// matrices, the world-start timing) and report.html, each through
// report.WriteAtomic; the first failure names its file. events are the
// world events a live run saw, for summary.txt (nil when re-rendered from
// a results.json, which does not keep them).
func WriteReports(dir string, rep *report.Report, events []string, stamp time.Time) error {
	if err := report.WriteJUnit(filepath.Join(dir, "junit.xml"), rep, stamp); err != nil {
		return err
	}
	if err := report.WriteCSVs(dir, rep); err != nil {
		return err
	}
	if err := writeSummaryText(filepath.Join(dir, "summary.txt"), rep, events); err != nil {
		return err
	}
	// report.html opens with the same verdict line (rep.Summary).
	return htmlreport.WriteHTML(dir, rep)
}

func writeSummaryText(path string, rep *report.Report, events []string) error {
	if err := report.WriteAtomic(path, SummaryText(rep, events)); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

// SummaryText is summary.txt's content: the full table, the matrices, the
// world-start timing and the verdict line last.
func SummaryText(rep *report.Report, events []string) []byte {
	var b bytes.Buffer
	report.WriteTable(&b, rep, events)
	PrintMatrices(&b, rep.Results)
	report.WriteAB(&b, rep.AB) // an A/B run's stacks and differences (report/ab.go)
	if rep.Timing != nil {
		printTiming(&b, rep.Timing)
	}
	if rep.Summary != nil {
		fmt.Fprintf(&b, "\n%s\n", rep.Summary.Line) // last here too
	}
	return b.Bytes()
}

// isTerminal reports whether fd is a terminal (TCGETS succeeds).
func isTerminal(fd uintptr) bool {
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}

// StdoutStyle colours stdout only for a terminal and never with NO_COLOR
// set (no-color.org: any non-empty value).
func StdoutStyle() report.Style {
	return report.Style{Color: os.Getenv("NO_COLOR") == "" && isTerminal(os.Stdout.Fd())}
}
