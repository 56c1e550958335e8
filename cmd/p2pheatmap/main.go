// Command p2pheatmap renders a results.json's pictures as SVG files: the
// verdict matrices (verdict.svg, verdict.<backend>.<kind>.pairs.svg) and
// one heatmap per per-pair metric (<family>.<metric>.svg; row = the case's
// first GPU, column = its second, the data's direction in the caption),
// plus an index.html that shows them all. p2preport puts the same
// pictures in one self-contained report.html.
//
//	p2pheatmap --out DIR [--expectations=PATH[,PATH] [--allow-stack-mismatch]] results.json
//
// The pictures' verdicts are the run's (expect.JudgeReport, the judge
// every tool shows): the run's recorded verdicts, each re-checked against
// its outcomes (expect.Recheck: one they contradict is judged again), or, with
// --expectations, a fresh judgement against that baseline with the
// suite's stack and shared-case rules (a refused baseline is exit 2).
//
// Pair convention and file names: see package p2patomics/harness/pairs.
// The verdict line names the run's own case folders (beside its
// results.json), never folders under --out, where only pictures go.
//
// Exit status: 0 on success, whatever the run's verdict (the pictures are
// no gate; p2preport's exit status is the verdict's), also when the run
// has no results, which it says on stderr; 1 when a picture could not be
// written; 2 on a usage error, an unreadable results.json, a refused
// baseline or an --out another user could redirect; 3 a record of no run.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"p2patomics/harness/expect"
	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
	"p2patomics/internal/safefile"
)

const usage = "usage: p2pheatmap --out DIR [--expectations=PATH[,PATH] [--allow-stack-mismatch]] RUN/results.json|RUN/"

const help = `Writes a run's pictures as SVG files and an index.html into --out: the
verdict matrices and one heatmap per per-pair metric (a run's folder means
its results.json). The verdict they show is the run judged again from its
outcomes (or against --expectations), printed last.

Exit status: 0 the pictures were written (whatever the run's verdict: the
pictures are not a gate; p2preport's exit status is the verdict), also when
the run has no results, said on stderr; 1 a picture could not be written;
2 a usage error, an unreadable results.json, a refused baseline or an
--out another user could redirect; 3 a record of no run.`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pheatmap", flag.ContinueOnError)
	out := fs.String("out", "", "the `DIR` for the SVG files and index.html")
	exps := fs.String("expectations", "", "judge against this baseline instead of the recorded verdicts")
	allowMismatch := fs.Bool("allow-stack-mismatch", false, "judge against a baseline whose stack header differs from the run's")
	pos, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
	if done {
		return code
	}
	if *out == "" || len(pos) != 1 {
		fmt.Fprintf(stderr, "p2pheatmap: %s\n", usage)
		return 2
	}
	pos[0] = cli.ResultsPath(pos[0])
	rep, err := report.Read(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "p2pheatmap: %v\n", err)
		return 2
	}
	if err := rep.NoPlan(); err != nil {
		// A record of no run (a refused or killed suite's) is no result:
		// never 0 cases passed.
		fmt.Fprintf(stderr, "p2pheatmap: %s: %v\n", pos[0], err)
		return report.ExitNoResult
	}
	// The pictures go where nobody but this user or root could redirect
	// them (internal/safefile, the suite's --out rule; issue 49 B6).
	if err := safefile.Ancestors("--out", filepath.Join(*out, "index.html")); err != nil {
		fmt.Fprintf(stderr, "p2pheatmap: %v\n", err)
		return 2
	}
	// The case folders the verdict line names are the run's own (beside
	// its results.json), not under --out, where only pictures go (issue
	// 49 U22 named folders that do not exist).
	rj := expect.Rejudge{Out: filepath.Dir(pos[0]), AllowStackMismatch: *allowMismatch}
	if *exps != "" {
		if rj.Set, err = expect.LoadList(*exps); err != nil {
			fmt.Fprintf(stderr, "p2pheatmap: %v\n", err)
			return 2
		}
		rj.Gate = *exps
	} else if rep.Gate != nil && (rep.Summary == nil || rep.Summary.Gate == "") {
		rj.Gate = "as recorded in " + pos[0] // as p2preport says it; a summary names the baseline itself
	}
	if err := expect.JudgeReport(rep, rj); err != nil {
		fmt.Fprintf(stderr, "p2pheatmap: --expectations=%s: %v\n", *exps, err)
		return 2
	}
	files, err := heatmap.WriteAll(*out, rep)
	if err != nil {
		fmt.Fprintf(stderr, "p2pheatmap: %v\n", err)
		return 1
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "p2pheatmap: %s has no results; nothing written\n", pos[0])
		return 0
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	// The verdict the pictures show, last, as every tool tells it.
	fmt.Fprintln(stdout, rep.Summary.Line)
	return 0
}
