package specs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/kernels"
)

// TestCatalogueIdentityIsTodays: every host case the catalogue builds
// (with the default flags) carries its id's parts typed, its result's
// derived id (Case.Identity().ID()) is its id, and the ids are today's:
// the host suite's results.json at 5f11245 (harness/report's golden)
// less the two cases the suite adds itself, plus one litmus case for each
// shape the manifest declares (kernels.LitmusShapes), so a new litmus
// shape adds its id here without a golden to edit. Every id of the
// golden must still be built: a shape dropped or renamed is reported.
func TestCatalogueIdentityIsTodays(t *testing.T) {
	var got []string
	for _, c := range hostCases(t) {
		id := c.Identity()
		if c.Spec == "" || id.ID() != c.ID || id.Backend != backends.HostName || id.Kind != "memfd" || id.Ranks != c.Ranks {
			t.Errorf("%s: identity %+v derives %q", c.ID, id, id.ID())
		}
		got = append(got, c.ID)
	}
	b, err := os.ReadFile(filepath.Join(specsDir(t), "..", "harness", "report", "testdata", "host-results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range old.Results {
		if r.ID != "host.suite.canary.sigterm" && r.ID != "host.suite.leaks.fds_children" {
			want = append(want, r.ID)
		}
	}
	want = withLitmusShapes(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("host ids changed:\n got %v\nwant %v", got, want)
	}
}

// withLitmusShapes is ids plus the host litmus case of every shape the
// manifest declares that ids lacks: the id is spelt here from the row
// (host.memfd.litmus.<strong kernel>), not read from the catalogue, so a
// shape the catalogue forgot is still reported.
func withLitmusShapes(ids []string) []string {
	for _, sh := range kernels.LitmusShapes() {
		id := "host.memfd.litmus." + kernels.Name(sh.Op, kernels.U32, sh.Strong, kernels.Sys)
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
