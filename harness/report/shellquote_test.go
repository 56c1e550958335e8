package report

import "testing"

// A printed repro must run as printed from a checkout whose path holds a
// space (issue 38: every command works wherever a user put the clone).
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/work/main/bin/specs.test":   "/work/main/bin/specs.test",
		"/tmp/p2p atomics/repro.sh":   "'/tmp/p2p atomics/repro.sh'",
		"/tmp/it's here/repro.sh":     `'/tmp/it'\''s here/repro.sh'`,
		"--expectations=a,b:c/d_e.f+": "--expectations=a,b:c/d_e.f+",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
