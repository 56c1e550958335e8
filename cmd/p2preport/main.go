// Command p2preport re-renders a run's reports from its results.json: the
// verdict (expect.JudgeRun, the function the suite itself uses), then
// replays the recorded results through the suite's report-writing sink
// (harness/stream.Reports): junit.xml,
// results.csv, failures.csv, summary.txt and one self-contained report.html
// (verdict line, machine and stack, verdict matrix, unexpected cases with
// links to their cases/<id>/ folders, pair verdicts, heatmaps, pair table;
// inline SVG, nothing fetched from the network), and prints the conclusion
// with the verdict line last. results.json itself is left as recorded.
//
//	p2preport [--expectations=PATH[,PATH] [--allow-stack-mismatch]] [--out=DIR] RUN/results.json
//
// Without --expectations a case keeps the verdict the run recorded (a
// gated run's) where its outcomes agree with it (expect.Recheck: a crash
// recorded as expected in a pass case is a regression), else is judged
// against its own expected outcome, with
// not-supported results (a capability the devices reported absent) listed
// apart. With --expectations every case is judged against that baseline,
// with the suite's rules: a baseline whose "# stack:" header is not the
// run's is refused (exit 2) unless --allow-stack-mismatch, and one that
// shares less than half the run's cases is refused always; a rerun the
// run recorded is judged as the run judged it; an interrupted run stays
// INTERRUPTED.
// --out defaults to the folder of results.json, where report.html's
// cases/<id>/ links resolve.
//
// Exit status: the verdict's (0 PASS, 1 FAIL, 4 INTERRUPTED); 2 for a usage error, a refused baseline or an
// unreadable input, 3 when a report could not be written (one line on
// stderr each).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/htmlreport"
	"p2patomics/harness/outputs"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
	"p2patomics/internal/cli"
	"p2patomics/internal/safefile"
)

const usage = "usage: p2preport [--expectations=PATH[,PATH] [--allow-stack-mismatch]] [--out=DIR] RUN/results.json|RUN/"

const help = `Re-renders a run's reports (report.html, junit.xml, summary.txt, results.csv,
failures.csv) from its results.json (a run's folder means its results.json)
and prints the verdict last. Every case is judged again from its recorded
outcome: the run's baseline outcomes, or --expectations afresh.

Exit status: 0 PASS, 1 FAIL, 4 INTERRUPTED (the verdict's); 2 a usage error,
a refused baseline or an unreadable input; 3 a record of no run, or a
report that could not be written (one line on stderr).`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2preport", flag.ContinueOnError)
	exps := fs.String("expectations", "", "judge every case against this baseline (`PATH`s: folders or files) instead of the run's own")
	out := fs.String("out", "", "the `DIR` the reports go to (default: beside results.json)")
	allowMismatch := fs.Bool("allow-stack-mismatch", false, "judge against an --expectations baseline whose stack header differs from the run's")
	pos, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "p2preport: want one results.json, got %d (%s)\n", len(pos), usage)
		return 2
	}
	path := cli.ResultsPath(pos[0])
	rep, err := report.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 2
	}
	if err := rep.NoPlan(); err != nil {
		// A record of no run (a refused or killed suite's) is no result:
		// never 0 cases passed.
		fmt.Fprintf(stderr, "p2preport: %s: %v\n", path, err)
		return report.ExitNoResult
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(path)
	}
	// The reports go where nobody but this user or root could redirect
	// them (internal/safefile, the suite's --out rule; issue 49 B6).
	if err := safefile.Ancestors("--out", filepath.Join(dir, htmlreport.File)); err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 2
	}
	// The suite's rules (expect.JudgeReport): a baseline for another stack
	// is refused unless --allow-stack-mismatch, one that shares too few
	// cases always, before anything is rewritten.
	// The case folders a verdict line names are the run's own (beside its
	// results.json, where the suite wrote them), wherever --out puts the
	// reports: issue 49 U22 named folders under --out that do not exist.
	rj := expect.Rejudge{Out: filepath.Dir(path), AllowStackMismatch: *allowMismatch}
	if *exps != "" {
		if rj.Set, err = expect.LoadList(*exps); err != nil {
			fmt.Fprintf(stderr, "p2preport: %v\n", err)
			return 2
		}
		rj.Gate = *exps
	} else if rep.Gate != nil && (rep.Summary == nil || rep.Summary.Gate == "") {
		// A gated run names its baseline in summary.gate (JudgeReport
		// keeps it: the replay says what the live run said, U22); an
		// older record does not.
		rj.Gate = "as recorded in " + path
	}
	// The run's start; results.json files from before the suite recorded
	// it get the Unix epoch, which reads as unknown rather than as a lie.
	stamp := time.Unix(0, 0)
	if t, err := time.Parse(time.RFC3339, rep.Environment.Started); err == nil {
		stamp = t
	}
	// A replay: the recorded results are judged (stream.JudgeRecord:
	// the suite's rules, refusing before anything is rewritten) and then
	// the report-writing sink the suite writes its own reports through.
	reports := &stream.Reports{Dir: dir}
	if err := stream.JudgeRecord(rep, stamp, rj, reports); err != nil {
		fmt.Fprintf(stderr, "p2preport: --expectations=%s: %v\n", *exps, err)
		return 2
	}
	sum := *rep.Summary
	if err := reports.Err(); err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 3
	}
	fmt.Fprintln(stdout, filepath.Join(dir, htmlreport.File))
	fmt.Fprintf(stdout, "reports: %s (report.html, junit.xml, summary.txt, results.csv, failures.csv)\n", dir)
	report.WriteConclusion(stdout, outputs.StdoutStyle(), rep)
	return sum.ExitStatus
}
