package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// sinks are the run's sinks, fed every event in one order (stream.Fanout):
// the ledger (the collector: the record the checkpoint writes), the disk
// reserve (it gives its room back on RunDone before the record is
// written), the checkpoint (results.json: written before the live line,
// so a parent killed after the line was printed finds the case in it),
// the live line and the derived reports. Each but the ledger is its own
// type in harness/stream, with its own lock and unit test. The evidence
// writer beside them is no sink: the runner calls it (writeEvidence).
// They are made on the first use, once the suite has set how stdout looks
// (a Run made by hand in a test has no plan step to make them in).
type sinks struct {
	once   sync.Once
	config func() sinkConfig

	fan      *stream.Fanout
	reserve  *stream.Reserve // nil without --out
	evidence *stream.Evidence
	ckpt     *stream.Checkpoint // nil without --out
	live     *stream.Live
	reports  *stream.Reports  // nil without --out
	heatmaps *stream.Heatmaps // nil without --out
}

// sinkConfig is what the sinks are made from.
type sinkConfig struct {
	out string
	// checkpoints: --out was prepared (Prepare): results.json is
	// rewritten as cases finish and the reserve is taken; without it only
	// the final record is written.
	checkpoints bool
	total       int
	need        uint64 // results.json's room (Plan.recordRoom)
	style       report.Style
	stdout      io.Writer
	baseline    func(report.Result) report.Outcome // gated: the baseline's outcome
	// collector is the first sink (the ledger); the checkpoint writes
	// its record.
	collector interface {
		stream.Sink
		record() *report.Report
	}
}

func (s *sinks) get() *sinks {
	s.once.Do(func() {
		c := s.config()
		s.live = &stream.Live{W: c.stdout, Style: c.style, Total: c.total, Baseline: c.baseline}
		s.evidence = &stream.Evidence{Dir: c.out}
		var all []stream.Sink
		if c.collector != nil {
			all = append(all, c.collector)
		}
		if c.out != "" {
			s.reserve = &stream.Reserve{Dir: c.out, Need: c.need, Stderr: os.Stderr}
			s.evidence.Room = s.reserve.Room
			s.ckpt = &stream.Checkpoint{Path: filepath.Join(c.out, "results.json"), Stderr: os.Stderr, WriteAtomic: atomicSeam,
				NoSpace: func(err error) bool {
					if !stream.NoSpace(err) {
						return false
					}
					// The disk filled under the run: case folders stop (the
					// record keeps what is left), and the reserve says so.
					s.reserve.MarkFull("results.json: " + err.Error())
					return true
				}}
			s.reports = &stream.Reports{Dir: c.out, WriteAtomic: atomicSeam}
			if c.checkpoints {
				s.ckpt.Snapshot = c.collector.record
				all = append(all, s.reserve)
			}
			all = append(all, s.ckpt)
		}
		all = append(all, s.live)
		if s.reports != nil {
			s.heatmaps = &stream.Heatmaps{Dir: c.out}
			all = append(all, s.reports, s.heatmaps)
		}
		s.fan = stream.NewFanout(all...)
	})
	return s
}

// emit feeds e to every sink, in order.
func (s *sinks) emit(e stream.Event) { s.get().fan.Emit(e) }

// writeEvidence writes a case's evidence folder (stream.Evidence.Write),
// answering with the note the case's detail gets.
func (s *sinks) writeEvidence(id string, files []stream.File) string {
	return s.get().evidence.Write(id, files)
}

// runDone feeds RunDone: the reserve gives its room back, the checkpoint
// writes the final results.json (the record: the heatmaps, junit.xml and
// the case folders must not take the space it needs), the reports sink
// the derived reports (outputs.WriteReports, as p2preport replays them);
// then the heatmaps sink the pictures. The reports are the product: a run whose
// reports are not written has no verdict anyone can read later, so a
// failure is one line and ExitNoReport (else 0), and the reports that
// were written say so (recordNotWritten).
func (s *sinks) runDone(rep *report.Report, events []string, start time.Time, out string, w io.Writer) int {
	s.emit(stream.RunDone{Report: rep, Events: events, Start: start})
	if out == "" {
		return 0
	}
	code := 0
	if err := s.ckpt.FinalErr(); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		code = ExitNoReport
	}
	var notWritten []string
	if err := s.reports.Err(); err != nil {
		notWritten = append(notWritten, err.Error())
	}
	if files, err := s.heatmaps.Written(); err != nil {
		notWritten = append(notWritten, err.Error())
	} else if len(files) > 0 {
		fmt.Fprintf(w, "heatmaps: %s\n", filepath.Join(out, "heatmaps", "index.html"))
	}
	if len(notWritten) > 0 {
		fmt.Fprintf(os.Stderr, "p2patomics: reports not written: %s\n", oneLine(strings.Join(notWritten, "; ")))
		code = ExitNoReport
	}
	if code == ExitNoReport && rep.Summary != nil {
		s.recordNotWritten(start, rep, notWritten, events)
	}
	return code
}

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

// atomicSeam is writeAtomic as it is when called (a test sets it after
// the sinks were made).
func atomicSeam(path string, data []byte) error { return writeAtomic(path, data) }

// room reports whether --out still has results.json's room.
func (s *sinks) room() bool {
	r := s.get().reserve
	return r == nil || r.Room()
}

// roomWriter wraps a log the suite keeps in --out (ginkgo.log, about 1
// KiB a case, as much as results.json): it writes while --out has the
// record's room, then says once that it was cut and drops the rest.
type roomWriter struct {
	room  func() bool
	w     io.Writer
	since int // bytes written since room was last asked
	cut   bool
}

func (l *roomWriter) Write(p []byte) (int, error) {
	if l.cut {
		return len(p), nil
	}
	if l.since += len(p); l.since >= 8<<10 {
		l.since = 0
		if !l.room() {
			l.cut = true
			fmt.Fprintln(l.w, "\n[ginkgo.log cut here: --out is nearly full; results.json keeps every case]")
			return len(p), nil
		}
	}
	return l.w.Write(p)
}
