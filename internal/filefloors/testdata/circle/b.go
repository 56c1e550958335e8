package circle

// B is below a.go, but its method names A: the arrow back up.
type B struct{}

func (B) up() *A { return nil }
