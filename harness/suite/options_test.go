package suite

import (
	"flag"
	"strings"
	"testing"
)

func parseWith(t *testing.T, env map[string]string, args ...string) (*Options, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	fs.String("test.timeout", "", "")
	fs.String("test.count", "", "")
	if err := Parse(fs, args); err != nil {
		return &o, err
	}
	return &o, o.Validate()
}

// Issue 18 items 9 and 13: P2PAT_TRACE has --trace's one meaning (and
// takes on/off); testing's timeout and count are refused in one line; odd
// values are quoted, never echoed raw.
func TestOptionsIssue18(t *testing.T) {
	o, err := parseWith(t, map[string]string{"P2PAT_TRACE": "off"})
	if err != nil || o.Trace {
		t.Fatalf("P2PAT_TRACE=off: trace=%v err=%v", o.Trace, err)
	}
	o, err = parseWith(t, map[string]string{"P2PAT_TRACE": "on"})
	if err != nil || !o.Trace {
		t.Fatalf("P2PAT_TRACE=on: trace=%v err=%v", o.Trace, err)
	}
	for _, a := range []string{"-test.timeout=1ms", "--test.count=2"} {
		if _, err := parseWith(t, nil, a); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"--backend=a\nb\x1b[31m", "--case=x\ny", "--alloc=\x1b[2J"} {
		_, err := parseWith(t, nil, a)
		if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%q: %q, want one quoted line", a, err)
		}
	}
}
