package suite

import (
	"errors"
	"fmt"
	"io"
	"os"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// updateBaseline records the run as the baseline in dir, by the one rule
// cmd/p2pbaseline records by too (expect.PlanUpdate): against a baseline
// already there it first shows what would change, and refuses to turn a
// regression into the baseline without force (the stack and fallback
// refusals came before the first case, in NewRun). It returns an error
// when it refused or failed.
func updateBaseline(w io.Writer, dir string, force bool, rep *report.Report) error {
	u, err := expect.PlanUpdate(dir, rep, force)
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
	if rep.Summary != nil {
		// The verdict line (stdout's last, results.json's, junit's) says a
		// baseline was recorded, and a forced one as forced: a regression
		// blessed by P2PAT_FORCE=1 read as a plain PASS (issue 49 S4, U26).
		rec := &report.Recorded{Dir: dir, Forced: force}
		if force && u != nil {
			rec.Blessed = u.Regressions
		}
		rep.Summary.MarkRecorded(rec)
	}
	return nil
}

// recordBaseline is --update-expectations at the end of a run: the exit
// status it adds (0 written, 1 refused or failed, ExitUsage for another
// stack or a fallback baseline), perf.txt's (perfWork.record) after the
// baseline. Half a run is not a baseline: its unrun cases would vanish
// from cases.txt and its crashes be blessed unseen.
func recordBaseline(w io.Writer, p *Plan, perf *perfWork, rep *report.Report, sig string) int {
	if sig != "" {
		fmt.Fprintf(os.Stderr, "p2patomics: --update-expectations: not written: the run was interrupted (%s)\n", sig)
		return 0
	}
	err := updateBaseline(w, p.updateDir(), p.Opts.Force, rep)
	switch {
	case err == nil:
		return perf.record(w, p, rep)
	case errors.Is(err, expect.ErrOtherStack) || errors.Is(err, expect.ErrFallback):
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		return ExitUsage
	}
	fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
	return 1
}
