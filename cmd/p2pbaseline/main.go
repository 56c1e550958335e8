// Command p2pbaseline records a finished run (results.json) as the baseline
// in an expectation folder, as --update-expectations does during a run. It
// is how a device run made elsewhere becomes the baseline the next driver
// must meet. It records by the suite's rule (expect.PlanUpdate) and
// refuses what --update-expectations refuses: a folder whose "# stack:"
// header is not the run's, or a run whose --backend=auto fell back to the
// host (one line, exit 2), and a regression against the folder's baseline
// (one line, exit 1), each unless the folder is new or --force is given.
//
// Given three or more results.json (whole runs, each in fresh worlds),
// it also writes DIR/perf.txt, the perf baseline (harness/perf.Record:
// a limit per gated metric from the runs' medians; in a folder that holds
// another card's perf file, this card's perf-<card>.txt beside it:
// expect.WritePerfAt); the first file is the
// correctness baseline. With fewer it writes no perf.txt and says why:
// one run cannot tell run-to-run noise from a change.
//
//	p2pbaseline [--force] [--reason 'REGEXP=text']... DIR results.json [results.json...]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
)

const usage = "usage: p2pbaseline [--force] [--reason 'REGEXP=text']... DIR RUN/results.json|RUN/ [more runs...]"

const help = `Records a finished run as the baseline in the expectation folder DIR
(fails.txt, cases.txt, durations.txt, evidence.txt), as --update-expectations
does; with three or more runs also perf.txt. A run's folder means its
results.json. It refuses another stack's folder, a backend fallback, an
interrupted run and a regression against DIR's baseline, each unless DIR is
new or --force.

Exit status: 0 the baseline was written; 1 a regression refused, or a
file could not be written; 2 a usage error, an unreadable input, a refused
stack, fallback or interrupted run, or a DIR another user could redirect;
3 a record of no run (one line on stderr).`

type reasons []string

func (r *reasons) String() string     { return strings.Join(*r, ",") }
func (r *reasons) Set(v string) error { *r = append(*r, v); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pbaseline", flag.ContinueOnError)
	var rs reasons
	fs.Var(&rs, "reason", "REGEXP=text: the reason comment for failing cases whose id matches")
	force := fs.Bool("force", false, "record even into another stack's folder, after a backend fallback, or over a regression")
	// internal/cli: --help is the usage on stdout and exit 0, a bad flag
	// one line and exit 2, like every p2p* command.
	pos, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
	if done {
		return code
	}
	if len(pos) < 2 {
		fmt.Fprintf(stderr, "p2pbaseline: need DIR and a results.json (%s)\n", usage)
		return 2
	}
	for i := 1; i < len(pos); i++ {
		pos[i] = cli.ResultsPath(pos[i])
	}
	rep, err := report.Read(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
		return 2
	}
	if err := rep.NoPlan(); err != nil {
		// A record of no run (a refused or killed suite's) is no result:
		// never 0 cases passed.
		fmt.Fprintf(stderr, "p2pbaseline: %s: %v\n", pos[1], err)
		return report.ExitNoResult
	}
	why := map[string]string{}
	for _, r := range rs {
		pat, text, ok := strings.Cut(r, "=")
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if !ok || err != nil {
			fmt.Fprintf(stderr, "p2pbaseline: --reason %q: want REGEXP=text with a valid regexp\n", r)
			return 2
		}
		for _, res := range rep.Results {
			if _, set := why[res.ID()]; !set && re.MatchString(res.ID()) {
				why[res.ID()] = text
			}
		}
	}
	if rep.Summary != nil && rep.Summary.Interrupted != "" && !*force {
		fmt.Fprintf(stderr, "p2pbaseline: %s: the run was interrupted (%s): half a run is not a baseline; pass --force to record it anyway\n", pos[1], rep.Summary.Interrupted)
		return 2
	}
	// One rule with --update-expectations: the same refusals, the same diff.
	u, err := expect.PlanUpdate(pos[0], rep, *force)
	if u != nil && !u.New {
		fmt.Fprintf(stdout, "%d change(s) to %s\n", len(u.Changes), pos[0])
		for _, c := range u.Changes {
			fmt.Fprintln(stdout, "  "+c)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
		if errors.Is(err, expect.ErrRegression) {
			return 1
		}
		return 2
	}
	// report.Read has validated rep (ids [a-z0-9._-], known outcomes), and
	// WriteBaseline refuses an invalid report itself.
	if err := expect.WriteBaseline(pos[0], rep, why); err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "baseline of %d cases written to %s\n", len(rep.Results), pos[0])
	return recordPerf(pos[0], rep, pos[2:], pos[1], stdout, stderr)
}

// recordPerf writes DIR/perf.txt from first and the other runs; with
// fewer than perf.MinRuns it says why none was written and succeeds (the
// correctness baseline is written).
func recordPerf(dir string, first *report.Report, more []string, firstName string, stdout, stderr io.Writer) int {
	runs, names := []*report.Report{first}, []string{firstName}
	for _, p := range more {
		r, err := report.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
			return 2
		}
		runs, names = append(runs, r), append(names, p)
	}
	if len(runs) < perf.MinRuns {
		fmt.Fprintf(stdout, "perf.txt not written: %v, got %d results.json (one run cannot tell run-to-run noise from a change)\n", perf.ErrTooFewRuns, len(runs))
		return 0
	}
	path, f, err := expect.WritePerfAt(dir, runs, names, perf.Recording{})
	if err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: perf.txt: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "perf baseline of %d metrics from %d runs (%s) written to %s\n", len(f.Lines), len(runs), f.Scope, path)
	return 0
}
