package e2e

import (
	"flag"
	"os"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/suite"
	"p2patomics/rank"
	"p2patomics/specs"
)

// TestMain makes this test binary a rank when the harness starts it as
// one: every test here starts real host worlds, whose ranks are this
// binary (/proc/self/exe) with the rank's environment.
func TestMain(m *testing.M) {
	if rank.IsRank() {
		os.Exit(rank.Main())
	}
	os.Exit(m.Run())
}

// hostCase is the host backend's case id of a two-rank world.
func hostCase(t *testing.T, id string) *harness.Case {
	t.Helper()
	return hostCaseOf(t, id, 2)
}

// hostCaseOf is the host backend's case id in a world of ranks ranks.
func hostCaseOf(t *testing.T, id string, ranks int) *harness.Case {
	t.Helper()
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = ranks
	for _, c := range specs.Catalogue(&o, backends.HostName, string(backends.Memfd)) {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no case %s in the host catalogue of %d ranks", id, ranks)
	return nil
}
