// Package cli parses the p2p* commands' flags one way: flags may stand
// before, between or after the positional arguments ("p2pheatmap
// results.json --out=DIR"), --help prints the usage on stdout and exits 0,
// and a bad flag is one line on stderr naming it and the usage, exit 2.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs and returns the positional arguments in order.
// When the command must stop now, done is true and code is its exit status
// (0 after --help, 2 after a bad flag): Parse has already said why.
func Parse(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	fs.SetOutput(io.Discard)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, usage)
				return nil, 0, true
			}
			fmt.Fprintf(stderr, "%s: %v (%s)\n", fs.Name(), err, usage)
			return nil, 2, true
		}
		// flag stops at the first positional argument; take it and go on
		// parsing what follows it.
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, false
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
