package expect

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// x1 is the committed one-GPU folder of the sm_90/580 stack.
const x1 = "../../expectations/nvidia-sm_90-580-x1"

const h100File = "perf-nvidia-h100-80gb-hbm3-e9bfb33c.txt"

// h100Sku is the H100s' sku-scoped file (any H100 80GB HBM3).
const h100Sku = "perf-nvidia-h100-80gb-hbm3.txt"

// Issue 52: both one-GPU cards the project runs on have a committed
// baseline. The one-GPU folder holds the H200s' perf.txt (sku NVIDIA H200)
// and the H100 PCIe's perf file (machine scope) beside it; each card's
// run is judged by its own, a run of issue 48's ten on the H100 PASSes
// against the folder as committed, the seven H200 runs too, and an H100
// the folder has no baseline for is refused, naming both files.
func TestCommittedFolderServesBothCards(t *testing.T) {
	h200 := loadCommitted(t)
	h100 := h100Healthy(t)
	s, err := Load([]string{x1})
	if err != nil {
		t.Fatal(err)
	}
	// perf.txt, the seed H100's, the H100s of issue 52's runs at 8f48ba3
	// and a1d6007 (GPU-6abb804c, GPU-064a9527) and the H100s' sku file
	// from those three cards' 17 runs.
	if len(s.PerfFiles) != 5 || filepath.Base(s.PerfSource) != PerfFile {
		t.Fatalf("perf files %d, default %s", len(s.PerfFiles), s.PerfSource)
	}
	checkEachCardsOwnFile(t, s, h200, h100)
	checkAnotherCard(t, s, h100[0])
	checkRunsPassOffline(t, h100, h200)
}

// checkEachCardsOwnFile: each committed card's run is judged by its own
// perf file (the H200s by perf.txt, the seed H100 by its machine file).
func checkEachCardsOwnFile(t *testing.T, s *Set, h200, h100 []*report.Report) {
	for _, c := range []struct {
		name string
		rep  *report.Report
		want string
	}{{"an H200", h200[0], PerfFile}, {"another H200", h200[3], PerfFile}, {"the H100", h100[0], h100File}} {
		b, err := s.PerfFor(c.rep.Environment)
		if err != nil || filepath.Base(b.Source) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.name, b.Source, err, c.want)
		}
	}
}

// checkAnotherCard: another H100 (a UUID no machine file names) is judged
// by the H100s' sku file; a card of another name is refused, naming the
// files' scopes, unless --allow-stack-mismatch falls back to perf.txt.
func checkAnotherCard(t *testing.T, s *Set, h100 *report.Report) {
	other := *h100
	other.Environment.GPUs = append([]report.GPU(nil), other.Environment.GPUs...)
	other.Environment.GPUs[0].UUID = "GPU-00000000-0000-0000-0000-000000000000"
	if b, err := s.PerfFor(other.Environment); err != nil || filepath.Base(b.Source) != h100Sku {
		t.Errorf("another H100: %v, judged by %v; want %s", err, b, h100Sku)
	}
	other.Environment.GPUs[0].Name = "NVIDIA H100 PCIe"
	_, err := s.PerfFor(other.Environment)
	if err == nil || !strings.Contains(err.Error(), "perf baseline scope mismatch") || !strings.Contains(err.Error(), "NVIDIA H100 PCIe") ||
		!strings.Contains(err.Error(), "sku NVIDIA H200") || !strings.Contains(err.Error(), h100File) || strings.Contains(err.Error(), "\n") {
		t.Errorf("another card: %v, want one line naming the files' scopes", err)
	}
	if err := (Rejudge{Set: s}).Check(&other); err == nil {
		t.Errorf("p2preport's check judged another card")
	}
	if err := s.ChoosePerf(other.Environment, true); err != nil || filepath.Base(s.PerfSource) != PerfFile {
		t.Errorf("--allow-stack-mismatch: %v, judged by %s, want perf.txt", err, s.PerfSource)
	}
}

// checkRunsPassOffline: offline, as p2preport judges them, every H100 run
// PASSes, each judged by the H100's file (69 gated, none failing;
// healthy-7 keeps its two perf-improvements); every H200 run's perf passes
// by perf.txt (the older H200 runs lack cases added since, so only their
// perf is asked).
func checkRunsPassOffline(t *testing.T, h100, h200 []*report.Report) {
	for i, rep := range append(h100, h200...) {
		set, err := Load([]string{x1})
		if err != nil {
			t.Fatal(err)
		}
		if err := JudgeReport(rep, Rejudge{Set: set, Gate: x1}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		p := rep.Summary.Perf
		if p == nil || len(p.Failing()) > 0 || p.Gated == 0 {
			t.Errorf("run %d: perf %+v", i, p)
			continue
		}
		if i >= len(h100) {
			if filepath.Base(set.PerfSource) != PerfFile {
				t.Errorf("H200 run %d judged by %s", i, set.PerfSource)
			}
			continue
		}
		if g := rep.Gate; g == nil || !g.Pass || p.Gated != 69 || filepath.Base(set.PerfSource) != h100File {
			t.Errorf("H100 healthy-%d: gate %+v, perf %d of %d in band, by %s", i+1, g, p.InBand, p.Gated, set.PerfSource)
		}
	}
}

const perfLine = "cuda.vmm.perf.copy_ce_read.r0r1 bw_ce_read_gbps >= 90 GB/s | band 100..110 runs=3 tol=10% family=copy one direction\n"

func perfBody(scope string) string {
	return "# stack: vendor=nvidia arch=sm_90 driver=580\n# scope: " + scope + "\n# recorded: a test\n" + perfLine
}

// A folder's perf files: one a scope; perf-<card>.txt in lowercase words;
// a scope CheckScope can read; a malformed line named by file and line.
// Each refusal is one line. A machine scope that holds the run's GPUs is
// chosen before a sku scope that does.
func TestPerfCardFilesLoad(t *testing.T) {
	folder := func(files map[string]string) string {
		dir := t.TempDir()
		write(t, dir, CasesFile, "cuda.vmm.perf.copy_ce_read.r0r1\n")
		for name, body := range files {
			write(t, dir, name, body)
		}
		return dir
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"two files, one scope", map[string]string{PerfFile: perfBody("sku NVIDIA H200"), "perf-h200.txt": perfBody("sku NVIDIA H200")}, "a second perf baseline for sku NVIDIA H200"},
		{"a card file not in lowercase words", map[string]string{"perf-H100.txt": perfBody("sku NVIDIA H100")}, `"perf-H100.txt" is not an expectation file name`},
		{"a card file with an empty card", map[string]string{"perf-.txt": perfBody("sku NVIDIA H100")}, "not an expectation file name"},
		{"a scope that is neither", map[string]string{"perf-h100.txt": perfBody("rack 7")}, `scope "rack 7" is neither`},
		{"no scope", map[string]string{PerfFile: "# recorded: a test\n" + perfLine}, `scope "" is neither`},
		{"a malformed line", map[string]string{PerfFile: perfBody("sku A"), "perf-b.txt": perfBody("sku B") + "cuda.vmm.perf.x bw_x_gbps >= 1\n"}, "perf-b.txt:5:"},
		{"another stack", map[string]string{PerfFile: perfBody("sku A"), "perf-b.txt": strings.Replace(perfBody("sku B"), "580", "570", 1)}, "perf-b.txt"},
	} {
		_, err := Load([]string{folder(c.files)})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}

	h100 := loadH100(t, "healthy-1").Environment
	uuid := h100.GPUs[0].UUID
	s, err := Load([]string{folder(map[string]string{
		PerfFile:        perfBody("sku NVIDIA H200"),
		"perf-h100.txt": perfBody("sku NVIDIA H100 80GB HBM3"),
		"perf-mine.txt": perfBody("machine " + uuid),
	})})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.PerfFor(h100); err != nil || filepath.Base(b.Source) != "perf-mine.txt" {
		t.Errorf("machine before sku: %s, %v", b.Source, err)
	}
	other := h100
	other.GPUs = []report.GPU{h100.GPUs[0]}
	other.GPUs[0].UUID = "GPU-1"
	if b, err := s.PerfFor(other); err != nil || filepath.Base(b.Source) != "perf-h100.txt" {
		t.Errorf("another H100 by the sku file: %s, %v", b.Source, err)
	}
	if err := s.ChoosePerf(other, false); err != nil || filepath.Base(s.PerfSource) != "perf-h100.txt" || s.Perf.Scope != "sku NVIDIA H100 80GB HBM3" {
		t.Errorf("ChoosePerf: %v, %s", err, s.PerfSource)
	}
}

// Recording one card into a folder that holds another's perf.txt writes
// the new card's file beside it and leaves perf.txt byte for byte;
// recording the same card again replaces its own file; an empty folder
// gets perf.txt, as before. The durations.txt of a folder that serves
// another card keeps each case's longer time; one that serves only this
// card is replaced.
func TestRecordBesideAnotherCard(t *testing.T) {
	dir := t.TempDir()
	copyCommitted(t, dir)
	h200Perf, _ := os.ReadFile(filepath.Join(dir, PerfFile))
	old, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := loadH100(t, "record")
	names := []string{"pass 1", "pass 2", "pass 3"}
	recordBesidePerfTxt(t, dir, rec, names, h200Perf)

	if err := WriteBaseline(dir, rec, nil); err != nil {
		t.Fatal(err)
	}
	merged, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	ran := ranDurations(rec)
	checkLongerKept(t, old, merged, ran)
	checkOwnDurationsReplaced(t, dir, rec, ran)

	empty := t.TempDir()
	if path, _, err := WritePerfAt(empty, passesOf(rec), names, perf.Recording{}); err != nil || filepath.Base(path) != PerfFile {
		t.Errorf("an empty folder: %s, %v", path, err)
	}
}

// copyCommitted copies the committed one-GPU folder's H200 baseline into
// dir, so recording into it leaves the committed folder alone.
func copyCommitted(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{PerfFile, DurationsFile, CasesFile, FailsFile} {
		b, err := os.ReadFile(filepath.Join(x1, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, name, string(b))
	}
}

// recordBesidePerfTxt records the H100 twice into a folder holding the
// H200s' perf.txt: its own machine file is written (then replaced) beside
// perf.txt, which stays byte for byte, and the H100 is judged by its file.
func recordBesidePerfTxt(t *testing.T, dir string, rec *report.Report, names []string, h200Perf []byte) {
	for round := 0; round < 2; round++ {
		path, f, err := WritePerfAt(dir, passesOf(rec), names, perf.Recording{})
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != h100File || !strings.HasPrefix(f.Scope, "machine GPU-e9bfb33c") {
			t.Errorf("round %d: written to %s (%s), want %s", round, path, f.Scope, h100File)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, PerfFile)); !bytes.Equal(b, h200Perf) {
			t.Errorf("round %d: perf.txt changed", round)
		}
		ents, _ := filepath.Glob(filepath.Join(dir, "perf*.txt"))
		if len(ents) != 2 {
			t.Errorf("round %d: perf files %v", round, ents)
		}
	}
	s, err := Load([]string{dir})
	if err != nil || len(s.PerfFiles) != 2 {
		t.Fatalf("the folder after recording: %v", err)
	}
	if b, err := s.PerfFor(rec.Environment); err != nil || filepath.Base(b.Source) != h100File {
		t.Errorf("the H100 is judged by %s, %v", b.Source, err)
	}
}

// ranDurations is each case's time in rec by durationsText's rule (the
// longer of a run and its rerun; cases that did not run as expected aside):
// the test's independent account of what WriteBaseline should record.
func ranDurations(rec *report.Report) map[string]float64 {
	ran := map[string]float64{}
	for _, r := range rec.Results {
		if r.Outcome != report.Pass && r.Outcome != r.Expected || r.Outcome == report.Skip || r.Outcome == report.NotRunOutcome {
			continue
		}
		d := r.Duration
		if r.Rerun != nil {
			d = max(d, r.Rerun.Duration)
		}
		ran[r.ID()] = max(ran[r.ID()], d)
	}
	return ran
}

// checkLongerKept: the durations.txt of a folder that serves another card
// keeps each case's longer time, and some cases did take longer here (else
// the merge went unasked).
func checkLongerKept(t *testing.T, old, merged *Set, ran map[string]float64) {
	longer := 0
	for id, d := range old.Durations {
		want := max(d, ran[id])
		if got := merged.Durations[id]; !sameSec(got, want) {
			t.Errorf("%s: %v, want the longer of the H200s' %v and the H100's %v", id, got, d, ran[id])
		}
		if ran[id] > d {
			longer++
		}
	}
	if longer == 0 || len(merged.Durations) != len(old.Durations) {
		t.Errorf("%d cases took longer on the H100; %d durations, was %d", longer, len(merged.Durations), len(old.Durations))
	}
}

// checkOwnDurationsReplaced: a folder whose only perf baseline is this
// card's serves no other card, so its durations.txt is replaced.
func checkOwnDurationsReplaced(t *testing.T, dir string, rec *report.Report, ran map[string]float64) {
	if err := os.Remove(filepath.Join(dir, PerfFile)); err != nil {
		t.Fatal(err)
	}
	if err := WriteBaseline(dir, rec, nil); err != nil {
		t.Fatal(err)
	}
	own, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for id, d := range own.Durations {
		if !sameSec(d, ran[id]) {
			t.Errorf("%s: %v kept, want this run's %v", id, d, ran[id])
		}
	}
}

// sameSec: equal as durations.txt writes seconds (3 decimals).
func sameSec(a, b float64) bool { return math.Abs(a-b) < 0.0006 }
