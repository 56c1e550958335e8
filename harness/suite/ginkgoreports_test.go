package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	"p2patomics/harness/report"
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

// Issue 49 "Ginkgo is heard": Ginkgo's own report of a spec (the suite's
// ReportAfterEach) reaches the result stream. A body that panicked before
// its case recorded a result is that case's fail, with the panic's text
// and location (at 6615a8b: "incomplete: did not run to the end", the
// panic only in ginkgo.log); a spec Ginkgo skipped (its timeout,
// fail-fast) is not run with Ginkgo's reason and the run is INTERRUPTED,
// never a regression; a case whose body recorded its result is left as
// it is. Planted: HeardSpec returning at once fails every row.
func TestHeardSpec(t *testing.T) {
	done, panicked, skipped, stuck := seq("host.suite.t.done", report.Pass), seq("host.suite.t.panics", report.Pass),
		seq("host.suite.t.skipped", report.Pass), seq("host.suite.t.stuck", report.Pass)
	r := handRun(1, done, panicked, skipped, stuck)
	r.Execute(done)
	spec := func(c *harness.Case, st types.SpecState, f types.Failure) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: c.ID, State: st, Failure: f}
	}
	r.HeardSpec(spec(done, types.SpecStateFailed, types.Failure{Message: "unexpected"}), "")
	r.HeardSpec(spec(panicked, types.SpecStatePanicked, types.Failure{Message: "Test Panicked", ForwardedPanic: "runtime error: index out of range [3] with length 2",
		Location: types.CodeLocation{FileName: "/src/specs/perf.go", LineNumber: 123}}), "")
	r.HeardSpec(spec(skipped, types.SpecStateSkipped, types.Failure{}), "--ginkgo.timeout=5s elapsed")
	r.HeardSpec(spec(stuck, types.SpecStateTimedout, types.Failure{Message: "A node timeout occurred"}), "")
	r.HeardSpec(types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "host.suite.t.unplanned", State: types.SpecStatePanicked}, "")
	res := resultsOf(r)
	if res[0].Outcome != report.Pass {
		t.Errorf("a case its body recorded: %s (%s)", res[0].Outcome, res[0].Detail)
	}
	if res[1].Outcome != report.Fail || !strings.Contains(res[1].Detail, "panic: runtime error: index out of range") || !strings.Contains(res[1].Detail, "/src/specs/perf.go:123") {
		t.Errorf("a panicking body: %s (%s), want fail with the panic and where", res[1].Outcome, res[1].Detail)
	}
	if res[2].Outcome != report.Incomplete || !strings.Contains(res[2].Detail, "not run: Ginkgo skipped its spec: --ginkgo.timeout=5s elapsed") {
		t.Errorf("a spec Ginkgo skipped: %s (%s)", res[2].Outcome, res[2].Detail)
	}
	if res[3].Outcome != report.Incomplete || !strings.Contains(res[3].Detail, "A node timeout occurred") {
		t.Errorf("a spec Ginkgo timed out: %s (%s)", res[3].Outcome, res[3].Detail)
	}
	rep := r.Plan.judge(res, report.Environment{}, nil, r.exec.ledger.interruptedBy(), nil)
	s := rep.Summary
	if s.Verdict != report.VerdictInterrupted || s.ExitStatus != ExitInterrupted || !strings.Contains(s.Line, "--ginkgo.timeout=5s elapsed") ||
		len(s.Unexpected) != 1 || s.Unexpected[0].ID != panicked.ID {
		t.Errorf("the run: %s exit %d, unexpected %+v: %s; want INTERRUPTED by Ginkgo's timeout, the panic its one unexpected case", s.Verdict, s.ExitStatus, s.Unexpected, s.Line)
	}
}

// Issue 49 U18: go tool ginkgo --junit-report=/abs/r.xml runs the binary
// in its folder with the path joined under it (<dir>/abs/r.xml) and then
// merges that file into /abs/r.xml: Check makes the joined folder inside
// the binary's folder (at 6615a8b it refused it, exit 2, a regression
// from ce5f99b), and names the user's path when its folder is missing; a
// path that is not a join is refused as before. Planted: CLIJoined
// returning false fails the first check.
func TestCLIJoinedReportPath(t *testing.T) {
	wd := t.TempDir()
	user := t.TempDir()
	t.Chdir(wd)
	joined := wd + filepath.Join(user, "gk-junit.xml")
	rc := types.ReporterConfig{JUnitReport: joined}
	if err := GinkgoReportsOf(&rc).Check(filepath.Join(wd, "out")); err != nil {
		t.Fatalf("the Ginkgo CLI's joined path: %v", err)
	}
	if st, err := os.Stat(filepath.Dir(joined)); err != nil || !st.IsDir() {
		t.Errorf("the joined folder was not made inside the working directory: %v", err)
	}
	missing := wd + filepath.Join(user, "nope", "gk.xml")
	rc = types.ReporterConfig{JSONReport: missing}
	err := GinkgoReportsOf(&rc).Check(filepath.Join(wd, "out"))
	if err == nil || !strings.Contains(err.Error(), "--ginkgo.json-report="+filepath.Join(user, "nope", "gk.xml")+" cannot be written") {
		t.Errorf("a joined path whose folder is missing: %v, want the user's path named", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Errorf("a folder was made for a path whose own folder is missing")
	}
	rc = types.ReporterConfig{JUnitReport: filepath.Join(user, "nope", "x.xml")}
	if err := GinkgoReportsOf(&rc).Check(filepath.Join(wd, "out")); err == nil {
		t.Errorf("a plain path whose folder is missing was accepted")
	}
}
