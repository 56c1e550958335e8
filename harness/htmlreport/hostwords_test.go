package htmlreport

import (
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// Issue 49 U15: a host run's report said "Machine: host, 1× cpu", "Verdicts
// per GPU pair", "GPU 0", "GPU(row) 1" on a box with no GPU. Host words
// on host: its rows and columns are ranks on the CPU.
func TestHostReportSpeaksOfRanks(t *testing.T) {
	rep, err := report.Read("../report/testdata/host-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, rep, ""); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"1× cpu", "Verdicts per GPU pair", ">GPU 0<", "GPU(row)", "column: GPU"} {
		if strings.Contains(page, bad) {
			t.Errorf("host report.html says %q", bad)
		}
	}
	for _, want := range []string{"Machine: host backend (CPU only): the ranks are processes on this machine&#39;s CPU (2 cores)", "Verdicts per rank pair", "rank(row) 0"} {
		if !strings.Contains(page, want) {
			t.Errorf("host report.html lacks %q", want)
		}
	}
	// A GPU run keeps its words.
	rep.Environment.Vendor = "nvidia"
	b.Reset()
	if err := Render(&b, rep, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Verdicts per GPU pair") || !strings.Contains(b.String(), "GPU(row) 0") {
		t.Errorf("a GPU run lost its GPU words")
	}
}
