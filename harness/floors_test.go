package harness

import (
	"strings"
	"testing"

	"p2patomics/internal/filefloors"
)

// Issue 51 item 1: the package's files form one-way floors — a file uses
// only what files below it define, so no two files reach each other
// through any chain (the hub the review found: 16 files reaching back up
// into run.go's Runner and Case and ctx.go's Ctx). The graph is the type
// checker's (internal/filefloors, which harness/suite's test shares):
// file A -> file B when A names a package-level name, a field or a method
// B declares. Planted: a `var _ *Case` in errors.go (the
// classification reaching the case again) closes errors.go -> case.go ->
// ctx.go -> errors.go, and this fails naming those arrows.
func TestFilesFormOneWayFloors(t *testing.T) {
	g, err := filefloors.Read(".", "p2patomics/harness")
	if err != nil {
		t.Fatal(err)
	}
	if c := g.Circle(); len(c) > 0 {
		t.Errorf("files of package harness reach each other in a circle:\n\t%s", strings.Join(c, "\n\t"))
	}
	if len(g) < 10 {
		t.Fatalf("%d files with arrows: not the package's folder", len(g))
	}
}
