package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func parse(args ...string) (pos []string, out *string, code int, done bool, stdout, stderr string) {
	fs := flag.NewFlagSet("p2ptool", flag.ContinueOnError)
	out = fs.String("out", "", "")
	var o, e bytes.Buffer
	pos, code, done = Parse(fs, args, "usage: p2ptool --out=DIR FILE", &o, &e)
	return pos, out, code, done, o.String(), e.String()
}

// TestParse: flags anywhere among the positional arguments, a "--"
// ending the flags, --help on stdout with 0, a bad flag in one line with 2.
func TestParse(t *testing.T) {
	pos, out, code, done, _, _ := parse("a.json", "--out=x", "b.json")
	if done || code != 0 || *out != "x" || strings.Join(pos, " ") != "a.json b.json" {
		t.Errorf("interspersed: pos %q out %q code %d done %v", pos, *out, code, done)
	}
	pos, out, _, done, _, _ = parse("--out", "y", "a.json")
	if done || *out != "y" || strings.Join(pos, " ") != "a.json" {
		t.Errorf("flags first: pos %q out %q done %v", pos, *out, done)
	}
	pos, _, _, done, _, _ = parse("--", "--out=z")
	if done || strings.Join(pos, " ") != "--out=z" {
		t.Errorf(`after "--": pos %q done %v`, pos, done)
	}
	_, _, code, done, stdout, stderr := parse("--help")
	if !done || code != 0 || stdout != "usage: p2ptool --out=DIR FILE\n" || stderr != "" {
		t.Errorf("--help: code %d done %v stdout %q stderr %q", code, done, stdout, stderr)
	}
	_, _, code, done, stdout, stderr = parse("a.json", "--nope")
	if !done || code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(stderr, "p2ptool: ") || !strings.Contains(stderr, "-nope") || !strings.Contains(stderr, "usage:") {
		t.Errorf("bad flag: code %d done %v stdout %q stderr %q", code, done, stdout, stderr)
	}
}
