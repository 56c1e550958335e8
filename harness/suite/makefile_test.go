package suite

import (
	"os"
	"strings"
	"testing"
)

// Issue 25 item 7: make test's own suite runs (several deliberately red)
// live in $(CHECKS), never in the user's out/ ($(OUT), which only `make
// run` writes), so a CI job collecting out/**/junit.xml takes only the
// user's run. Before: the checks wrote out/host, out/gate/planted, ... and
// out/host/suite/sigterm/junit.xml said errors="1".
func TestChecksLiveOutsideOut(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	target := ""
	checks := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "CHECKS ") || strings.HasPrefix(line, "CHECKS:") {
			checks = !strings.Contains(line, "$(OUT)") && !strings.Contains(line, "/out/") && !strings.HasSuffix(strings.TrimSpace(line), "/out")
		}
		if line != "" && line[0] != '\t' && line[0] != '#' && strings.Contains(line, ":") && !strings.Contains(line, "=") {
			target = strings.TrimSpace(strings.SplitN(line, ":", 2)[0])
		}
		if strings.HasPrefix(line, "\t") && strings.Contains(line, "$(OUT)") && target != "run" {
			t.Errorf("Makefile:%d: target %s writes under $(OUT), the user's out/: %s", i+1, target, strings.TrimSpace(line))
		}
	}
	if !checks {
		t.Error("Makefile: no CHECKS folder outside out/ for make test's runs")
	}
}
