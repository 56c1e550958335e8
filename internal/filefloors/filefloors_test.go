package filefloors

import (
	"slices"
	"testing"
)

// A circle of two files is named arrow by arrow with the names that carry
// it; files that use only what is below them (a word in a comment or a
// string being no use) have none.
func TestCircle(t *testing.T) {
	g, err := Read("testdata/circle", "p2patomics/internal/filefloors/testdata/circle")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.go -> b.go (B)", "b.go -> a.go (A)"}
	if got := g.Circle(); !slices.Equal(got, want) {
		t.Errorf("circle %q, want %q", got, want)
	}
	g, err = Read("testdata/floors", "p2patomics/internal/filefloors/testdata/floors")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Circle(); len(got) != 0 {
		t.Errorf("one-way floors read as the circle %q", got)
	}
	if got := g["a.go"]["b.go"]; !slices.Equal(got, []string{"B"}) {
		t.Errorf("a.go -> b.go carried by %q, want [B]", got)
	}
}
