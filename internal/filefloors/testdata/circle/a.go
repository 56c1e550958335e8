package circle

// A reaches b.go's B, which reaches back up to A: a circle of two files.
type A struct{ b *B }
