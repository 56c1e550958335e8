// Command p2pfleet merges the results.json of N nodes (one suite run per
// node, from a Kubernetes Indexed Job or a Slurm array) into one fleet
// report: every node's verdict and stack, the nodes grouped by stack
// (driver, GPU model), every metric's distribution across nodes with
// outlying nodes flagged, and the cases that fail on some nodes and pass
// on others.
//
//	p2pfleet [--json=FILE] [--html=FILE] [--gate] [--drain[=ENGINE]] [--expectations=PATH] NODE... (a results.json, or a folder holding one)
//
// A node is named by the folder its results.json is in (the scripts under
// scripts/fleet write <shared>/<node>/results.json, and the suite's exit
// status in <node>/exit_status). A node whose results.json is missing,
// unreadable or holds no case is "no result": it fails the fleet, and the
// other nodes are still merged. The text report
// goes to stdout; --json and --html write the same report as one JSON
// document and one self-contained HTML page ("-" is stdout, which then
// carries that document alone).
//
// Outliers are judged per metric from the nodes' own samples, not from a
// flat threshold: the fleet's centre is the median of the node medians;
// its scale is the larger of the robust spread across nodes (1.4826 × the
// median absolute deviation) and the typical spread within a node (the
// median over nodes of half the min–max range of its samples). A node is
// an outlier when its median sits more than 3 scales from the centre and
// its own samples' range does not reach the centre. This is the perf
// judge's fleet mode (expect.Outliers): the rule differs from the suite's
// gate only because a fleet has no perf.txt, just its nodes; which side
// is bad is the metric's declared direction (report.Metric.Direction),
// by the gate's own rule (expect.Worse).
//
// Only the perf gate's metrics gate (perf.Gated: perf cases of GPU
// backends, >= 3 samples), and the relative distance is the metric's perf
// family floor (perf.Classify) instead of a flat 10%. With
// --expectations naming a perf.txt, every node is also judged by its
// bands (expect.JudgeMetrics, as the suite's perf gate): a perf-regression fails
// the node.
//
// A node also fails when its suite exited non-zero, when it ran another
// backend than its pool (the host backend beside GPU nodes), fewer GPUs or
// ranks than its GPU model's majority, or fewer cases than its shape's
// majority. An outlier must also differ from the fleet median by 10% of
// it; a one-sample metric is never one; the host backend's metrics are
// shown and never gate (they are the CPU's noise).
//
// --drain prints, after the report, one `scontrol update nodename=N
// state=drain reason="p2patomics: ..."` line per failing node, for the
// scheduler's admin to run (the drain pattern of NHC and DCGM's cluster
// validation); --drain=ENGINE prints that engine's line instead (the rows
// of engines.go: slurm, kubernetes).
//
// Exit status: 0 (with --gate: every node has a result and passes, no
// case is met on some nodes and missed on others and no gating metric is
// an outlier on its bad side: low for one declared higher-is-better, high
// for one declared lower), 1 when --gate finds any of those,
// and also without --gate when a node has no result (the report is not
// the fleet's); 2 usage error (one line on stderr).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
	"p2patomics/internal/safefile"
)

const usage = "usage: p2pfleet [--json=FILE] [--html=FILE] [--gate] [--drain[=ENGINE]] [--expectations=PATH] NODE/results.json|NODE/ ..."

const help = `Merges the results.json of N nodes (each in a folder named by its node) into
one fleet report: every node's verdict (judged again from its outcomes) and
stack, metric outliers across nodes, cases that fail on some nodes only.
The report ends on the fleet's verdict and its reasons; --drain lines follow.

Exit status: 0 (with --gate: every node has a result and passes, no case
is met on some nodes and missed on others, no gating metric is an outlier
on its bad side); 1 when --gate finds any of those, and also without
--gate when a node has no result; 2 a usage error or an output file that
cannot be written safely (one line on stderr).`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pfleet", flag.ContinueOnError)
	jsonOut := fs.String("json", "", "write the fleet report as JSON to this `FILE` (- for stdout)")
	htmlOut := fs.String("html", "", "write the fleet report as one HTML page to this `FILE` (- for stdout)")
	gate := fs.Bool("gate", false, "exit 1 on any failing node, node without a result, inconsistent case or bad outlier")
	exps := fs.String("expectations", "", "an expectation folder or perf.txt whose perf bands judge every node (expect.JudgeMetrics, as the suite's perf gate)")
	var drain drainFlag
	fs.Var(&drain, "drain", "after the report, print a drain line per failing node for the `ENGINE` named ("+engineNames()+"; bare: a Slurm scontrol update nodename=... state=drain line)")
	pos, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
	if done {
		return code
	}
	if *jsonOut == "-" && *htmlOut == "-" {
		fmt.Fprintf(stderr, "p2pfleet: --json=- and --html=- both want stdout; give one a file\n")
		return 2
	}
	if drain.engine != nil && (*jsonOut == "-" || *htmlOut == "-") {
		fmt.Fprintf(stderr, "p2pfleet: --drain prints to stdout, where --json=- or --html=- writes its document; give that a file\n")
		return 2
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "p2pfleet: no node results given (%s)\n", usage)
		return 2
	}
	var nodes []Node
	seen := map[string]string{}
	for _, p := range pos {
		file, name, err := locate(p)
		if err != nil {
			fmt.Fprintf(stderr, "p2pfleet: %v\n", err)
			return 2
		}
		if prev, ok := seen[name]; ok {
			fmt.Fprintf(stderr, "p2pfleet: node name %q given twice (%s and %s); each node's results.json goes in a folder named by its node\n", name, prev, file)
			return 2
		}
		seen[name] = file
		n := Node{Name: name, File: file, ExitStatus: exitStatus(filepath.Dir(file))}
		// A node without a readable results.json is named and judged "no
		// result", not an abort: one node off the shared file system would
		// otherwise hide the other N-1.
		if rep, err := report.Read(file); err != nil {
			n.NoResult = noResultWhy(file, err)
		} else {
			n.Report = rep
		}
		nodes = append(nodes, n)
	}
	var bands *expect.Set
	if *exps != "" {
		set, err := expect.LoadList(*exps)
		if err != nil {
			fmt.Fprintf(stderr, "p2pfleet: --expectations: %v\n", err)
			return 2
		}
		if set.Perf == nil {
			fmt.Fprintf(stderr, "p2pfleet: --expectations=%s holds no perf.txt: the fleet is judged by its perf bands only\n", *exps)
			return 2
		}
		bands = set
	}
	f := MergeWith(nodes, bands)
	if *jsonOut != "-" && *htmlOut != "-" {
		// stdout carries the text report unless a document goes there.
		f.WriteText(stdout)
	}
	for _, w := range []struct {
		flag, path string
		write      func(io.Writer) error
	}{{"--json", *jsonOut, f.WriteJSON}, {"--html", *htmlOut, f.WriteHTML}} {
		if w.path == "" {
			continue
		}
		if err := writeTo(w.flag, w.path, stdout, w.write); err != nil {
			fmt.Fprintf(stderr, "p2pfleet: %v\n", err)
			return 2
		}
	}
	if drain.engine != nil {
		f.WriteDrain(stdout, stderr, *drain.engine)
	}
	if *gate && !f.Pass {
		return 1
	}
	for _, n := range f.Nodes {
		if n.Verdict == NoResult {
			return 1
		}
	}
	return 0
}

// noResultWhy says in a few words why a node's file gives no result.
func noResultWhy(file string, err error) string {
	st, serr := os.Stat(file)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return "no results.json (" + file + ")"
	case serr == nil && st.Size() == 0:
		return "results.json is empty (" + file + ")"
	}
	return trunc(err.Error(), 200)
}

// exitStatus reads the exit_status file the fleet wrappers write beside
// results.json; nil when there is none or it is not a number.
func exitStatus(dir string) *int {
	b, err := os.ReadFile(filepath.Join(dir, "exit_status"))
	if err != nil {
		return nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return &v
}

// locate turns an argument into a results.json path and a node name (the
// name of the folder holding it).
func locate(p string) (file, name string, err error) {
	file = p
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		file = filepath.Join(p, "results.json")
	} else if err != nil && filepath.Base(p) != "results.json" {
		// A node folder that is not there (its task never started, or
		// the shared file system was not mounted on it): named by it.
		file = filepath.Join(p, "results.json")
	}
	file = cli.ResultsPath(file) // a committed node's results.json.gz
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", "", err
	}
	name = filepath.Base(filepath.Dir(abs))
	if name == "" || name == "/" || name == "." {
		return "", "", fmt.Errorf("node results %s: the folder holding results.json names the node, and there is none", p)
	}
	return file, name, nil
}

// writeTo writes a document to stdout ("-") or to path, the latter by
// the suite's --out rule (internal/safefile: no folder on the way another
// user could redirect, never through a link, replaced atomically; issue 49
// B6 wrote the fleet's page through another user's symlink). flag names
// the path in an error.
func writeTo(flag, path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return fmt.Errorf("%s=%s: %w", flag, path, err)
	}
	return safefile.WriteFile(flag, path, b.Bytes(), 0o644)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// trunc is s on one line, clipped at a word (cli.Clip: never mid-id).
func trunc(s string, n int) string {
	return cli.Clip(strings.ReplaceAll(s, "\n", " "), n)
}
