// Command p2preport renders a results.json as one self-contained
// report.html (verdict line, machine and stack, verdict matrix, unexpected
// cases with links to their cases/<id>/ folders, pair verdicts, heatmaps,
// pair table; inline SVG, nothing fetched from the network).
//
//	p2preport [--out DIR] results.json
//
// The page goes to DIR/report.html; DIR defaults to the folder holding
// results.json, where the cases/<id>/ links resolve. It prints the page's
// path and, on the next line, the run's verdict line.
//
// Exit status: 0 when the page was written, 1 when it could not be, 2 on
// a usage error or an unreadable results.json (one line on stderr).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"p2patomics/harness/htmlreport"
	"p2patomics/harness/report"
)

const usage = "usage: p2preport [--out DIR] results.json"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2preport", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "folder for report.html (default: the folder of results.json)")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, usage)
				return 0
			}
			fmt.Fprintf(stderr, "p2preport: %v (%s)\n", err, usage)
			return 2
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "p2preport: want one results.json, got %d (%s)\n", len(pos), usage)
		return 2
	}
	rep, err := report.Read(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 2
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(pos[0])
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 1
	}
	if err := htmlreport.WriteHTML(dir, rep); err != nil {
		fmt.Fprintf(stderr, "p2preport: %v\n", err)
		return 1
	}
	_, line := htmlreport.Verdict(rep)
	fmt.Fprintln(stdout, filepath.Join(dir, htmlreport.File))
	fmt.Fprintln(stdout, line)
	return 0
}
