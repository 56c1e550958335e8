package fingerprint_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// TestTypedBuildKeepsTheBytes: the environment built typed writes the
// bytes the map path wrote for the same machine and ranks. The files
// under testdata/typed were written by the map path (collect into a
// map[string]any, Merge, report.EnvironmentOf) at 77cf458, before it was
// removed: <case>.env.json is results.json's environment,
// <case>.evidence.json a case folder's environment.json (MarshalIndent
// of the map Environment.Object() gave), <case>.case.json the per-case
// environment (Merge into an empty map), <case>.stack.json the stacks
// and folder read from them.
func TestTypedBuildKeepsTheBytes(t *testing.T) {
	for _, c := range typedCases(t) {
		e := fingerprint.WithRun(fingerprint.CollectAt(c.root, c.getenv), c.run, c.infos, "node1")
		pin(&e)
		var facts []device.Info
		for _, l := range c.infos {
			facts = append(facts, l...)
		}
		ce := fingerprint.WithDevices(report.Environment{}, facts)
		stacks, err := json.Marshal(map[string]any{"stack": e.Stack(), "folder": report.Folder(e.Stack()), "case_stack": ce.Stack()})
		if err != nil {
			t.Fatal(err)
		}
		sameBytes(t, c.name+".env.json", func() ([]byte, error) { return json.Marshal(e) })
		sameBytes(t, c.name+".evidence.json", func() ([]byte, error) { return json.MarshalIndent(e, "", "  ") })
		sameBytes(t, c.name+".case.json", func() ([]byte, error) { return json.Marshal(ce) })
		sameBytes(t, c.name+".stack.json", func() ([]byte, error) { return stacks, nil })
	}
}

func sameBytes(t *testing.T, name string, got func() ([]byte, error)) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "typed", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := got()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(b, want) {
		i := 0
		for i < len(b) && i < len(want) && b[i] == want[i] {
			i++
		}
		t.Errorf("%s: the typed build writes other bytes than the map path from byte %d:\n typed: …%s…\n   map: …%s…", name, i, around(b, i), around(want, i))
	}
}

// around is b's 60 bytes from 20 before i.
func around(b []byte, i int) []byte {
	lo, hi := max(i-20, 0), min(i+40, len(b))
	if lo > hi {
		lo = hi
	}
	return b[lo:hi]
}
