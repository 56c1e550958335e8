package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"p2patomics/harness/health"
	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
	"p2patomics/trace"
)

// Evidence configures what a runner keeps for a bug report.
type Evidence struct {
	Out      string                // results folder; cases go to Out/cases/<id>/
	TraceAll bool                  // --trace: keep traces for passing cases too
	Env      func() map[string]any // the run's fingerprint, for each case folder
	MakeForm func(repro string) string
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

// caseWatch is what the runner notes at a case's start.
type caseWatch struct {
	seqs []uint64
}

func (r *Runner) startWatch(w *World) *caseWatch {
	cw := &caseWatch{seqs: make([]uint64, len(w.Procs))}
	for i, p := range w.Procs {
		if p.Trace != nil {
			cw.seqs[i], _ = trace.SharedSeq(p.Trace)
		}
	}
	kr, _, err := kernelLog()
	if err != nil && !r.kmsgSaid {
		r.kmsgSaid = true
		r.Events = append(r.Events, fmt.Sprintf("kernel log unreadable (%v): cases carry no kernel-log lines", err))
	}
	if kr != nil {
		_ = kr.Mark()
	}
	return cw
}

// endWatch attaches the case's GPU kernel-log lines, judges machine health
// (GPU cases), and writes the case's evidence folder when it did not pass.
func (r *Runner) endWatch(c *Case, w *World, cw *caseWatch, res *report.Result) {
	kr, mon, _ := kernelLog()
	var lines []kmsg.Line
	if kr != nil {
		lines, _ = kr.Since()
		for _, l := range kmsg.Filter(lines) {
			res.KernelLog = append(res.KernelLog, l.String())
		}
	}
	if c.GPU && mon != nil {
		snap, v := mon.CheckLines(r.health, lines)
		r.health = snap
		if v.Untrustworthy && r.Abort == "" {
			r.Abort = v.Reason
			res.Detail = strings.TrimSpace(res.Detail + "; machine no longer trustworthy: " + v.Reason)
		}
	}
	if r.Evidence == nil || r.Evidence.Out == "" || (res.Outcome == report.Pass && !r.Evidence.TraceAll) {
		return
	}
	if err := r.writeEvidence(c, w, cw, res); err != nil {
		res.Detail = strings.TrimSpace(res.Detail + "; evidence not written: " + err.Error())
	}
}

func (r *Runner) writeEvidence(c *Case, w *World, cw *caseWatch, res *report.Result) error {
	dir := filepath.Join(r.Evidence.Out, "cases", c.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for i, p := range w.Procs {
		if p.Trace == nil {
			continue
		}
		recs, err := trace.ReadShared(p.Trace, cw.seqs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "# rank %d pid %d device %d, case %s, outcome %s\n", p.Rank, p.Pid, p.Device, c.ID, res.Outcome)
		_ = trace.Format(&sb, recs, res.Outcome != report.Pass)
		errs = append(errs, os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.trace", p.Rank)), []byte(sb.String()), 0o644))
		errs = append(errs, os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.stderr", p.Rank)), []byte(p.Stderr.String()), 0o644))
	}
	repro := "#!/bin/sh\n# Re-run just this case with the same backend, kind, ranks and seed.\n" + c.Repro + "\n"
	if r.Evidence.MakeForm != nil {
		repro += "# or, from a checkout: " + r.Evidence.MakeForm(c.Repro) + "\n"
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, "repro.sh"), []byte(repro), 0o755))
	errs = append(errs, os.WriteFile(filepath.Join(dir, "kernel.log"), []byte(strings.Join(res.KernelLog, "\n")+"\n"), 0o644))
	if r.Evidence.Env != nil {
		b, _ := json.MarshalIndent(r.Evidence.Env(), "", "  ")
		errs = append(errs, os.WriteFile(filepath.Join(dir, "environment.json"), b, 0o644))
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	errs = append(errs, os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644))
	return errors.Join(errs...)
}
