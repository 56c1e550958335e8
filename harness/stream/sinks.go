package stream

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"p2patomics/harness/heatmap"
	"p2patomics/harness/outputs"
	"p2patomics/harness/report"
)

// Live prints each case's line as it finishes ("[  n/total] ok ..."),
// numbering the cases in the order they finish, and a line for each
// gate's rerun ("rerun <id>: first → again (verdict)"); a perf pass's
// CaseDone has its own lines (the perf work's) and gets none here.
type Live struct {
	mu    sync.Mutex
	W     io.Writer
	Style report.Style
	Total int
	// Baseline, when set, is the gate's recorded outcome for a result:
	// gated, "expected" on the line is what the baseline recorded, the
	// outcome the verdict is judged against, not the spec's own.
	Baseline func(report.Result) report.Outcome
	done     int
}

// Handle prints CaseDone's line; other events leave the count as it is.
func (l *Live) Handle(e Event) {
	d, ok := e.(CaseDone)
	if !ok || d.Pass == PerfPass {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.Pass == Rerun {
		if a := d.Result.Rerun; a != nil {
			fmt.Fprintf(l.W, "rerun %s: %s → %s (%s)\n", d.Result.ID(), d.Result.Outcome, a.Outcome, d.Result.Verdict)
		}
		return
	}
	l.done++
	res := d.Result
	if l.Baseline != nil {
		// Expected stays the spec's: results.json keeps both, and a
		// re-judge against another baseline needs the spec's.
		if b := l.Baseline(res); b != res.Expected {
			res.Baseline = b
		}
	}
	fmt.Fprintln(l.W, report.LiveLine(l.Style, l.done, l.Total, res))
}

// Done is how many CaseDone events the line has printed.
func (l *Live) Done() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// Reports writes the derived reports (outputs.WriteReports: summary.txt,
// junit.xml, results.csv, failures.csv, report.html) into Dir on RunDone,
// and rewrites junit.xml and summary.txt on ReportsNotWritten: it is the
// one writer of junit.xml (TestOneWriterOfEachFile). It leaves
// results.json as it is: the record is the checkpoint's.
type Reports struct {
	mu  sync.Mutex
	Dir string
	// WriteAtomic replaces a file whole on ReportsNotWritten
	// (report.WriteAtomic when nil; a test's full disk).
	WriteAtomic func(path string, data []byte) error
	err         error
	amendErr    error
	n           int
}

// Handle writes the reports on RunDone (a write error is kept for Err)
// and rewrites them on ReportsNotWritten (AmendErr).
func (r *Reports) Handle(e Event) {
	switch d := e.(type) {
	case RunDone:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.n++
		if err := outputs.WriteReports(r.Dir, d.Report, d.Events, d.Start); err != nil {
			// As WriteReports said it: the suite and p2preport print it whole.
			r.err = err
		}
	case ReportsNotWritten:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.amendErr = r.amend(d)
	}
}

// amend rewrites junit.xml and summary.txt, those that were written, in
// their own space where the disk has no room for a second copy.
func (r *Reports) amend(d ReportsNotWritten) error {
	w := atomicWriter(r.WriteAtomic)
	var errs []string
	if path := filepath.Join(r.Dir, "junit.xml"); exists(path) {
		b, err := report.JUnit(d.Report, d.Start)
		if err == nil {
			err = w.inPlace(path, b)
		}
		if err != nil {
			errs = append(errs, "junit.xml ("+err.Error()+")")
		}
	}
	if path := filepath.Join(r.Dir, "summary.txt"); exists(path) {
		if err := w.inPlace(path, outputs.SummaryText(d.Report, d.Events)); err != nil {
			errs = append(errs, "summary.txt ("+err.Error()+")")
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// AmendErr is ReportsNotWritten's rewrites' error, each file not
// rewritten named; nil when none came or each was written.
func (r *Reports) AmendErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.amendErr
}

// Err is the last write's error; it says so when no RunDone came, since
// then nothing was written and no caller may say it was.
func (r *Reports) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return fmt.Errorf("reports: the run never ended (no RunDone), nothing written to %s", r.Dir)
	}
	return r.err
}

// Heatmaps writes the run's pictures (heatmap.WriteAll: the verdict
// matrices, the pair heatmaps and an index.html) into Dir/heatmaps on
// RunDone. Fed after the checkpoint and the reports: the pictures must not
// take the room the record and the reports need.
type Heatmaps struct {
	mu    sync.Mutex
	Dir   string
	files []string
	err   error
	n     int
}

// Handle writes the pictures on RunDone.
func (h *Heatmaps) Handle(e Event) {
	d, ok := e.(RunDone)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.files, h.err = heatmap.WriteAll(filepath.Join(h.Dir, "heatmaps"), d.Report)
	if h.err != nil {
		h.err = fmt.Errorf("heatmaps: %w", h.err)
	}
}

// Written is the files the last RunDone wrote (none for a run without
// pictures) and its error; the error says so when no RunDone came.
func (h *Heatmaps) Written() ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return nil, fmt.Errorf("heatmaps: the run never ended (no RunDone), nothing written to %s", h.Dir)
	}
	return h.files, h.err
}

// WorldLog keeps the run's world events in the order they were emitted:
// the checkpoints and the final record read them from here.
type WorldLog struct {
	mu     sync.Mutex
	events []report.WorldEvent
}

// Handle keeps a WorldEvent's event.
func (w *WorldLog) Handle(e Event) {
	if d, ok := e.(WorldEvent); ok {
		w.mu.Lock()
		w.events = append(w.events, d.Event)
		w.mu.Unlock()
	}
}

// Events is a copy of the events kept, ordered by time (stable: two at one
// second stay in the order they came).
func (w *WorldLog) Events() []report.WorldEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]report.WorldEvent(nil), w.events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out
}
