package suite

import (
	"strings"
	"testing"

	"p2patomics/internal/filefloors"
)

// Issue 51: the package's files form one-way floors, as harness/'s do
// (TestFilesFormOneWayFloors there): a file uses only what files below it
// define. The graph is the type checker's (internal/filefloors). Planted:
// abrun.go's A/B runs back as executor methods (func (e *executor) abRuns,
// called by executor.go) or validateAB back in abrun.go (called by
// options.go's Validate) each close a circle, and this fails naming its
// arrows.
func TestFilesFormOneWayFloors(t *testing.T) {
	g, err := filefloors.Read(".", "p2patomics/harness/suite")
	if err != nil {
		t.Fatal(err)
	}
	if c := g.Circle(); len(c) > 0 {
		t.Errorf("files of package suite reach each other in a circle:\n\t%s", strings.Join(c, "\n\t"))
	}
	if len(g) < 10 {
		t.Fatalf("%d files with arrows: not the package's folder", len(g))
	}
}
