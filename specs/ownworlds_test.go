package specs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/wire"
)

// Issue 52: the own Go tests start no world (owntests_test.go's exit
// rule): the tests that run host cases end to end are specs/e2e's, and the
// own tests' child refuses every rank start (harness.RefuseRanks, in its
// own process: nothing a rank must read of its parent), so a
// world-starting test put back into specs/ fails the own tests, named.
// Here, in such a child (this test re-runs itself in one under go test
// -run), a host world's start must fail naming why. Planted: TestMain's
// own-tests branch without RefuseRanks starts the world
// (red: "a world started"); TestCopyTimesSlowsTheHostCopy moved back into
// specs/ fails the own tests naming it.
func TestOwnTestsStartNoWorld(t *testing.T) {
	if os.Getenv(ownTestsEnv) != "1" {
		// Not the own tests' child (go test -run=TestOwnTestsStartNoWorld
		// ./specs): this test in one, whose ranks the guard must refuse.
		cmd := exec.Command("/proc/self/exe", "-test.run=^TestOwnTestsStartNoWorld$", "-test.v=true", "-test.timeout=1m")
		cmd.Env = append(os.Environ(), ownTestsEnv+"=1")
		cmd.SysProcAttr = childAttr()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestOwnTestsStartNoWorld") {
			t.Fatalf("in the own tests' child: %v\n%s", err, out)
		}
		return
	}
	w, err := harness.NewWorld(backends.HostName, 2, wire.DefaultSettings, time.Now().Add(30*time.Second))
	if err == nil {
		w.Close()
		t.Fatal("a world started in the own tests' child: its rank starts must be refused")
	}
	harness.CloseStart(err)
	if !strings.Contains(err.Error(), worldInOwnTests) {
		t.Errorf("the world's start failed for another reason: %v", err)
	}
}
