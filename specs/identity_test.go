package specs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"p2patomics/harness/backends"
)

// TestCatalogueIdentityIsTodays: every host case the catalogue builds
// (with the default flags) carries its id's parts typed, its result's
// derived id (Case.Identity().ID()) is its id, and the ids are today's:
// the host suite's results.json at 5f11245 (harness/report's golden)
// less the two cases the suite adds itself.
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
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("host ids changed:\n got %v\nwant %v", got, want)
	}
}
