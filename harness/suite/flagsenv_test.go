package suite

import "testing"

// A setting read from a P2PAT_* variable is recorded in the environment:
// a fleet node whose scheduler passed the submitter's P2PAT_ATOMICS ran
// another selection, and its results.json said only {backend, ranks...}
// before (flags shows the command line's values, not where they came from).
func TestEnvironmentRecordsFlagsFromEnv(t *testing.T) {
	t.Setenv("P2PAT_ATOMICS", "true")
	t.Setenv("P2PAT_SEED", "7")
	env := environment(&Options{}, nil)
	fe := env.FlagsEnv
	if fe["P2PAT_ATOMICS"] != "true" || fe["P2PAT_SEED"] != "7" {
		t.Errorf("flags_env %v: want P2PAT_ATOMICS=true and P2PAT_SEED=7", fe)
	}
}
