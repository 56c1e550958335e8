package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// TestGinkgoReports: the report flags are taken from Ginkgo (it writes
// none), a path that cannot be written is one line naming the flag and
// the path before --out is touched (a missing folder is not created), a
// path in --out is left for the write, and a write that fails is exit 3
// naming it (an interrupted run stays 4). Planted: the old path, Ginkgo
// writing the reports itself, ended such a run exit 0 with nothing
// written (scripts/check-cli.sh shows it on the binary).
func TestGinkgoReports(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	rc := types.ReporterConfig{JUnitReport: filepath.Join(dir, "missing", "j.xml"), JSONReport: filepath.Join(out, "g.json")}
	g := GinkgoReportsOf(&rc)
	if rc.JUnitReport != "" || rc.JSONReport != "" || !g.Any() {
		t.Fatalf("the report paths were left to Ginkgo: %+v", rc)
	}
	err := g.Check(out)
	if err == nil || !strings.Contains(err.Error(), "--ginkgo.junit-report="+filepath.Join(dir, "missing", "j.xml")+" cannot be written") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a report in a missing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the check created the missing folder")
	}
	for _, bad := range []string{"/dev/full", "/proc/p2patomics-nope", dir} {
		if err := GinkgoReportsOf(&types.ReporterConfig{TeamcityReport: bad}).Check(out); err == nil {
			t.Errorf("--ginkgo.teamcity-report=%s was accepted", bad)
		}
	}
	ok := GinkgoReportsOf(&types.ReporterConfig{JSONReport: filepath.Join(out, "sub", "g.json"), JUnitReport: filepath.Join(dir, "j.xml")})
	if err := ok.Check(out); err != nil {
		t.Errorf("writable report paths: %v", err)
	}
	if err := ok.Write(types.Report{SuiteDescription: "x"}); err != nil {
		t.Errorf("writing them: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	werr := GinkgoReportsOf(&types.ReporterConfig{JSONReport: filepath.Join(dir, "file", "g.json")}).Write(types.Report{})
	if werr == nil || !strings.Contains(werr.Error(), "--ginkgo.json-report=") {
		t.Fatalf("a report under a file: %v", werr)
	}
	for _, c := range []struct {
		code int
		err  error
		want int
	}{{0, werr, ExitNoReport}, {1, werr, ExitNoReport}, {ExitInterrupted, werr, ExitInterrupted}, {1, nil, 1}, {0, nil, 0}} {
		if got := ExitWithGinkgoReports(c.code, c.err); got != c.want {
			t.Errorf("exit %d with %v: got %d, want %d", c.code, c.err, got, c.want)
		}
	}
}
