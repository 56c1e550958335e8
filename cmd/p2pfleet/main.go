// Command p2pfleet merges the results.json of N nodes (one suite run per
// node, from a Kubernetes Indexed Job or a Slurm array) into one fleet
// report: every node's verdict and stack, the nodes grouped by stack
// (driver, GPU model), every metric's distribution across nodes with
// outlying nodes flagged, and the cases that fail on some nodes and pass
// on others.
//
//	p2pfleet [--json=FILE] [--html=FILE] [--gate] NODE... (a results.json, or a folder holding one)
//
// A node is named by the folder its results.json is in (the scripts under
// scripts/fleet write <shared>/<hostname>/results.json). The text report
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
// its own samples' range does not reach the centre.
//
// Exit status: 0 (with --gate: every node's run verdict is pass, no
// case is inconsistent across nodes and no rate is a low outlier nor a time
// a high one), 1 when --gate finds any of those, 2 usage error or an
// unreadable results.json (one line on stderr).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"p2patomics/harness/report"
	"p2patomics/internal/cli"
)

const usage = "usage: p2pfleet [--json=FILE] [--html=FILE] [--gate] NODE/results.json|NODE/ ..."

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pfleet", flag.ContinueOnError)
	jsonOut := fs.String("json", "", "write the fleet report as JSON to this file (- for stdout)")
	htmlOut := fs.String("html", "", "write the fleet report as one HTML page to this file (- for stdout)")
	gate := fs.Bool("gate", false, "exit 1 on any unmet case, inconsistent case or bad outlier")
	pos, code, done := cli.Parse(fs, args, usage, stdout, stderr)
	if done {
		return code
	}
	if *jsonOut == "-" && *htmlOut == "-" {
		fmt.Fprintf(stderr, "p2pfleet: --json=- and --html=- both want stdout; give one a file\n")
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
			fmt.Fprintf(stderr, "p2pfleet: node name %q given twice (%s and %s); each node's results.json goes in a folder named by its host\n", name, prev, file)
			return 2
		}
		seen[name] = file
		rep, err := report.Read(file)
		if err != nil {
			fmt.Fprintf(stderr, "p2pfleet: %v\n", err)
			return 2
		}
		nodes = append(nodes, Node{Name: name, File: file, Report: rep})
	}
	f := Merge(nodes)
	if *jsonOut != "-" && *htmlOut != "-" {
		// stdout carries the text report unless a document goes there.
		f.WriteText(stdout)
	}
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{{*jsonOut, f.WriteJSON}, {*htmlOut, f.WriteHTML}} {
		if w.path == "" {
			continue
		}
		if err := writeTo(w.path, stdout, w.write); err != nil {
			fmt.Fprintf(stderr, "p2pfleet: %v\n", err)
			return 2
		}
	}
	if *gate && !f.Pass {
		return 1
	}
	return 0
}

// locate turns an argument into a results.json path and a node name (the
// name of the folder holding it).
func locate(p string) (file, name string, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", "", fmt.Errorf("node results %s: %w", p, err)
	}
	file = p
	if st.IsDir() {
		file = filepath.Join(p, "results.json")
	}
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

func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func trunc(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
