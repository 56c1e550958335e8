package harness

import (
	"path/filepath"

	"p2patomics/harness/health"
	"p2patomics/harness/kmsg"
)

// Seams for the black-box tests in package harness_test.

// DeathsFound is how many rank deaths r's two death checks have found:
// the judgement's (Run's judgeCase, diedDuring's one site) and the
// backstop's (Run's collect, after the leak check).
func DeathsFound(r *Runner) (judged, backstop int) {
	r.hooks.mu.Lock()
	defer r.hooks.mu.Unlock()
	return r.hooks.deaths[deathFound], r.hooks.deaths[deathBackstop]
}

// SetLateDeath makes f run in every later case between its leak check and
// its evidence (nil: none), where a rank f kills is the backstop's alone to
// find.
func SetLateDeath(r *Runner, f func(*World)) { r.hooks.lateDeath = f }

// SetKernelLog makes r read its kernel log from path, a file of /dev/kmsg
// records a test appends lines to (kmsg.OpenPath), with a machine monitor
// that reads nothing (an empty root, no nvidia-smi).
func SetKernelLog(r *Runner, path string) error {
	kr, err := kmsg.OpenPath(path)
	if err != nil {
		return err
	}
	mon := &health.Monitor{Root: filepath.Dir(path), SMI: "-", Kmsg: kr}
	r.watch.open = func() (*kmsg.Reader, *health.Monitor, error) { return kr, mon, nil }
	return nil
}

// Prestart is Runner.prestart, for the standby tests: whether the case
// is told a standby started beside it where free memory is the leak check's.
func Prestart(r *Runner, c *Case) bool { return r.pool.prestart(c) }

// Standbys is how many standby worlds r started and used.
func Standbys(r *Runner) (started, used int) {
	return r.pool.spare.counts()
}

// RunFaults are r's run faults so far, as results.json's lines.
func RunFaults(r *Runner) []string { return r.book.runFaults() }

// EventLines are r's world events and starts as stdout prints them.
func EventLines(r *Runner) []string { return r.log.lines() }
