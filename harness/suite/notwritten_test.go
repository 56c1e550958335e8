package suite

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/report"
)

// Issue 38 item 7: a run whose Ginkgo reports could not be written exits 3
// (ExitWithGinkgoReports); its results.json said exit_status 0 and stdout
// ended on the PASS line. Now both say exit 3; an interrupted run stays 4.
func TestGinkgoReportsNotWrittenIsRecorded(t *testing.T) {
	for _, c := range []struct {
		code int
		want int
	}{{0, 3}, {1, 3}, {ExitInterrupted, 0}} {
		rep, err := report.Read("../report/testdata/host-results.json")
		if err != nil {
			t.Fatal(err)
		}
		before := rep.Summary.ExitStatus
		out := t.TempDir()
		if err := rep.Write(filepath.Join(out, "results.json")); err != nil {
			t.Fatal(err)
		}
		noteGinkgoReports(errors.New(`--ginkgo.json-report=x: open x: permission denied`), out, time.Unix(0, 0), rep, c.code)
		got, err := report.Read(filepath.Join(out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == 0 {
			want = before // untouched
		}
		if got.Summary.ExitStatus != want || (c.want == 3) != strings.HasPrefix(got.Summary.Line, "p2patomics: REPORTS NOT WRITTEN") {
			t.Errorf("exit %d: results.json exit_status %d, line %q; want %d", c.code, got.Summary.ExitStatus, got.Summary.Line, want)
		}
	}
}
