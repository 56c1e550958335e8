package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"p2patomics/harness/health"
	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/trace"
)

// Evidence configures what a runner keeps for a bug report.
type Evidence struct {
	Out      string                    // results folder; cases go to Out/cases/<id>/
	TraceAll bool                      // --trace: keep traces for passing cases too
	Env      func() report.Environment // the run's fingerprint, for each case folder
	MakeForm func(repro string) string
	// Binary is the suite binary's absolute path: repro.sh runs it from
	// any directory ("" keeps the repro line as it is).
	Binary string
	// Gate is the gated run's flags as shell words: --expectations with
	// absolute paths, and the gate's --allow-* flags ("" ungated).
	// repro.sh passes them, so a gate failure's repro reproduces the
	// verdict, not just the outcome.
	Gate string
	// Write hands the case's folder to the run's evidence writer
	// (stream.Evidence.Write, which keeps results.json's room on a full
	// disk) and returns the note the case's detail gets ("" written); nil
	// writes it into Out/cases/ at once, room or not.
	Write func(id string, files []stream.File) (note string)
}

// The kernel log is one per machine: one reader for the suite process.
var (
	kmsgOnce   sync.Once
	kmsgReader *kmsg.Reader
	kmsgErr    error
	monitor    *health.Monitor
)

func kernelLog() (*kmsg.Reader, *health.Monitor, error) {
	kmsgOnce.Do(func() {
		monitor, kmsgErr = health.NewMonitor()
		if monitor != nil {
			kmsgReader = monitor.Kmsg
		}
	})
	return kmsgReader, monitor, kmsgErr
}

// kernelWatch is what a runner watches beside its cases: the machine's
// kernel log, charged by the fault book, and the machine's health (an
// untrustworthy machine is the run's abort). Its own lock.
type kernelWatch struct {
	book *faultBook
	log  *eventLog
	// open, when set, replaces the machine's kernel log (tests plant
	// lines in a file: SetKernelLog).
	open     func() (*kmsg.Reader, *health.Monitor, error)
	mu       sync.Mutex
	health   health.Snapshot
	kmsgSaid bool
	abort    string
}

// klog is the runner's kernel log: the machine's (kernelLog), or the one a
// test gave it (open).
func (k *kernelWatch) klog() (*kmsg.Reader, *health.Monitor, error) {
	if k.open != nil {
		return k.open()
	}
	return kernelLog()
}

// caseWatch is what the runner notes at a case's start.
type caseWatch struct {
	seqs  []uint64
	start time.Time // the case folder's duration_s runs from here
}

func (k *kernelWatch) start(w *World) *caseWatch {
	cw := &caseWatch{seqs: make([]uint64, len(w.Procs)), start: time.Now()}
	for i, p := range w.Procs {
		if p.Trace != nil {
			cw.seqs[i], _ = trace.SharedSeq(p.Trace)
		}
	}
	k.book.register(w)
	kr, _, err := k.klog()
	k.mu.Lock()
	say := err != nil && !k.kmsgSaid
	k.kmsgSaid = k.kmsgSaid || say
	k.mu.Unlock()
	if say {
		k.log.addf(report.EventOther, "kernel log unreadable (%v): cases carry no kernel-log lines", err)
	}
	if kr != nil {
		// Lines logged between two cases (after the last case's end) are
		// read here, before the Mark forgets them: they name a rank of
		// some world, or no rank of the run, and are charged as such.
		if lines, _ := kr.Since(); len(lines) > 0 {
			k.book.chargeBetween(kmsg.Events(lines))
		}
		_ = kr.Mark()
	}
	return cw
}

// end charges the case's kernel-log lines (chargeLines), judges machine
// health (GPU cases), and notes the case as its world's last.
func (k *kernelWatch) end(c *Case, w *World, res *report.Result) {
	kr, mon, _ := k.klog()
	var lines []kmsg.Line
	if kr != nil {
		// Marked after the read: a line logged from here to the next
		// case's start is read there (chargeBetween), never twice.
		lines, _ = kr.Since()
		_ = kr.Mark()
	}
	k.book.register(w)
	k.book.chargeLines(c, w, res, kmsg.Events(lines))
	if c.GPU && mon != nil {
		k.mu.Lock()
		snap, v := mon.CheckLines(k.health, lines)
		k.health = snap
		first := v.Untrustworthy && k.abort == ""
		if first {
			k.abort = v.Reason
		}
		k.mu.Unlock()
		if first {
			res.Detail = strings.TrimSpace(res.Detail + "; machine no longer trustworthy: " + v.Reason)
		}
	}
	k.book.noteLast(w, c, res)
}

// aborted is why the machine stopped being trustworthy, "" while it is.
func (k *kernelWatch) aborted() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.abort
}

// keep writes the case's evidence folder when it did not pass (or every
// case's with --trace). Made here, while the world still holds each rank's
// trace and stderr; written by the evidence sink, which gives the folder
// up (and says so) when results.json needs the room. klogErr is why the
// kernel log could not be read (kernel.log says so).
func (e *Evidence) keep(c *Case, w *World, cw *caseWatch, res *report.Result, klogErr error) {
	if e == nil || e.Out == "" || (res.Outcome == report.Pass && !e.TraceAll) {
		return
	}
	files := e.files(c, w, cw, res, klogErr)
	write := e.Write
	if write == nil {
		write = (&stream.Evidence{Dir: e.Out}).Write
	}
	if note := write(c.ID, files); note != "" {
		res.Detail = strings.TrimSpace(res.Detail + "; " + note)
	}
}

// evidenceFiles is the case's folder: each rank's trace and stderr,
// repro.sh, kernel.log, environment.json and result.json. A rank trace
// that cannot be read is said in its place (the folder is still kept).
func (e *Evidence) files(c *Case, w *World, cw *caseWatch, res *report.Result, klogErr error) []stream.File {
	var files []stream.File
	for i, p := range w.Procs {
		if p.Trace == nil {
			continue
		}
		tr, err := rankTrace(p, cw.seqs[i], c, res)
		if err != nil {
			tr = fmt.Sprintf("# rank %d's trace was not read: %v\n", p.Rank, err)
		}
		files = append(files, stream.File{Name: fmt.Sprintf("rank-%d.trace", p.Rank), Data: []byte(tr), Mode: 0o644},
			stream.File{Name: fmt.Sprintf("rank-%d.stderr", p.Rank), Data: []byte(p.Stderr.String()), Mode: 0o644})
	}
	files = append(files, stream.File{Name: "repro.sh", Data: []byte(e.reproScript(c)), Mode: 0o755},
		stream.File{Name: "kernel.log", Data: []byte(caseKernelLog(res, klogErr)), Mode: 0o644})
	if e.Env != nil {
		b, _ := json.MarshalIndent(e.Env(), "", "  ")
		files = append(files, stream.File{Name: "environment.json", Data: b, Mode: 0o644})
	}
	// The runner sets duration_s when the case returns, after this folder
	// is made; the folder's copy counts up to its judgement.
	one := *res
	one.Duration = math.Round(time.Since(cw.start).Seconds()*1e6) / 1e6
	b, _ := json.MarshalIndent(one, "", "  ")
	return append(files, stream.File{Name: "result.json", Data: b, Mode: 0o644})
}

// rankTrace is rank p's trace records since the case started (seq), with
// the failing call marked.
func rankTrace(p *Proc, seq uint64, c *Case, res *report.Result) (string, error) {
	recs, err := trace.ReadShared(p.Trace, seq)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# rank %d pid %d device %d, case %s, outcome %s\n", p.Rank, p.Pid, p.Device, c.ID, res.Outcome)
	// Mark a call only when one failed (or never returned); a case that
	// failed on a check of the data says so instead of blaming the last
	// call, which returned OK.
	// A call still in flight is the culprit only when the case ended
	// with a rank dead or stuck; after a fail the ranks answered, and
	// an in-flight record is the reply being sent as the ring is read.
	stuck := res.Outcome != report.Pass && res.Outcome != report.Fail && res.Outcome != report.Skip
	failedCall := false
	for _, rec := range recs {
		failedCall = failedCall || rec.Err || (rec.InFlight && stuck)
	}
	if !failedCall && res.Outcome != report.Pass {
		fmt.Fprintf(&sb, "# no API call failed in this rank; the case ended %s on a check: %s\n", res.Outcome, res.Detail)
	}
	_ = trace.Format(&sb, recs, failedCall)
	return sb.String(), nil
}

// reproScript is the case's repro.sh: its repro line, run from any
// directory with the suite's binary when there is one.
func (e *Evidence) reproScript(c *Case) string {
	line := c.Repro
	if e.Binary != "" {
		if rest, ok := strings.CutPrefix(line, "./specs.test "); ok {
			line = shellQuote(e.Binary) + " " + rest
		}
	}
	// Its reports go to a folder of its own, never the default out/: run
	// from this folder, that is the checkout's out/ holding this very
	// evidence (moved aside), or ./out inside it. A --out given wins.
	outDir := "${TMPDIR:-/tmp}/p2patomics-repro-" + c.ID
	repro := "#!/bin/sh\n# Re-run just this case with the same backend, kind, ranks and seed (from any directory).\n" +
		"# Reports: $P2PAT_OUT, else " + outDir + " (pass --out=DIR to choose).\n"
	if e.Binary != "" {
		// go test and go tool ginkgo ./specs run a temporary build that is
		// gone when they end: say so in one line instead of sh's 127.
		repro += "[ -x " + shellQuote(e.Binary) + " ] || { echo \"repro: \"" + shellQuote(e.Binary) +
			"\" is gone (a go test or ginkgo build); build bin/specs.test (make build) and run it with the flags below\" >&2; exit 2; }\n"
	}
	if e.Gate != "" && !strings.Contains(line, e.Gate) {
		line += " " + e.Gate // the suite's repros carry it already
	}
	repro += line + " --out=\"${P2PAT_OUT:-" + outDir + "}\" \"$@\"\n"
	if e.MakeForm != nil {
		repro += "# or, from a checkout: " + e.MakeForm(c.Repro) + "\n"
	}
	return repro
}

// caseKernelLog is kernel.log's text: the case's driver lines, or a line
// that says why there are none (an empty file reads as "not collected").
func caseKernelLog(res *report.Result, klogErr error) string {
	if len(res.KernelLog) > 0 {
		return strings.Join(res.KernelLog, "\n") + "\n"
	}
	if err := klogErr; err != nil {
		return fmt.Sprintf("# kernel log not read: %v\n", err)
	}
	return "# the kernel log was read; it has no GPU driver line (NVRM, amdgpu, Xid, ...) from this case\n"
}

// shellQuote quotes s for sh when it holds anything but safe characters
// (report.ShellQuote, the one rule).
func shellQuote(s string) string { return report.ShellQuote(s) }
