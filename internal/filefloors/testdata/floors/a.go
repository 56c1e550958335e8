package floors

// A stands above b.go; the word B in this comment is no arrow.
type A struct{ b *B }

var _ = "B"
