package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// GinkgoReports are the machine-readable reports Ginkgo's flags ask for
// (--ginkgo.json-report, gojson-report, junit-report, teamcity-report).
// The suite writes them itself: Ginkgo writes them in a ReportAfterSuite
// node whose failure is only a failed spec, which the suite's verdict
// does not read, so a report that could not be written ended a run exit 0
// with nothing written; and Ginkgo creates a missing parent folder (as root
// too) wherever the path points.
type GinkgoReports struct {
	flags []string // the flag names, in the order below
	paths []string
}

// GinkgoReportsOf takes the report paths out of rc: Ginkgo then writes
// none of them, and Write writes each.
func GinkgoReportsOf(rc *types.ReporterConfig) *GinkgoReports {
	g := &GinkgoReports{}
	for _, r := range []struct {
		flag string
		path *string
	}{
		{"json-report", &rc.JSONReport},
		{"gojson-report", &rc.GoJSONReport},
		{"junit-report", &rc.JUnitReport},
		{"teamcity-report", &rc.TeamcityReport},
	} {
		if *r.path != "" {
			g.flags = append(g.flags, r.flag)
			g.paths = append(g.paths, *r.path)
			*r.path = ""
		}
	}
	return g
}

// Any reports whether a report was asked for.
func (g *GinkgoReports) Any() bool { return len(g.paths) > 0 }

// Check refuses, before --out is touched, a report that cannot be
// written: its folder missing (Ginkgo would have created it), a folder or
// a device that refuses a write (/dev/full), a path in a read-only or
// pseudo file system (/proc). A path in --out (the suite makes that folder
// afresh) is checked when it is written.
func (g *GinkgoReports) Check(out string) error {
	outAbs, _ := filepath.Abs(out)
	for i, p := range g.paths {
		abs, err := filepath.Abs(p)
		if err == nil && within(abs, outAbs) && abs != outAbs {
			continue
		}
		if user, joined := CLIJoined(p); joined {
			// The Ginkgo CLI asked for the user's absolute path joined
			// under the suite's folder: it reads the report there and
			// merges it into the user's path (deleting its copy), so its
			// folder is made there, inside the suite's folder only, where
			// the user's own folder exists (CLIJoined). A path whose
			// folder is missing otherwise is refused below, naming it.
			if st, err := os.Stat(filepath.Dir(user)); err != nil || !st.IsDir() {
				return usagef("--ginkgo.%s=%s cannot be written: its folder %s is not a folder here", g.flags[i], quote(user), quote(filepath.Dir(user)))
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return usagef("--ginkgo.%s=%s: the Ginkgo CLI's copy %s cannot be made: %s", g.flags[i], quote(user), quote(p), oneLine(err.Error()))
			}
		}
		if err := tryWrite(p); err != nil {
			return usagef("--ginkgo.%s=%s cannot be written: %s", g.flags[i], quote(p), oneLine(err.Error()))
		}
	}
	return nil
}

// CLIJoined detects the Ginkgo CLI's join of an absolute report path
// under the suite's folder (go tool ginkgo --junit-report=/abs/r.xml runs
// the binary in specs/ with --ginkgo.junit-report=<specs>/abs/r.xml, then
// merges that file into /abs/r.xml): p is the working directory followed
// by an absolute path (user), and p's folder does not exist.
func CLIJoined(p string) (user string, joined bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	if _, err := os.Stat(filepath.Dir(p)); err == nil {
		return "", false // nothing to make
	}
	wd, err := os.Stat(".")
	if err != nil {
		return "", false
	}
	for i := 1; i < len(p); i++ {
		if p[i] != filepath.Separator {
			continue
		}
		st, err := os.Stat(p[:i])
		if err != nil || !os.SameFile(st, wd) {
			continue
		}
		return p[i:], true
	}
	return "", false
}

// within: path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Write writes every report from Ginkgo's report of the run (a
// ReportAfterSuite node's); the error names each report not written.
func (g *GinkgoReports) Write(rep types.Report) error {
	var errs []error
	for i, p := range g.paths {
		var err error
		switch g.flags[i] {
		case "json-report":
			err = reporters.GenerateJSONReport(rep, p)
		case "gojson-report":
			err = reporters.GenerateGoTestJSONReport(rep, p)
		case "junit-report":
			err = reporters.GenerateJUnitReport(rep, p)
		case "teamcity-report":
			err = reporters.GenerateTeamcityReport(rep, p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--ginkgo.%s=%s: %w", g.flags[i], quote(p), err))
		}
	}
	return errors.Join(errs...)
}

// ExitWithGinkgoReports is the run's exit status once the Ginkgo reports
// were written or not (err, from Write): a report not written is exit 3
// like the suite's own reports (docs/GATING.md), one line on stderr
// naming it, whatever the verdict; an interrupted run stays 4.
func ExitWithGinkgoReports(code int, err error) int {
	if err == nil || code == ExitInterrupted {
		return code
	}
	fmt.Fprintf(os.Stderr, "p2patomics: reports not written: %s\n", oneLine(err.Error()))
	return ExitNoReport
}

// ginkgoEvidence is the folder of a case Ginkgo failed before its result:
// ginkgo.txt (the failure, where, the stack and the spec's captured
// output), repro.sh and result.json.
func ginkgoEvidence(rep types.SpecReport, res report.Result, repro string) []stream.File {
	var b strings.Builder
	f := rep.Failure
	fmt.Fprintf(&b, "# Ginkgo's report of spec %s: %s\n", rep.LeafNodeText, rep.State)
	fmt.Fprintf(&b, "message: %s\n", f.Message)
	if f.ForwardedPanic != "" {
		fmt.Fprintf(&b, "panic: %s\n", f.ForwardedPanic)
	}
	fmt.Fprintf(&b, "location: %s:%d\n", f.Location.FileName, f.Location.LineNumber)
	if f.Location.FullStackTrace != "" {
		fmt.Fprintf(&b, "\nstack:\n%s\n", f.Location.FullStackTrace)
	}
	if out := rep.CapturedGinkgoWriterOutput + rep.CapturedStdOutErr; out != "" {
		fmt.Fprintf(&b, "\ncaptured output:\n%s\n", out)
	}
	js, _ := json.MarshalIndent(res, "", "  ")
	return []stream.File{{Name: "ginkgo.txt", Data: []byte(b.String()), Mode: 0o644},
		{Name: "repro.sh", Data: []byte(repro), Mode: 0o755},
		{Name: "result.json", Data: js, Mode: 0o644}}
}

// GinkgoFailure is a spec's failure as Ginkgo reported it, on one line:
// the panic's value or the failure message, then where.
func GinkgoFailure(rep types.SpecReport) string {
	f := rep.Failure
	msg := f.Message
	if f.ForwardedPanic != "" {
		msg = "panic: " + f.ForwardedPanic
	}
	if msg == "" {
		msg = rep.State.String()
	}
	s := fmt.Sprintf("%s (Ginkgo: spec %s", oneLine(msg), rep.State)
	if f.Location.FileName != "" {
		s += fmt.Sprintf(" at %s:%d", f.Location.FileName, f.Location.LineNumber)
	}
	return s + ")"
}
