package suite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness/outputs"
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
		sinksOn(out).noteGinkgoReports(errors.New(`--ginkgo.json-report=x: open x: permission denied`), time.Unix(0, 0), rep, c.code, nil)
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

// sinksOn is the sinks of a run whose --out is out, as Finish has them
// (no checkpoints: the records here were written by the test).
func sinksOn(out string) *sinks {
	return &sinks{config: func() sinkConfig { return sinkConfig{out: out, stdout: io.Discard} }}
}

// diskOf fakes a file system of max bytes under dir for writeAtomic: a
// write that would take the files under dir past max fails with ENOSPC,
// as a full tmpfs does.
func diskOf(t *testing.T, dir string, max int64) {
	t.Helper()
	used := func() (n int64) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		return n
	}
	old := writeAtomic
	t.Cleanup(func() { writeAtomic = old })
	writeAtomic = func(path string, data []byte) error {
		if used()+int64(len(data)) > max {
			return fmt.Errorf("write %s: %w", path, &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC})
		}
		return report.WriteAtomic(path, data)
	}
}

// Issue 49 B10 and U9: on a full --out the run exits 3, but results.json
// and junit.xml still said PASS, exit_status 0: the rewrite that says exit
// 3 needs room for a second copy beside the first, and the derived reports
// had taken it. Each file is now replaced in its own space.
func TestReportsNotWrittenFitOnAFullDisk(t *testing.T) {
	rep, err := report.Read("../report/testdata/host-results.json")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.ExitStatus != 0 {
		t.Fatalf("testdata: exit_status %d, want a PASS record", rep.Summary.ExitStatus)
	}
	out := t.TempDir()
	start := time.Unix(0, 0)
	if err := rep.Write(filepath.Join(out, "results.json")); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJUnit(filepath.Join(out, "junit.xml"), rep, start); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteAtomic(filepath.Join(out, "summary.txt"), outputs.SummaryText(rep, nil)); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, f := range []string{"results.json", "junit.xml", "summary.txt"} {
		fi, _ := os.Stat(filepath.Join(out, f))
		total += fi.Size()
	}
	diskOf(t, out, total+64) // full: no second copy of anything fits
	sinksOn(out).recordNotWritten(start, rep, []string{"htmlreport: write report.html: no space left on device"}, nil)

	got, err := report.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary.ExitStatus != ExitNoReport || !strings.HasPrefix(got.Summary.Line, "p2patomics: REPORTS NOT WRITTEN (exit 3: htmlreport") {
		t.Errorf("results.json on a full disk: exit_status %d, line %q; want 3, REPORTS NOT WRITTEN", got.Summary.ExitStatus, got.Summary.Line)
	}
	if got.Environment.Trimmed == "" {
		t.Errorf("results.json was cut to fit but does not say so (environment.trimmed)")
	}
	if len(got.Results) != len(rep.Results) {
		t.Errorf("results.json kept %d of %d cases", len(got.Results), len(rep.Results))
	}
	j, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if !strings.Contains(string(j), `type="reports-not-written"`) {
		t.Errorf("junit.xml on a full disk has no reports-not-written error:\n%.600s", j)
	}
	s, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
	if !strings.HasSuffix(strings.TrimSpace(string(s)), got.Summary.Line) {
		t.Errorf("summary.txt's last line is not the record's: %q", s[max(0, len(s)-200):])
	}
	if ents, _ := os.ReadDir(out); len(ents) != 3 {
		t.Errorf("left in --out: %v (want results.json, junit.xml, summary.txt and no temporary file)", ents)
	}
}
