package suite

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/device"
)

// Exit statuses beyond 0 (PASS) and 1 (FAIL) (docs/GATING.md).
const (
	ExitUsage       = 2                      // found before the first case: flags, --out, baseline
	ExitNoReport    = 3                      // the reports could not be written
	ExitInterrupted = report.ExitInterrupted // SIGINT/SIGTERM/SIGHUP: verdict INTERRUPTED, reports written
)

var (
	// prepared is the --out folder Prepare readied (nil in unit tests that
	// build a Run by hand).
	prepared *OutDir
	// active is the run the signal handler finishes; nil until NewRun's
	// plan exists (the backend probe runs before that).
	active  atomic.Pointer[Run]
	sigOnce sync.Once
	// sigMu orders Prepare's first write against a signal before the
	// plan: the handler waits for the write and reads prepared after it.
	sigMu     sync.Mutex
	sigCaught = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	// caught is the name of the signal the handler caught ("" none yet).
	caught atomic.Value
)

// caughtSignal is the signal the handler caught, "" when none.
func caughtSignal() string {
	s, _ := caught.Load().(string)
	return s
}

// Prepare runs between the flags and NewRun: it readies --out (PrepareOut:
// lock, previous run kept as <out>.prev, a fresh 0755 folder), writes a
// first results.json there (so an unwritable folder is found now, and a
// run killed from here on leaves a record), and installs the SIGINT,
// SIGTERM and SIGHUP handler before NewRun's backend probe, which starts a
// rank per GPU backend (0.3-0.5 s on an H200). Its error is one line; the
// caller exits ExitUsage.
func Prepare(o *Options) error {
	od, err := PrepareOut(o.Out)
	if err != nil {
		return err
	}
	o.Out = od.Path
	// The first record says it is no run (state no-plan): a suite killed
	// before its plan checkpoint leaves this, and every tool reads it as
	// no result, not as 0 cases passed.
	rep := &report.Report{Schema: report.Schema, State: report.StateNoPlan, Environment: environment(o, nil), Results: []report.Result{}}
	sigMu.Lock()
	werr := rep.Write(filepath.Join(od.Path, "results.json"))
	if werr == nil {
		// Only a record that exists is named by the pre-plan signal line.
		prepared = od
	}
	sigMu.Unlock()
	if werr != nil {
		return fmt.Errorf("--out=%s cannot hold the reports: %v", quote(od.Path), werr)
	}
	catchSignals(o)
	return nil
}

// CatchSignals installs the signal handler at once (TestMain calls it
// before the flags are parsed); until Prepare has readied --out a signal
// ends the suite with one line and exit 1, no results written.
func CatchSignals(o *Options) { catchSignals(o) }

// catchSignals installs the one handler: it finishes the active run (every
// rank killed, unfinished cases incomplete, the reports written), or, when
// the signal came before the plan existed, says so and exits
// ExitInterrupted with the
// first results.json (no cases) in place.
func catchSignals(o *Options) {
	sigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sigCaught...)
		go func() {
			sig := <-ch
			// Said first: a Finish that TestMain reaches before the run's
			// handler (Ginkgo ends the run on SIGTERM too) still tells it.
			caught.Store(sigName(sig))
			if r := active.Load(); r != nil {
				r.interrupted(sig)
				return
			}
			// A write of Prepare's record in flight finishes first (its
			// temp file renamed), so the line below tells the truth and no
			// .tmp is left; the lock is never released, the process exits.
			sigMu.Lock()
			if prepared == nil {
				fmt.Fprintf(os.Stderr, "p2patomics: %s before --out was ready: no results written\n", sigName(sig))
			} else {
				fmt.Fprintf(os.Stderr, "p2patomics: %s before the first case: no case ran; results: %s\n",
					sigName(sig), filepath.Join(o.Out, "results.json"))
			}
			os.Exit(ExitInterrupted)
		}()
	})
}

// interrupted is the signal path once a plan exists.
func (r *Run) interrupted(sig os.Signal) {
	r.stop(sigName(sig), "interrupted by "+sigName(sig), sigName(sig))
}

// StopAfter ends the run as a signal would (ranks killed, unfinished cases
// incomplete, reports written, verdict INTERRUPTED naming the flag, exit
// ExitInterrupted) once d has passed. TestMain arms it
// from testing's -test.timeout, a little before testing's own alarm, which
// would panic and leave results.json without the cases that finished.
func (r *Run) StopAfter(d time.Duration, flag string) {
	time.AfterFunc(d, func() {
		r.mu.Lock()
		done := r.finished
		r.mu.Unlock()
		if !done {
			r.stop(flag+" reached", "stopped by "+flag, flag)
		}
	})
}

// stop kills every rank, marks the running case incomplete (detail: why
// + " while running"), records by what the run was interrupted (a signal's
// name, or the -test.timeout flag), writes the reports and exits with
// Finish's status.
func (r *Run) stop(what, why, by string) {
	fmt.Fprintf(os.Stderr, "p2patomics: %s: stopping ranks, writing results\n", what)
	r.mu.Lock()
	cur := r.current
	if cur != "" {
		r.results[cur] = report.Result{Case: report.ParseCase(cur, nil), Outcome: report.Incomplete, Expected: r.expected(cur),
			Detail: why + " while running", Ranks: []report.Rank{}}
	}
	r.finished = true // no result written after this point
	r.signal = by
	runners := r.runnerList()
	r.mu.Unlock()
	// A checkpoint the main goroutine is writing finishes first (its temp
	// file renamed), and none starts after: os.Exit below would leave its
	// temporary file in --out, or a late one would overwrite the final
	// results.json.
	r.emit(stream.Interrupted{Signal: by})
	for _, rn := range runners {
		rn.KillAll()
	}
	os.Exit(r.Finish())
}

// sigName names the signal the suite caught by its kernel name, as the
// harness names a rank's (harness.SignalName).
func sigName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		return harness.SignalName(s)
	}
	return sig.String()
}

// checkpoint rewrites results.json as it would stand if the suite died now
// (finished cases as they ended, the rest incomplete), through the run's
// checkpoint sink (stream.Checkpoint: the cost model, the one line a
// failure says). A disk that fills under the run stops the case folders
// (markFull); Finish's own write decides the exit status.
func (r *Run) checkpoint() {
	if r.Opts.Out == "" || prepared == nil {
		return
	}
	r.checkpoints().Write()
}

// emit feeds e to the run's sinks, in one order for every event: the
// checkpoint (results.json first: a parent killed after the line was
// printed finds the case in it), the live line, the gate's rerun queue. The sinks are made
// on the first event: a Run made by hand in a test has no plan step.
func (r *Run) emit(e stream.Event) {
	r.mu.Lock()
	if r.sinks == nil {
		var sinks []stream.Sink
		if r.Opts.Out != "" && prepared != nil {
			sinks = append(sinks, r.checkpointSink())
		}
		r.sinks = stream.NewFanout(append(sinks, r.liveSink(), &r.reruns)...)
	}
	f := r.sinks
	r.mu.Unlock()
	f.Emit(e)
}

// checkpoints is the run's checkpoint sink, made on first use: a Run made
// by hand in a test has no plan step to make it in.
func (r *Run) checkpoints() *stream.Checkpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkpointSink()
}

// checkpointSink is checkpoints' sink; r.mu is held.
func (r *Run) checkpointSink() *stream.Checkpoint {
	if r.ckpt == nil {
		r.ckpt = &stream.Checkpoint{Path: filepath.Join(r.Opts.Out, "results.json"), Snapshot: r.snapshot, Stderr: os.Stderr,
			NoSpace: func(err error) bool {
				if !noSpace(err) {
					return false
				}
				// The disk filled under the run: case folders stop (the
				// record keeps what is left), and markFull says so.
				r.markFull("a checkpoint of results.json: " + err.Error())
				return true
			}}
	}
	return r.ckpt
}

// snapshot is the record a checkpoint writes; nil once the run finished
// (Finish writes results.json now; a checkpoint would race it).
func (r *Run) snapshot() *report.Report {
	r.mu.Lock()
	done := r.finished
	runners := r.runnerList()
	r.mu.Unlock()
	if done {
		return nil
	}
	return &report.Report{Schema: report.Schema, State: report.StateRunning, Environment: r.envNow(), Results: r.Results(),
		WorldEvents: worldEvents(runners)}
}

// envNow is the fingerprint with the device facts known so far, collected
// again only when a world brought new ones.
func (r *Run) envNow() report.Environment {
	r.mu.Lock()
	runners := r.runnerList()
	r.mu.Unlock()
	var infos [][]device.Info
	n := 0
	for _, rn := range runners {
		in := rn.DeviceInfos()
		infos = append(infos, in)
		n += len(in)
	}
	if r.ckptEnv == nil || n != r.ckptEnvN {
		env := environment(r.Opts, infos)
		r.ckptEnv, r.ckptEnvN = &env, n
	}
	return *r.ckptEnv
}
