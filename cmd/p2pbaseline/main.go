// Command p2pbaseline records a finished run (results.json) as the baseline
// in an expectation folder, as --update-expectations does during a run. It
// is how a device run made elsewhere becomes the baseline the next driver
// must meet.
//
//	p2pbaseline [--reason 'REGEXP=text']... DIR results.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

type reasons []string

func (r *reasons) String() string     { return strings.Join(*r, ",") }
func (r *reasons) Set(v string) error { *r = append(*r, v); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pbaseline", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var rs reasons
	fs.Var(&rs, "reason", "REGEXP=text: the reason comment for failing cases whose id matches")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: p2pbaseline [--reason 'REGEXP=text']... DIR results.json")
		return 2
	}
	rep, err := report.Read(fs.Arg(1))
	if err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
		return 2
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
			if _, set := why[res.ID]; !set && re.MatchString(res.ID) {
				why[res.ID] = text
			}
		}
	}
	// report.Read has validated rep (ids [a-z0-9._-], known outcomes), and
	// WriteBaseline refuses an invalid report itself.
	if err := expect.WriteBaseline(fs.Arg(0), rep, why); err != nil {
		fmt.Fprintf(stderr, "p2pbaseline: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "baseline of %d cases written to %s\n", len(rep.Results), fs.Arg(0))
	return 0
}
