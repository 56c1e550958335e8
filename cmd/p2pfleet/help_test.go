package main

import (
	"testing"

	"p2patomics/cmd/internal/fixture"
)

// Issue 49 U13: --help gives every flag's meaning and the exit statuses
// (it was one usage line), a bad flag is named with two dashes.
func TestHelpSaysFlagsAndExitStatus(t *testing.T) {
	fixture.CheckHelp(t, run, "json", "html", "gate", "drain", "expectations")
}
