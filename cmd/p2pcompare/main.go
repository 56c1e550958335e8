// Command p2pcompare compares two p2patomics runs, typically before and
// after a driver upgrade, with piglit's rules in DESIGN.md's severity order.
//
//	p2pcompare [--metric-threshold=0.1] [--json] OLD/results.json NEW/results.json
//
// It prints regressions (outcome more severe than before), fixes (less
// severe), changes (same outcome, other expected outcome or GPU fault),
// enabled / disabled cases (only in the new / old run) and metric changes:
// a metric whose median dropped (rates: GB/s, Mops/s, …) or rose (times:
// us, ns, …) by more than the threshold is a metric regression. --json
// prints the same as one JSON object instead of the table.
//
// Exit status: 0 no regression, 1 any case or metric regression, 2 usage
// error or an unreadable results.json (one line on stderr).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"p2patomics/harness/report"
)

const usage = "usage: p2pcompare [--metric-threshold=0.1] [--json] OLD/results.json NEW/results.json"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pcompare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	thr := fs.Float64("metric-threshold", 0.1, "relative change of a metric's median that counts")
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, usage)
				return 0
			}
			fmt.Fprintf(stderr, "p2pcompare: %v (%s)\n", err, usage)
			return 2
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "p2pcompare: want two results.json files, got %d (%s)\n", len(pos), usage)
		return 2
	}
	if *thr < 0 || math.IsNaN(*thr) || math.IsInf(*thr, 0) {
		fmt.Fprintf(stderr, "p2pcompare: --metric-threshold must be a fraction ≥ 0 (0.1 = 10%%), got %v\n", *thr)
		return 2
	}
	oldRep, err := report.Read(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
		return 2
	}
	newRep, err := report.Read(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "p2pcompare: %v\n", err)
		return 2
	}
	c := Compare(oldRep, newRep, *thr)
	c.Old, c.New = pos[0], pos[1]
	if *asJSON {
		b, _ := json.MarshalIndent(c, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		c.WriteTable(stdout)
	}
	if c.Regressed {
		return 1
	}
	return 0
}
