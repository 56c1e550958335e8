package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// checkStack refuses a baseline for another stack before any case runs,
// naming the expectation folders beside it that do match this machine.
func (r *Run) checkStack() error {
	if r.gate == nil {
		return nil
	}
	env := r.preEnv()
	err := expect.CheckStack(r.gate.Stack, env, r.Opts.AllowStackMismatch)
	if err == nil {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range strings.Split(r.Opts.Expectations, ",") {
		parent := filepath.Dir(filepath.Clean(strings.TrimSpace(p)))
		if seen[parent] {
			continue
		}
		seen[parent] = true
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := filepath.Join(parent, e.Name())
			if isFixture(d) {
				continue // a planted folder is never the one to gate on
			}
			s, lerr := expect.Load([]string{d})
			if lerr == nil && len(s.Stack) > 0 && expect.CheckStack(s.Stack, env, false) == nil {
				dirs = append(dirs, d)
			}
		}
	}
	match := "no folder beside it matches this machine"
	if len(dirs) > 0 {
		match = "folders that match this machine: " + strings.Join(dirs, ", ")
	}
	return usagef("--expectations=%s: %v; %s", r.Opts.Expectations, err, match)
}

// isFixture: dir's cases.txt has a "# fixture:" line, a folder planted for
// a test (expectations/host-amd64-verdicts), not a baseline.
func isFixture(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "# fixture:") {
			return true
		}
	}
	return false
}

// preEnv is the fingerprint known before any case runs: sysfs/procfs and
// the device facts of the backend probes.
func (r *Run) preEnv() report.Environment {
	var infos [][]device.Info
	for _, p := range r.Probes {
		if p.Used {
			infos = append(infos, p.infos)
		}
	}
	return environment(r.Opts, infos)
}

// caseEnv is what judging one case needs: the vendor and the device
// attributes the backend's ranks reported.
func caseEnv(rn *harness.Runner) report.Environment {
	return fingerprint.WithDevices(report.Environment{}, rn.Infos)
}

// updateBaseline records the run as the baseline in the first
// --expectations folder, by the one rule cmd/p2pbaseline records by too
// (expect.PlanUpdate): against a baseline already there it first shows
// what would change, and refuses to turn a regression into the baseline
// without --force (the stack and fallback refusals came before the first
// case, in NewRun). It returns an error when it refused or failed.
func (r *Run) updateBaseline(rep *report.Report) error {
	dir := r.updateDir()
	w := r.stdout()
	u, err := expect.PlanUpdate(dir, rep, r.Opts.Force)
	if u != nil && !u.New {
		fmt.Fprintf(w, "--update-expectations: %d change(s) to %s\n", len(u.Changes), dir)
		for _, c := range u.Changes {
			fmt.Fprintln(w, "  "+c)
		}
	}
	if err != nil {
		return fmt.Errorf("--update-expectations: %w", err)
	}
	if err := expect.WriteBaseline(dir, rep, nil); err != nil {
		return err
	}
	fmt.Fprintf(w, "baseline written to %s\n", dir)
	return nil
}

// updateDir is the folder --update-expectations writes: the first
// --expectations path.
func (r *Run) updateDir() string {
	return strings.TrimSpace(strings.Split(r.Opts.Expectations, ",")[0])
}

// recordBaseline is --update-expectations at the end of a run: the exit
// status it adds (0 written, 1 refused or failed, ExitUsage for another
// stack or a fallback baseline). Half a run is not a baseline: its unrun
// cases would vanish from cases.txt and its crashes be blessed unseen.
func (r *Run) recordBaseline(rep *report.Report, sig string) int {
	if sig != "" {
		fmt.Fprintf(os.Stderr, "p2patomics: --update-expectations: not written: the run was interrupted (%s)\n", sig)
		return 0
	}
	err := r.updateBaseline(rep)
	switch {
	case err == nil:
		return r.recordPerf(rep)
	case errors.Is(err, expect.ErrOtherStack) || errors.Is(err, expect.ErrFallback):
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		return ExitUsage
	}
	fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
	return 1
}
