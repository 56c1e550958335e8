package outputs

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// No ANSI when stdout is not a terminal (go test's stdout is a pipe or a
// file) or NO_COLOR is set.
func TestStdoutStyle(t *testing.T) {
	if StdoutStyle().Color && !isTerminal(os.Stdout.Fd()) {
		t.Error("colour on a stdout that is not a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if StdoutStyle().Color {
		t.Error("colour with NO_COLOR set")
	}
	f, _ := os.CreateTemp(t.TempDir(), "out")
	defer f.Close()
	if isTerminal(f.Fd()) {
		t.Error("a regular file reads as a terminal")
	}
	var b bytes.Buffer
	rep := &report.Report{Results: []report.Result{{Case: report.ParseCase("a", nil), Outcome: report.Crash, Expected: report.Pass, Verdict: report.Regression}}}
	s := report.Summarize(rep.Results, "", "out")
	rep.Summary = &s
	report.WriteConclusion(&b, report.Style{}, rep)
	if bytes.Contains(b.Bytes(), []byte("\x1b[")) {
		t.Errorf("plain style wrote ANSI: %q", b.String())
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[len(lines)-1] != s.Line {
		t.Errorf("the verdict line is not last: %q", lines[len(lines)-1])
	}
}
