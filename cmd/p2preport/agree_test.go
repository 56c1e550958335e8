package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/backends"
	"p2patomics/harness/htmlreport"
	"p2patomics/harness/report"
)

var verdictWord = regexp.MustCompile(`p2patomics: (PASS|FAIL|INTERRUPTED) —`)

// word is the verdict word of the first verdict line in s ("" if none).
func word(s string) string {
	if m := verdictWord.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// heatmapTool builds cmd/p2pheatmap once: a tool is tested as it runs.
func heatmapTool(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "p2pheatmap")
	cmd := exec.Command("go", "build", "-o", bin, "../p2pheatmap")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build p2pheatmap: %v\n%s", err, out)
	}
	return bin
}

// verdicts runs every tool that shows a verdict on one results.json (and
// optional --expectations): p2preport (exit status, last line, the
// report.html and junit.xml it writes), p2pheatmap (exit status, last
// line), htmlreport.Verdict on the re-rendered record. It returns the
// words each tool showed, and p2preport's exit status.
func verdicts(t *testing.T, heatmap, results string, exps ...string) (map[string]string, int) {
	t.Helper()
	dir := t.TempDir()
	args := append(append([]string{}, exps...), "--out="+filepath.Join(dir, "report"), results)
	var so, se bytes.Buffer
	rc := run(args, &so, &se)
	got := map[string]string{}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	got["p2preport last line"] = word(lines[len(lines)-1])
	if rc == 2 {
		got["p2preport last line"] = "refused"
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report", "report.html")); err == nil {
		got["report.html"] = word(string(b))
	} else if rc == 2 {
		got["report.html"] = "refused"
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report", "junit.xml")); err == nil {
		m := regexp.MustCompile(`<property name="verdict" value="([A-Z]+)"`).FindSubmatch(b)
		if m != nil {
			got["junit.xml"] = string(m[1])
		}
	} else if rc == 2 {
		got["junit.xml"] = "refused"
	}
	hm := exec.Command(heatmap, append(append([]string{}, exps...), "--out="+filepath.Join(dir, "heatmaps"), results)...)
	out, err := hm.Output()
	hl := strings.Split(strings.TrimSpace(string(out)), "\n")
	got["p2pheatmap"] = word(hl[len(hl)-1])
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		got["p2pheatmap"] = "refused"
	}
	if rep, err := report.Read(results); err == nil && len(exps) == 0 {
		_, line := htmlreport.Verdict(rep)
		got["htmlreport.Verdict (record)"] = word(line)
	}
	return got, rc
}

// Issue 25 item 5: every tool that shows a verdict gets it from
// expect.JudgeReport with the suite's stack rules, so fed the same
// fixture they say the same; the committed 1×, 2× and 4× H200 runs
// re-rendered by every tool give the verdict the run recorded (its
// summary.txt's verdict line, kept beside the fixture as verdict.txt;
// testdata/runs holds the runs gzipped from results/, which tests never
// read). Before: p2pheatmap drew results/h200x4 as FAIL (UNMET
// vmm-host) beside a PASS report, and p2preport --expectations judged host
// results against the NVIDIA baseline ("FAIL — 332 missing").
func TestEveryToolTellsOneVerdict(t *testing.T) {
	heatmap := heatmapTool(t)
	root := filepath.Join("..", "..")
	runs := filepath.Join(root, "testdata", "runs")
	for _, run := range []string{"h200x1-580.159.04", "h200x2-580.159.04", "h200x4-580.159.04"} {
		t.Run(run, func(t *testing.T) {
			line, err := os.ReadFile(filepath.Join(runs, run, "verdict.txt"))
			if err != nil {
				t.Fatal(err)
			}
			want := word(string(line))
			if want == "" {
				t.Fatalf("%s/verdict.txt has no verdict line", run)
			}
			got, _ := verdicts(t, heatmap, filepath.Join(runs, run, "results.json.gz"))
			for tool, w := range got {
				if w != want {
					t.Errorf("%s: %s says %q, the recorded verdict %q", run, tool, w, want)
				}
			}
		})
	}

	dir := t.TempDir()
	write := func(name string, rep *report.Report) string {
		p := filepath.Join(dir, name, "results.json")
		if err := rep.Write(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	host := map[string]any{"vendor": backends.HostName, "goarch": "amd64"}
	res := func(id string, o report.Outcome) report.Result {
		return report.Result{Case: report.ParseCase(id, nil), Labels: []string{}, Outcome: o, Expected: report.Pass, Ranks: []report.Rank{}}
	}
	// A new flake, recorded with both attempts by a gated run.
	flaky := res("host.memfd.counter.add_u64_relaxed_sys", report.Crash)
	flaky.Verdict = report.NewFlake
	flaky.Rerun = &report.Attempt{Outcome: report.Pass}
	newFlake := write("new-flake", &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host),
		Results: []report.Result{res("host.memfd.counter.sub_u64_relaxed_sys", report.Pass), flaky},
		Gate:    &report.Gate{Pass: false, Reasons: []string{"new flake"}}})
	// An interrupted run: one case ran, one did not finish.
	half := []report.Result{res("host.memfd.counter.add_u64_relaxed_sys", report.Pass), res("host.memfd.counter.sub_u64_relaxed_sys", report.Incomplete)}
	sum := report.SummarizeRun(half, "", "", "SIGINT")
	interrupted := write("interrupted", &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host), Results: half, Summary: &sum})
	// An older ungated record without verdicts: one fail.
	old := write("old", &report.Report{Schema: report.Schema, Environment: report.EnvironmentOf(host),
		Results: []report.Result{res("host.memfd.counter.add_u64_relaxed_sys", report.Fail)}})
	// Issue 49 S3: a gated PASS whose passing case is recorded as a crash
	// or a fail, its verdict left "expected" (the record's lie), and a
	// crash marked expected-fail with no baseline outcome behind it.
	crashLie := fixture.Planted(t, filepath.Join(dir, "crash-lie"), fixture.CrashMarkedExpected(t))
	failLie := fixture.Planted(t, filepath.Join(dir, "fail-lie"), func(d map[string]any) { fixture.Result(t, d, fixture.After)["outcome"] = "fail" })
	xfailLie := fixture.Planted(t, filepath.Join(dir, "xfail-lie"), func(d map[string]any) {
		r := fixture.Result(t, d, fixture.After)
		r["outcome"], r["verdict"] = "crash", "expected-fail"
	})
	nv := filepath.Join(root, "expectations", "nvidia-sm_90-580")
	for _, c := range []struct {
		name, results string
		exps          []string
		want          string
		rc            int
	}{
		{"new flake", newFlake, nil, "FAIL", 1},
		{"new flake re-judged", newFlake, []string{"--expectations=" + filepath.Join(root, "expectations", "host-amd64")}, "FAIL", 1},
		{"interrupted", interrupted, nil, "INTERRUPTED", report.ExitInterrupted},
		{"old ungated", old, nil, "FAIL", 1},
		{"crash marked expected", crashLie, nil, "FAIL", 1},
		{"fail marked expected", failLie, nil, "FAIL", 1},
		{"crash marked expected-fail", xfailLie, nil, "FAIL", 1},
		{"the fixture as recorded", fixture.Path, nil, "PASS", 0},
		{"host run, NVIDIA baseline", old, []string{"--expectations=" + nv}, "refused", 2},
		{"host run, NVIDIA baseline, --allow-stack-mismatch", old, []string{"--expectations=" + nv, "--allow-stack-mismatch"}, "refused", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, rc := verdicts(t, heatmap, c.results, c.exps...)
			if rc != c.rc {
				t.Errorf("p2preport exit %d, want %d", rc, c.rc)
			}
			for tool, w := range got {
				if tool == "htmlreport.Verdict (record)" && strings.Contains(c.name, "marked expected") {
					continue // the record's own summary is the lie planted; every tool judges it again
				}
				if w != c.want {
					t.Errorf("%s says %q, want %q", tool, w, c.want)
				}
			}
		})
	}
}
