package specs

import (
	"os"
	"strconv"
	"testing"

	"p2patomics/harness/suite"
)

// Issue 52 item 3: the own Go tests start in the background and the suite
// goes on (the plan, the probe) until checkOwnTests waits for them before
// --out; their result is the child's, unchanged. Count-based: the child
// here blocks until released, and startOwnTestsWith must have returned
// with it still running. Planted: a synchronous start (the old
// checkOwnTests) never returns while the child is blocked.
func TestOwnTestsStartBesideThePlan(t *testing.T) {
	t.Setenv(suite.OwnTestsPassedEnv, "")
	release := make(chan struct{})
	started := make(chan struct{})
	r := startOwnTestsWith(func() ([]byte, suite.OwnTestsOutcome, error) {
		close(started)
		<-release
		return []byte("--- FAIL: TestX\n"), suite.OwnTestsOutcome{Failed: []string{"TestX"}}, nil
	})
	<-started
	select {
	case <-r.done:
		t.Fatal("the own tests were done before the child was released")
	default:
	}
	close(release)
	<-r.done
	if r.skipped || len(r.judged.Failed) != 1 || r.judged.Failed[0] != "TestX" {
		t.Errorf("the child's result was not kept: %+v", r)
	}
}

// The SIGTERM canary's child (this binary, started by a suite whose own
// tests passed) skips them; the setting counts only from the parent whose
// pid it names, so a stray value runs them as ever.
func TestOwnTestsSkippedOnlyForTheParentThatPassedThem(t *testing.T) {
	ran := 0
	run := func() ([]byte, suite.OwnTestsOutcome, error) { ran++; return nil, suite.OwnTestsOutcome{}, nil }
	t.Setenv(suite.OwnTestsPassedEnv, strconv.Itoa(os.Getppid()))
	if r := startOwnTestsWith(run); !r.skipped {
		t.Error("the parent's pid did not skip them")
	}
	t.Setenv(suite.OwnTestsPassedEnv, strconv.Itoa(os.Getppid()+1))
	r := startOwnTestsWith(run)
	<-r.done
	if r.skipped || ran != 1 {
		t.Errorf("another pid skipped them (ran %d)", ran)
	}
}
