package harness

// Seams for the black-box tests in package harness_test.

// DeathsFound is how many rank deaths r's two death checks have found:
// the judgement's (Run's judgeCase, diedDuring's one site) and the
// backstop's (Run's collect, after the leak check).
func DeathsFound(r *Runner) (judged, backstop int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deaths[deathFound], r.deaths[deathBackstop]
}

// SetLateDeath makes f run in every later case between its leak check and
// its evidence (nil: none), where a rank f kills is the backstop's alone to
// find.
func SetLateDeath(r *Runner, f func(*World)) { r.lateDeath = f }
