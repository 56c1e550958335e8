package floors

// B is the ground floor.
type B struct{ n int }
