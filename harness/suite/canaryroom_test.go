package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// Issue 49 S5: a disk that filled under the run made the SIGTERM canary's
// child refuse its --out (exit 2, no results.json), and the verdict read
// "host.suite.canary.sigterm pass → fail". The child is run again outside
// --out; with no room there either the canary is an error naming the disk.
func TestSigtermCanaryBlamesAFullDisk(t *testing.T) {
	const refused = "p2patomics: --out=x has 12 KiB free; the record of 1 cases needs at least 40 KiB\n"
	failNoRoom := func(string) (report.Outcome, string, string) {
		return report.Fail, "after SIGTERM (exit 2) no readable results.json", refused
	}
	plenty := func(string) (uint64, bool) { return 1 << 30, true }
	var dirs []string
	out, why := canaryWithRoom("/full/out/suite/sigterm", func(dir string) (report.Outcome, string, string) {
		dirs = append(dirs, dir)
		if len(dirs) == 1 {
			return failNoRoom(dir)
		}
		return report.Pass, "child suite got SIGTERM mid-case", ""
	}, plenty)
	if out != report.Pass || len(dirs) != 2 || strings.HasPrefix(dirs[1], "/full/") || !strings.Contains(why, "--out is full") {
		t.Errorf("full --out, room elsewhere: %s %q after runs in %v; want pass, run again outside --out, saying --out was full", out, why, dirs)
	}
	// No room anywhere: an error that names the disk, not a fail.
	out, why = canaryWithRoom("/full/out/suite/sigterm", failNoRoom, func(string) (uint64, bool) { return 12 << 10, true })
	if out != report.Error || !strings.Contains(why, "--out is full (12 KiB free)") {
		t.Errorf("no room anywhere: %s %q", out, why)
	}
	// A real failure with room is the canary's, unchanged and run once.
	n := 0
	out, why = canaryWithRoom("/out/suite/sigterm", func(string) (report.Outcome, string, string) {
		n++
		return report.Fail, "suite exited 1 after SIGTERM, want 4 (interrupted)", "some other error"
	}, plenty)
	if out != report.Fail || n != 1 || strings.Contains(why, "full") {
		t.Errorf("a real failure: %s %q after %d runs", out, why, n)
	}
}

// Issue 49 U15: every green out/ held suite/sigterm/{results.json,
// report.html,summary.txt} saying "INTERRUPTED — 0 of 1 case ran". The
// canary's child folder keeps its results.json (the evidence) and a note
// saying whose it is; its derived reports go.
func TestCanaryChildKeepsOnlyItsRecord(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"results.json", "junit.xml", "summary.txt", "report.html", "results.csv", "failures.csv", "ginkgo.log", OutMarker} {
		os.WriteFile(filepath.Join(dir, f), []byte("INTERRUPTED\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "heatmaps"), 0o755)
	os.WriteFile(filepath.Join(dir, "heatmaps", "index.html"), nil, 0o644)
	if err := keepCanaryRecord(dir); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if got := strings.Join(left, " "); got != OutMarker+" "+CanaryNote+" ginkgo.log results.json" {
		t.Errorf("left in the canary's folder: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, CanaryNote)); !strings.Contains(string(b), "not the run's verdict") {
		t.Errorf("%s: %q", CanaryNote, b)
	}
}
