package report

import (
	"os/exec"
	"strings"
	"testing"
)

// machineFacts are the packages that collect a machine's facts: the
// results model is what they fill in, so they import report and report
// never imports them (docs/ARCHITECTURE.md: fingerprint → report).
var machineFacts = []string{"p2patomics/harness/fingerprint"}

// TestReportNeverImportsTheFingerprint: report's readers (Stack, Folder,
// the environment's typed parts) read a results.json on any machine;
// none may reach the collector of this machine's facts, directly or
// through another package. go list -e names the package also when the
// import closes a cycle (fingerprint imports report), which the compiler
// would report less plainly.
func TestReportNeverImportsTheFingerprint(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go list is how this test reads the import graph: %v", err)
	}
	out, err := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", "p2patomics/harness/report").Output()
	if err != nil {
		t.Fatalf("go list -deps harness/report: %v", err)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	if !deps["p2patomics/internal/device"] {
		t.Fatalf("go list -deps harness/report lacks internal/device, which report imports: %q", out)
	}
	for _, p := range machineFacts {
		if deps[p] {
			t.Errorf("harness/report imports %s (directly or below): the results model must not depend on the machine-fact collector; move the pure reader into report", p)
		}
	}
}
