// Command p2pcompare compares two p2patomics runs, typically before and
// after a driver upgrade, with piglit's rules in the outcomes' severity order
// (docs/ARCHITECTURE.md), and tells a change from noise.
//
//	p2pcompare [-v] [--json] [--metric-threshold=0.05] [--alpha=0.05]
//	           [--expectations=PATH[,PATH]|none] OLD/results.json NEW/results.json
//
// The first line is the verdict ("p2pcompare: REGRESSED — …" or
// "p2pcompare: no regression — …"), then the case regressions (outcome
// more severe than before) and metric regressions, then one line counting
// the rest; -v lists the rest too: fixes, changes (same outcome, other
// expected outcome or GPU fault), known flakes that changed outcome,
// enabled / disabled cases, metric improvements and informational metric
// changes.
//
// Flakes: a case that changed outcome and matches the baseline's
// flakes.txt, or carries a flake / known-flake verdict in the old run, is
// a known flake, not a regression. The flakes.txt read is --expectations
// (folders or files, as the suite takes them), else the folder for the old
// run's stack under ./expectations when there is one; --expectations=none
// reads none.
//
// Metrics are judged from their samples with the Mann-Whitney U test, as
// benchstat does (golang.org/x/perf/benchmath): a change counts when
// p < alpha and the median moved by more than the threshold, printed as
// "+5.1% (p=0.008, n=5+5)", else "~". A run written before samples were
// kept is judged from its min–max range: "~ (no samples)" unless the two
// ranges do not overlap. A counted change on a perf case of a GPU backend
// is a metric regression or improvement; anything else is informational.
// --json prints the whole comparison as one JSON object instead.
//
// Exit status: 0 no regression, 1 any case or metric regression, 2 usage
// error or an unreadable results.json or expectation file (one line on
// stderr).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
)

const usage = "usage: p2pcompare [-v] [--json] [--metric-threshold=0.05] [--alpha=0.05] [--expectations=PATH[,PATH]|none] OLD/results.json NEW/results.json"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pcompare", flag.ContinueOnError)
	thr := fs.Float64("metric-threshold", 0.05, "smallest relative change of a metric's median that counts")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann-Whitney U test")
	exps := fs.String("expectations", "", "expectation folders or files whose flakes.txt to read (default: ./expectations/<old run's stack> when present; none: read none)")
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	verbose := fs.Bool("v", false, "list fixes, changes, known flakes, enabled/disabled cases, improvements and informational metric changes too")
	pos, code, done := cli.Parse(fs, args, usage, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "p2pcompare: want two results.json files, got %d (%s)\n", len(pos), usage)
		return 2
	}
	if *thr < 0 || math.IsNaN(*thr) || math.IsInf(*thr, 0) {
		fmt.Fprintf(stderr, "p2pcompare: --metric-threshold must be a fraction ≥ 0 (0.05 = 5%%), got %v\n", *thr)
		return 2
	}
	if !(*alpha > 0 && *alpha < 1) {
		fmt.Fprintf(stderr, "p2pcompare: --alpha must be between 0 and 1 (0.05), got %v\n", *alpha)
		return 2
	}
	oldRep, err := report.Read(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
		return 2
	}
	if err := oldRep.NoPlan(); err != nil {
		// A record of no run (a refused or killed suite's) is no result:
		// never 0 cases passed.
		fmt.Fprintf(stderr, "p2pcompare: %s: %v\n", pos[0], err)
		return report.ExitNoResult
	}
	newRep, err := report.Read(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
		return 2
	}
	if err := newRep.NoPlan(); err != nil {
		// A record of no run (a refused or killed suite's) is no result:
		// never 0 cases passed.
		fmt.Fprintf(stderr, "p2pcompare: %s: %v\n", pos[1], err)
		return report.ExitNoResult
	}
	opt := Options{Threshold: *thr, Alpha: *alpha}
	switch *exps {
	case "none":
	case "":
		// The baseline's own folder, when this checkout has one.
		if dir := expect.Dir("expectations", oldRep.Environment); isDir(dir) {
			set, err := expect.Load([]string{dir})
			if err != nil {
				fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
				return 2
			}
			opt.Flakes, opt.FlakesFrom = set, dir
		}
	default:
		set, err := expect.LoadList(*exps)
		if err != nil {
			fmt.Fprintf(stderr, "p2pcompare: --expectations: %v\n", err)
			return 2
		}
		opt.Flakes, opt.FlakesFrom = set, *exps
	}
	c := Compare(oldRep, newRep, opt)
	c.Old, c.New = pos[0], pos[1]
	if *asJSON {
		b, _ := json.MarshalIndent(c, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		c.WriteTable(stdout, *verbose)
	}
	if c.Regressed {
		return 1
	}
	return 0
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
