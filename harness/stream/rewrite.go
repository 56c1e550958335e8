package stream

import (
	"os"
	"time"

	"p2patomics/harness/report"
)

// ReportsNotWritten: the run's reports were not all written, so the run
// exits 3 (the summary in Report already says so: Summary.ReportsNotWritten).
// The sinks that wrote a file of the run rewrite it to say so, each its
// own (the checkpoint results.json, Reports junit.xml and summary.txt),
// in its own space where the disk has no room for a second copy, so the
// record never says exit 0 for a run that exits 3 (issue 49 B10, U9).
// It comes after RunDone, at most once.
type ReportsNotWritten struct {
	Report *report.Report
	Events []string
	Start  time.Time
}

func (ReportsNotWritten) event() {}

// atomicWriter is how a sink replaces a file: report.WriteAtomic unless
// set (a test's full disk).
type atomicWriter func(path string, data []byte) error

func (w atomicWriter) write(path string, data []byte) error {
	if w != nil {
		return w(path, data)
	}
	return report.WriteAtomic(path, data)
}

// inPlace replaces path's content with data, atomically where the disk
// has room for a second copy beside the first; where it has not, the old
// copy is removed first so the new one has its space, and put back (from
// memory: its space is free again) when the new one still does not fit.
func (w atomicWriter) inPlace(path string, data []byte) error {
	err := w.write(path, data)
	if !NoSpace(err) {
		return err
	}
	old, rerr := os.ReadFile(path)
	if rerr != nil {
		return err
	}
	if rerr := os.Remove(path); rerr != nil {
		return err
	}
	if err := w.write(path, data); err != nil {
		_ = w.write(path, old)
		return err
	}
	return nil
}

// exists: path names something (a file a sink wrote earlier).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
