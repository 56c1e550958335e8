// Package cli parses the p2p* commands' flags one way: flags may stand
// before, between or after the positional arguments ("p2pheatmap
// results.json --out=DIR"), --help prints the usage, what the command
// does, every flag with its meaning and the exit statuses on stdout and
// exits 0, and a bad flag is one line on stderr naming it (with the two
// dashes the commands document) and the usage, exit 2.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Parse parses args with fs and returns the positional arguments in order.
// When the command must stop now, done is true and code is its exit status
// (0 after --help, 2 after a bad flag): Parse has already said why.
func Parse(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	return ParseHelp(fs, args, usage, "", stdout, stderr)
}

// ParseHelp is Parse with help, the text --help prints between the usage
// line and the flag list: what the command does and its exit statuses.
func ParseHelp(fs *flag.FlagSet, args []string, usage, help string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	fs.SetOutput(io.Discard)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				WriteHelp(stdout, fs, usage, help)
				return nil, 0, true
			}
			fmt.Fprintf(stderr, "%s: %s (%s)\n", fs.Name(), Dashes(err.Error()), usage)
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

// WriteHelp writes --help's text: the usage line, help, and every flag
// of fs as --name with its meaning (and default, where it has one).
func WriteHelp(w io.Writer, fs *flag.FlagSet, usage, help string) {
	fmt.Fprintln(w, usage)
	if help = strings.TrimSpace(help); help != "" {
		fmt.Fprintf(w, "\n%s\n", help)
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintf(w, "\nflags:\n")
			first = false
		}
		name, meaning := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += "=" + strings.ToUpper(name)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			meaning += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		if meaning == "" {
			fmt.Fprintf(w, "  %s\n", arg)
			return
		}
		fmt.Fprintf(w, "  %s\n      %s\n", arg, meaning)
	})
}

// Dashes rewrites the flag package's one-dash flag names ("flag provided
// but not defined: -no-such-flag") with the two dashes every command's
// usage and docs write.
func Dashes(msg string) string {
	for _, p := range []string{"not defined: -", "needs an argument: -", "for flag -", "value for -"} {
		if i := strings.Index(msg, p); i >= 0 && !strings.HasPrefix(msg[i+len(p):], "-") {
			msg = msg[:i+len(p)] + "-" + msg[i+len(p):]
		}
	}
	return msg
}

// ResultsPath is a run's results.json given either as the file or as the
// run's folder (the --out a suite wrote): a folder is taken to mean the
// results.json in it. A committed run may keep it gzipped
// (results.json.gz, which report.Read reads): where results.json is not
// there and results.json.gz is, that is the run's record.
func ResultsPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "results.json")
	}
	if filepath.Base(p) == "results.json" {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Lstat(p + ".gz"); err == nil {
				return p + ".gz"
			}
		}
	}
	return p
}

// Clip shortens s to about n bytes for a one-line display without cutting
// a word (a case id, a path) or a UTF-8 character in two: it ends at the
// last space, comma or semicolon before n and says "…" where it cut; a
// first word longer than n is kept whole.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexAny(s[:n], " ,;")
	if cut <= 0 {
		cut = strings.IndexAny(s, " ,;")
		if cut < 0 {
			return s
		}
	}
	return strings.TrimRight(s[:cut], " ,;") + " …"
}
