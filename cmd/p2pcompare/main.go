// Command p2pcompare compares two p2patomics runs, typically before and
// after a driver upgrade, with piglit's rules in the outcomes' severity order
// (docs/ARCHITECTURE.md), and tells a change from noise.
//
//	p2pcompare [-v] [--json] [--metric-threshold=0.05] [--alpha=0.05]
//	           [--expectations=PATH[,PATH]|none] OLD/results.json[,OLD…] NEW/results.json[,NEW…]
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
// ranges do not overlap. This is the perf judge's two-run mode
// (expect.CompareRuns): without a perf.txt there is no limit to judge a
// median against, only the other run's samples. A counted change on a
// perf case of a GPU backend is a metric regression or improvement by the
// metric's declared direction (report.Metric.Direction, the gate's
// expect.Worse); anything else is informational.
// With one run a side a metric regression is "unconfirmed": listed, never
// REGRESSED (two worlds cannot tell a change from placement noise). With
// --expectations holding a perf.txt, or at least 3 old runs (comma
// separated; a band is recorded from them by perf.txt's rule), the first
// new run is judged by expect.JudgeMetrics, the suite's perf gate, the other new
// runs being its re-measurements: its perf-regressions regress.
// Outcomes are compared between the first run of each side.
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
	"strings"
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/cli"
)

const usage = "usage: p2pcompare [-v] [--json] [--metric-threshold=0.05] [--alpha=0.05] [--expectations=PATH[,PATH]|none] OLD/results.json[,OLD…] NEW/results.json[,NEW…]"

const help = `Compares two runs (before and after a driver upgrade; a run's folder means
its results.json): the verdict first, then the case regressions (outcome
more severe than before) and metric regressions; -v lists the rest. Both
runs are judged again from their outcomes before they are compared.

Exit status: 0 no regression; 1 any case or metric regression; 2 a usage
error or an unreadable results.json or expectation file; 3 a record of no
run (one line on stderr).`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pcompare", flag.ContinueOnError)
	thr := fs.Float64("metric-threshold", 0.05, "smallest relative change of a metric's median that counts")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann-Whitney U test")
	exps := fs.String("expectations", "", "expectation folders or files whose flakes.txt to read (default: ./expectations/<old run's stack> when present; none: read none)")
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	verbose := fs.Bool("v", false, "list fixes, changes, known flakes, enabled/disabled cases, improvements and informational metric changes too")
	pos, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
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
	olds, code := readSide(pos[0], stderr)
	if olds == nil {
		return code
	}
	news, code := readSide(pos[1], stderr)
	if news == nil {
		return code
	}
	oldRep, newRep := olds[0], news[0]
	opt := Options{Threshold: *thr, Alpha: *alpha}
	switch *exps {
	case "none":
	case "":
		// The baseline's own folder, when this checkout has one: its
		// flakes.txt (its perf.txt judges only when named: --expectations).
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
		if set.Perf != nil {
			opt.Bands, opt.BandsFrom = set.Perf, "of "+set.PerfSource
		}
	}
	if err := bands(&opt, olds, news, pos); err != nil {
		fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
		return 2
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

// readSide reads one side's runs: a results.json, or several joined by
// commas (runs in fresh worlds of one stack). nil and the exit status on
// an unreadable file or a record of no run.
func readSide(arg string, stderr io.Writer) ([]*report.Report, int) {
	var reps []*report.Report
	for _, p := range strings.Split(arg, ",") {
		p = cli.ResultsPath(p)
		rep, err := report.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
			return nil, 2
		}
		if err := rep.NoPlan(); err != nil {
			// A record of no run (a refused or killed suite's) is no
			// result: never 0 cases passed.
			fmt.Fprintf(stderr, "p2pcompare: %s: %v\n", p, err)
			return nil, report.ExitNoResult
		}
		// Judged by the suite's judge before any replay (stream.JudgeRecord: each
		// recorded verdict re-checked against its outcomes, expect.Recheck,
		// a case without one judged as the suite would), so both sides are
		// judged runs whatever wrote them.
		if err := stream.JudgeRecord(rep, time.Unix(0, 0), expect.Rejudge{}); err != nil {
			fmt.Fprintf(stderr, "p2pcompare: %s: %v\n", p, err)
			return nil, 2
		}
		reps = append(reps, rep)
	}
	return reps, 0
}

// bands picks how metrics are judged: a perf.txt named by --expectations
// (its stack and scope checked against the new run), else a band recorded
// from at least perf.MinRuns old runs (perf.Record, the rule perf.txt is
// recorded by), else the U test between one run a side. The new side's
// further runs are the judge's re-measurements. Two old runs, or several
// new runs against one old run with no band, is a usage error: no rule
// judges them.
func bands(opt *Options, olds, news []*report.Report, pos []string) error {
	switch {
	case opt.Bands != nil:
		if err := expect.CheckStack(opt.Flakes.Stack, news[0].Environment, false); err != nil {
			return fmt.Errorf("%s: %w", opt.Flakes.PerfSource, err)
		}
		// The perf baseline whose scope is the new run's GPUs (a folder
		// may hold one per card).
		if err := opt.Flakes.ChoosePerf(news[0].Environment, false); err != nil {
			return fmt.Errorf("%s: %w", opt.Flakes.PerfSource, err)
		}
		opt.Bands, opt.BandsFrom = opt.Flakes.Perf, "of "+opt.Flakes.PerfSource
	case len(olds) >= perf.MinRuns:
		f, err := perf.Record(olds, strings.Split(pos[0], ","), "")
		if err != nil {
			return fmt.Errorf("a band from the old runs: %w", err)
		}
		opt.Bands, opt.BandsFrom = f, fmt.Sprintf("from %d old runs", len(olds))
	case len(olds) > 1 || len(news) > 1:
		return fmt.Errorf("%d old and %d new runs: a band needs at least %d old runs (or --expectations with a perf.txt); else compare one run a side", len(olds), len(news), perf.MinRuns)
	}
	opt.NewReruns = reruns(news[1:])
	return nil
}

// reruns is, per "case-id metric", the medians of the runs where the case
// passed (expect.JudgeMetrics's re-measurements).
func reruns(reps []*report.Report) map[string][]float64 {
	out := map[string][]float64{}
	for _, rep := range reps {
		last := map[string]report.Result{}
		for _, r := range rep.Results {
			last[r.ID()] = r // a later entry (a rerun) wins
		}
		for _, r := range last {
			if r.Outcome != report.Pass {
				continue
			}
			for name, m := range r.Metrics {
				out[r.ID()+" "+name] = append(out[r.ID()+" "+name], m.Median)
			}
		}
	}
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
