package htmlreport

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/heatmap"
	"p2patomics/harness/report"
)

// sample is a small two-GPU run: a clean vmm path, a vmm-host path whose
// pair case 1→0 is planted unmet (it lost updates), a not-supported skip,
// and per-pair bandwidth with its spread.
func sample() *report.Report {
	bw := func(v float64) map[string]report.Metric {
		return map[string]report.Metric{"bw_ce_write_gbps": {Unit: "GB/s", Median: v, Min: v - 2, Max: v + 1, N: 5, Method: "cuda-events"}}
	}
	rate := map[string]report.Metric{"pair_atomic_rate": {Unit: "Mops/s", Median: 60.3, Min: 60.3, Max: 60.3, N: 1, Method: "one launch"}}
	var rs []report.Result
	for _, k := range []string{"vmm", "vmm-host"} {
		rs = append(rs,
			report.Result{Case: report.ParseCase("cuda."+k+".counter.add_u64_relaxed_sys", nil), Outcome: report.Pass, Expected: report.Pass, Labels: []string{"atomics"}},
			report.Result{Case: report.ParseCase("cuda."+k+".pairs.add_u64_relaxed_sys.r0r1", nil), Outcome: report.Pass, Expected: report.Pass, Labels: []string{"atomics", "pair=0-1"}, Metrics: rate},
			report.Result{Case: report.ParseCase("cuda."+k+".pairs.add_u64_relaxed_sys.r1r0", nil), Outcome: report.Pass, Expected: report.Pass, Labels: []string{"atomics", "pair=1-0"}, Metrics: rate},
			report.Result{Case: report.ParseCase("cuda."+k+".perf.copy_ce_write.r0r1", nil), Outcome: report.Pass, Expected: report.Pass, Labels: []string{"perf", "pair=0-1"}, Metrics: bw(391)},
			report.Result{Case: report.ParseCase("cuda."+k+".perf.copy_ce_write.r1r0", nil), Outcome: report.Pass, Expected: report.Pass, Labels: []string{"perf", "pair=1-0"}, Metrics: bw(389)},
			report.Result{Case: report.ParseCase("cuda."+k+".cpugpu.add_u64_relaxed_sys", nil), Outcome: report.Skip, Expected: report.Pass,
				Detail: `device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0", need 1`},
		)
	}
	// Planted: GPU 1's atomics on GPU 0's host-NUMA memory lose updates.
	rs[8].Outcome, rs[8].Detail = report.Fail, "expected 0x52800, got 0x15fc0: lost updates"
	rs[8].Repro = "./specs.test --backend=cuda --alloc=vmm-host --case=" + rs[8].ID()
	return &report.Report{Schema: report.Schema, Results: rs, Environment: report.EnvironmentOf(map[string]any{
		"vendor": "nvidia", "gpus": []any{map[string]any{"name": "NVIDIA H200", "arch": "sm_90"}, map[string]any{"name": "NVIDIA H200"}},
		"nvidia": map[string]any{"driver": "580.159.04"}, "os": map[string]any{"release": "Ubuntu 24.04.3 LTS"},
	})}
}

func render(t *testing.T, rep *report.Report, dir string) string {
	t.Helper()
	var b strings.Builder
	if err := Render(&b, rep, dir); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestVerdict(t *testing.T) {
	// An older results.json without a summary: judged as every tool
	// judges it (expect.JudgeReport), so the line is the suite's.
	rep := sample()
	pass, line := Verdict(rep)
	if pass || line != "p2patomics: FAIL — 1 regression: cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0 pass → fail (cases/cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0/)" {
		t.Errorf("%v %q", pass, line)
	}
	rep.Results[8].Outcome = report.Pass
	if pass, line := Verdict(rep); !pass || !strings.HasPrefix(line, "p2patomics: PASS — 12 cases, 0 unexpected, 2 not supported") {
		t.Errorf("clean: %v %q", pass, line)
	}
	rep.Gate = &report.Gate{Pass: false, Reasons: []string{"missing: x"}}
	rep.Results[8].Verdict = report.Missing
	if pass, line := Verdict(rep); pass || !strings.Contains(line, "FAIL — 1 missing") {
		t.Errorf("gated: %v %q", pass, line)
	}
}

// TestRender: the page's order, the planted case linked to its evidence
// folder with its repro line, and nothing that needs the network.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cases", "cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0"), 0o755)
	page := render(t, sample(), dir)
	order := []string{`id="verdict"`, "Machine: nvidia, 2× NVIDIA H200, driver 580.159.04, Ubuntu 24.04.3 LTS", "Stack: ", `id="matrix"`,
		`id="pic-verdict.svg"`, `id="unexpected"`, `<a href="cases/cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0/">`,
		"--case=cuda.vmm-host.pairs.add_u64_relaxed_sys.r1r0", `id="pairs-verdict"`, `id="heatmaps"`, `id="pair-table"`}
	at := 0
	for _, w := range order {
		i := strings.Index(page[at:], w)
		if i < 0 {
			t.Fatalf("page lacks %q after byte %d", w, at)
		}
		at += i
	}
	for _, bad := range []string{"<script", "<img", "<link", "<?xml", "https://", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("page is not self-contained: has %q", bad)
		}
	}
	if n := strings.Count(page, "http://"); n != strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("an http:// other than the SVG namespace")
	}
	if strings.Contains(page, `id="world-events"`) {
		t.Error("a run without world events has a world events section")
	}
	// Issue 35 item 4: the world events are on the page, between the
	// unexpected cases and the pair verdicts, rank, pid and signal each
	// in its cell. At ce5f99b the page held nothing of them.
	rep, one := sample(), 1
	rep.WorldEvents = []report.WorldEvent{{Time: "2026-12-01T10:00:00Z", Kind: report.EventStartCrash, Rank: &one, Pid: 4242, Signal: "SIGSEGV",
		Case: "cuda.vmm.counter.add_u64_relaxed_sys", Detail: "world start of 2 ranks for cuda.vmm.counter.add_u64_relaxed_sys: rank 1 (pid 4242) killed by SIGSEGV before its hello"}}
	page = render(t, rep, dir)
	ev := `<td>start-crash</td><td>1</td><td>4242</td><td>SIGSEGV</td><td>cuda.vmm.counter.add_u64_relaxed_sys</td>`
	if u, w, p := strings.Index(page, `id="unexpected"`), strings.Index(page, ev), strings.Index(page, `id="pairs-verdict"`); w < 0 || u > w || w > p {
		t.Errorf("the world event is not shown between the unexpected cases and the pair verdicts (at %d, %d, %d)", u, w, p)
	}
	// Without the folder, no dead link.
	page = render(t, sample(), t.TempDir())
	if strings.Contains(page, `href="cases/`) || !strings.Contains(page, "(no evidence folder)") {
		t.Error("a missing evidence folder must not be linked")
	}
}

// TestBrowser opens the written page in headless Chromium and checks,
// in the DOM the browser built, the verdict, the verdict matrix with the
// planted unmet cell, and every picture as an inline SVG.
func TestBrowser(t *testing.T) {
	bin := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium on PATH (Debian: apt-get install chromium; make deps installs it as root)")
	}
	dir := t.TempDir()
	rep := sample()
	if err := WriteHTML(dir, rep); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+filepath.Join(dir, File))
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	_, line := Verdict(rep)
	if !strings.Contains(dom, line) {
		t.Errorf("DOM lacks the verdict line %q", line)
	}
	pics := heatmap.Pictures(rep)
	if len(pics) < 4 {
		t.Fatalf("pictures %d", len(pics))
	}
	for _, p := range pics {
		re := regexp.MustCompile(`<figure id="pic-` + regexp.QuoteMeta(p.File) + `" class="picture">\s*<svg `)
		if !re.MatchString(dom) {
			t.Errorf("DOM lacks picture %s as inline SVG", p.File)
		}
	}
	matrix := dom[strings.Index(dom, `id="pic-verdict.svg"`):]
	matrix = matrix[:strings.Index(matrix, "</figure>")]
	if !strings.Contains(matrix, `class="cell unmet"`) || !strings.Contains(matrix, "UNMET: fail") {
		t.Errorf("verdict matrix in the DOM does not show the planted unmet cell")
	}
	if strings.Count(dom, "<svg") != len(pics) {
		t.Errorf("%d svg elements, %d pictures", strings.Count(dom, "<svg"), len(pics))
	}
}

// TestWriteHTMLLeavesNoTemp: a write that fails (report.html is a folder)
// says so and leaves no temporary file in the run's folder.
func TestWriteHTMLLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, File), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(dir, sample()); err == nil {
		t.Fatal("WriteHTML over a folder: no error")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != File {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
