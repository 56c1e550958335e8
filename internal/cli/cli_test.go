package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
	if !done || code != 0 || !strings.HasPrefix(stdout, "usage: p2ptool --out=DIR FILE\n") || !strings.Contains(stdout, "--out=STRING") || stderr != "" {
		t.Errorf("--help: code %d done %v stdout %q stderr %q", code, done, stdout, stderr)
	}
	_, _, code, done, stdout, stderr = parse("a.json", "--nope")
	if !done || code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(stderr, "p2ptool: ") || !strings.Contains(stderr, "-nope") || !strings.Contains(stderr, "usage:") {
		t.Errorf("bad flag: code %d done %v stdout %q stderr %q", code, done, stdout, stderr)
	}
}

// Issue 49 U13: --help gives every flag with its meaning (two dashes) and
// the help text (the exit statuses), a bad flag's line names it with two
// dashes; Clip never cuts an id mid-word; a run folder means its
// results.json.
func TestHelpAndWords(t *testing.T) {
	fs := flag.NewFlagSet("p2ptool", flag.ContinueOnError)
	fs.String("out", "", "the `folder` the reports go to")
	fs.Bool("gate", false, "exit 1 on any failing node")
	var o, e bytes.Buffer
	_, code, done := ParseHelp(fs, []string{"--help"}, "usage: p2ptool FILE", "Exit status: 0 PASS, 1 FAIL, 2 usage.", &o, &e)
	h := o.String()
	if code != 0 || !done || !strings.HasPrefix(h, "usage: p2ptool FILE\n") || !strings.Contains(h, "Exit status: 0 PASS") ||
		!strings.Contains(h, "  --out=FOLDER\n      the folder the reports go to") || !strings.Contains(h, "  --gate\n      exit 1 on any failing node") {
		t.Errorf("--help: code %d, stdout:\n%s", code, h)
	}
	_, _, _, _, _, stderr := parse("--no-such-flag")
	if !strings.Contains(stderr, "not defined: --no-such-flag") {
		t.Errorf("bad flag: %q", stderr)
	}
	ids := "host.memfd.waitflag.bounded_sys, host.memfd.waitflag.bounded_dev, host.memfd.counter.add_u64_relaxed_sys"
	if got := Clip(ids, 40); got != "host.memfd.waitflag.bounded_sys …" {
		t.Errorf("Clip: %q", got)
	}
	if got := Clip("é"+strings.Repeat("x", 50), 10); got != "é"+strings.Repeat("x", 50) {
		t.Errorf("Clip of one long word: %q", got)
	}
	dir := t.TempDir()
	if got := ResultsPath(dir); got != filepath.Join(dir, "results.json") {
		t.Errorf("ResultsPath(folder) = %s", got)
	}
}

// A committed run keeps a large results.json gzipped: its folder, or its
// results.json named though only results.json.gz is there, means the .gz;
// a plain results.json, when there, wins.
func TestResultsPathFindsTheGzippedRecord(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "results.json.gz")
	if err := os.WriteFile(gz, []byte{0x1f, 0x8b}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{dir, filepath.Join(dir, "results.json")} {
		if got := ResultsPath(arg); got != gz {
			t.Errorf("ResultsPath(%s) = %s, want %s", arg, got, gz)
		}
	}
	plain := filepath.Join(dir, "results.json")
	if err := os.WriteFile(plain, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ResultsPath(dir); got != plain {
		t.Errorf("ResultsPath(folder with both) = %s, want %s", got, plain)
	}
}
