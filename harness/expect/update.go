package expect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/safefile"
)

// Refusals of a baseline update (CheckUpdate, PlanUpdate): the one list
// both writers, the suite's --update-expectations and cmd/p2pbaseline,
// refuse by. Each lifts with --force; none applies to a new folder.
var (
	// ErrOtherStack: the folder's "# stack:" header is not this run's
	// stack (exit 2, found before the first case where the suite records).
	ErrOtherStack = errors.New("the folder's stack is not this run's")
	// ErrFallback: the run's --backend=auto fell back to the host backend
	// (exit 2): its results are not the stack the folder is meant for.
	ErrFallback = errors.New("the run fell back to another backend")
	// ErrRegression: the run regressed against the folder's baseline
	// (exit 1: found once the cases ran).
	ErrRegression = errors.New("the run regressed against the baseline")
)

// Existing loads the baseline already in dir; nil when dir is new (absent,
// or a folder without expectation files).
func Existing(dir string) (*Set, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("expectations: %w", err)
	}
	if st.IsDir() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("expectations: %w", err)
		}
		found := false
		for _, e := range ents {
			if kindOf(e.Name()) != "" { // Load refuses what folderKind would not read
				found = true
			}
		}
		if !found {
			return nil, nil
		}
	}
	return Load([]string{dir})
}

// Fallback says how the run whose fingerprint is env fell back from
// --backend=auto to the host backend ("" when it did not): the suite
// records every backend probe in environment.backends and the flags in
// environment.flags.
func Fallback(env report.Environment) string {
	if env.Flags == nil || env.Flags.Backend != "auto" {
		return ""
	}
	for _, p := range env.Probes() {
		if backends.RunsOnCPU(p.Backend) && p.Used {
			return "--backend=auto fell back to the host backend (" + p.Why + ")"
		}
	}
	return ""
}

// CheckUpdate is the refusal that can be told from the fingerprint alone:
// recording into dir, which already holds a baseline, from a run whose
// stack differs from the folder's "# stack:" header (ErrOtherStack) or
// that fell back from --backend=auto to the host (ErrFallback). A new
// folder, or force, is never refused on those grounds; a folder another
// user could redirect (internal/safefile.Ancestors: a foreign link or
// folder on its way) is refused always, so the suite refuses it before the
// first case instead of after the run (issue 49 B6). The error is one line.
func CheckUpdate(dir string, env report.Environment, force bool) error {
	if err := safefile.Ancestors(safeName, filepath.Join(dir, CasesFile)); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	if force {
		return nil
	}
	old, err := Existing(dir)
	if err != nil || old == nil {
		return err
	}
	if why := Fallback(env); why != "" {
		return fmt.Errorf("%w: not updating the baseline in %s: %s; record into a new folder, or pass --force", ErrFallback, dir, why)
	}
	if err := CheckStack(old.Stack, env, false); err != nil {
		// The gate's hint (--allow-stack-mismatch) does not apply here.
		why := strings.TrimSuffix(oneLine(err.Error()), "; pass --allow-stack-mismatch to gate anyway)") + ")"
		return fmt.Errorf("%w: not updating the baseline in %s: %s; record into a new folder, or pass --force", ErrOtherStack, dir, why)
	}
	return nil
}

// Update is what recording a run into a folder changes.
type Update struct {
	// New: the folder held no baseline.
	New bool
	// Changes are "id: old → new (verdict)", sorted; Regressions the
	// changes whose verdict is a regression.
	Changes, Regressions []string
}

// PlanUpdate judges rep against the baseline in dir (CheckUpdate first)
// and lists what recording it would change. Without force it refuses to
// turn a regression (an outcome more severe than the baseline's: a crash
// where the baseline passed) into the baseline (ErrRegression). In a new
// folder, the baseline is each case's own expected outcome.
func PlanUpdate(dir string, rep *report.Report, force bool) (*Update, error) {
	if err := CheckUpdate(dir, rep.Environment, force); err != nil {
		return nil, err
	}
	old, err := Existing(dir)
	if err != nil {
		return nil, err
	}
	u := &Update{New: old == nil}
	if old == nil {
		return u, nil
	}
	for _, res := range rep.Results {
		// A recorded verdict is no reason by itself (issue 49 S3: a crash
		// recorded as not-run was blessed): only a case an interruption
		// left unfinished is not-run, and only one that did not run is
		// missing.
		if res.Verdict == report.Missing && res.Outcome == report.Skip || res.Verdict == report.NotRun && res.Outcome == report.Incomplete {
			continue
		}
		res.Verdict = ""
		v := Judge(res, old, nil)
		if CapabilityLost(res, rep.Environment) != "" {
			// A skip the device contradicts is never blessed into a
			// baseline as not supported.
			v = report.CapabilityLost
		}
		if v == report.Expected || v == report.ExpectedFail {
			continue
		}
		line := fmt.Sprintf("%s: %s → %s (%s)", res.ID(), old.Baseline(res), res.Outcome, v)
		u.Changes = append(u.Changes, line)
		if v == report.Regression || v == report.NewFlake || v == report.CapabilityLost {
			u.Regressions = append(u.Regressions, line)
		}
	}
	sort.Strings(u.Changes)
	sort.Strings(u.Regressions)
	if len(u.Regressions) > 0 && !force {
		return u, fmt.Errorf("%w: refuses to bless %d regression(s) into %s (first: %s); rerun with --force to record them", ErrRegression, len(u.Regressions), dir, u.Regressions[0])
	}
	return u, nil
}
