package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
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
		if err := tryWrite(p); err != nil {
			return usagef("--ginkgo.%s=%s cannot be written: %s", g.flags[i], quote(p), oneLine(err.Error()))
		}
	}
	return nil
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
