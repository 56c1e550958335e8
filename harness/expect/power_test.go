package expect

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"p2patomics/harness/power"
	"p2patomics/harness/report"
)

func committedGated(t *testing.T) *report.Report {
	t.Helper()
	f, err := os.Open("../../testdata/runs/h200x1-580.159.04/final-60d227d-gated/results.json.gz")
	if err != nil {
		t.Fatal("the gated H200 fixture:", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.NewDecoder(z).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// Issue 52 item 1: the suite's verdict states its power (StatePower):
// summary.power and "; power: ..." on the line before its basis (scripts
// match the line's end), the verdict itself unchanged; a target the run fell short of is "SHORT of --power=..." on
// the line. A record made before power (no summary.power) re-renders to
// the line it recorded, byte for byte; one that stated it states it again
// against its own target. Planted: JudgeRun without the power call (the
// old code) fails the first check.
func TestVerdictStatesPower(t *testing.T) {
	rep := committedGated(t)
	s, err := Load([]string{"../../expectations/nvidia-sm_90-580-x1"})
	if err != nil {
		t.Fatal(err)
	}
	recorded := rep.Summary.Line
	_, _, plain := JudgeRun(rep.Results, s, rep.Environment, nil, "expectations/nvidia-sm_90-580-x1", "", StatePower(power.Target{}))
	head, basis, _ := strings.Cut(recorded, " (gate ")
	if plain.Power == nil || !strings.HasPrefix(plain.Line, head+"; power: perf flags ") || !strings.HasSuffix(plain.Line, " (gate "+basis) ||
		!strings.Contains(plain.Line, "litmus sees 3.29/M at 99.9 %, counters 192/192") || plain.Verdict != report.VerdictPass {
		t.Fatalf("the verdict line with power:\n%s\n(recorded: %s)", plain.Line, recorded)
	}
	tight, err := power.Parse("litmus=1/M")
	if err != nil {
		t.Fatal(err)
	}
	_, _, short := JudgeRun(rep.Results, s, rep.Environment, nil, "expectations/nvidia-sm_90-580-x1", "", StatePower(tight))
	if !strings.Contains(short.Line, "; SHORT of --power=litmus=1/M: litmus cuda.vmm-host.litmus.piriw_u32_seqcst_sys sees 3.29/M, not 1/M (gate ") {
		t.Errorf("short of the target:\n%s", short.Line)
	}
	old := *rep
	if err := JudgeReport(&old, Rejudge{Set: s, Gate: "expectations/nvidia-sm_90-580-x1"}); err != nil || old.Summary.Line != recorded || old.Summary.Power != nil {
		t.Errorf("a record without power re-renders to %q (%v), want the recorded %q", old.Summary.Line, err, recorded)
	}
	with := *rep
	sum := short
	with.Summary = &sum
	if err := JudgeReport(&with, Rejudge{Set: s, Gate: "expectations/nvidia-sm_90-580-x1"}); err != nil || with.Summary.Line != short.Line {
		t.Errorf("a record with power re-renders to %q (%v), want %q", with.Summary.Line, err, short.Line)
	}
}
