package suite

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"p2patomics/harness"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
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
	// active is how the signal handler stops the run; nil until the run
	// watches signals (the backend probe runs before that).
	active  atomic.Pointer[func(os.Signal)]
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
	ckpt := &stream.Checkpoint{Path: filepath.Join(od.Path, "results.json")}
	werr := ckpt.Begin(rep)
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
			if stop := active.Load(); stop != nil {
				(*stop)(sig)
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

// sigName names the signal the suite caught by its kernel name, as the
// harness names a rank's (harness.SignalName).
func sigName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		return harness.SignalName(s)
	}
	return sig.String()
}

// ExitEnvironment is the status of a run the machine could not carry
// before its first case: the binary's own Go tests, run in a child before
// --out is touched, were killed by a signal or could not start (no
// threads under a process limit, no address space under ulimit -v, a Go
// runtime fatal error). It is neither FAIL (1: the driver or the suite's
// own checks) nor a usage error (2: the command line). The suite process's
// own runtime abort is 134 (SIGABRT, docs/FAULTS.md).
const ExitEnvironment = 5

// OwnTestsOutcome is what the own-tests child's end says: Failed names
// the Go tests that failed (their --- FAIL lines, or the tests a testing
// timeout caught), Environment says why the child could not run them;
// both empty: it passed.
type OwnTestsOutcome struct {
	Failed      []string
	Environment string
}

var (
	failLine = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)
	// runtimeFatal are the Go runtime's lines for a machine that cannot
	// carry a process: threads, memory, address space. A test cannot cause
	// them by failing.
	runtimeFatal = regexp.MustCompile(`(?m)^.*(pthread_create failed|failed to create new OS thread|newosproc|fatal error: out of memory|cannot allocate memory|failed to reserve page summary memory|cannot map pages|cannot reserve arena).*$`)
	timedOut     = regexp.MustCompile(`(?m)^panic: test timed out after .*\n\s*running tests:\n((?:\s+\S+ \(.*\)\n?)+)`)
)

// JudgeOwnTests reads the own-tests child's combined output and how it
// ended (state nil: it did not end on its own). A --- FAIL line or a
// testing timeout is the tests failing (exit 1); exit 1 is testing's
// failure status; anything else that is not exit 0 (a signal, the
// runtime's fatal error, an exit status testing never gives) is the
// environment (ExitEnvironment).
func JudgeOwnTests(out []byte, state *os.ProcessState) OwnTestsOutcome {
	if state != nil && state.Success() {
		return OwnTestsOutcome{}
	}
	var names []string
	for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if m := timedOut.FindSubmatch(out); m != nil {
		for _, l := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				names = append(names, f[0]+" (timed out)")
			}
		}
	}
	fatal := runtimeFatal.Find(out)
	switch {
	case fatal != nil:
		// A runtime that cannot make a thread fails whatever test it
		// was in: the machine's limit, not the test, is the cause.
		return OwnTestsOutcome{Environment: oneLine(string(fatal))}
	case state == nil:
		return OwnTestsOutcome{Environment: "the child did not end"}
	case len(names) > 0:
		return OwnTestsOutcome{Failed: names}
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return OwnTestsOutcome{Environment: "killed by " + harness.SignalName(ws.Signal())}
	}
	if state.ExitCode() == 1 {
		return OwnTestsOutcome{Failed: []string{"the test binary exited 1"}}
	}
	return OwnTestsOutcome{Environment: fmt.Sprintf("exited %d with no failed test", state.ExitCode())}
}
