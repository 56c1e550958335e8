package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// A planted surviving mutant: a litmus case that still passes with its
// tally dropped (a tally whose witness check was removed) fails the score;
// with the tally's drop killing it, the score is 100%.
func TestScoreFailsOnSurvivor(t *testing.T) {
	const lit = "host.memfd.litmus.pmp_u32_acqrel_sys"
	const cnt = "host.memfd.counter.add_u64_relaxed_sys"
	p := Plan{Kernels: map[string][]string{
		lit: {"fill_u64_plain_dev", "pmp_u32_acqrel_sys", "tally_u32_relaxed_dev"},
		cnt: {"add_u64_relaxed_sys"},
	}}
	runs := map[string]map[string]report.Outcome{
		"fill_u64_plain_dev":    {lit: report.Error},
		"pmp_u32_acqrel_sys":    {lit: report.Fail},
		"tally_u32_relaxed_dev": {lit: report.Pass}, // the planted survivor
		"add_u64_relaxed_sys":   {cnt: report.Fail},
	}
	s := score(p, runs)
	if s.OK() || len(s.Survivors) != 1 || s.Survivors[0].Kernel != "tally_u32_relaxed_dev" || s.Killed != 3 || s.Total != 4 {
		t.Fatalf("score %+v: want 3/4 with the tally's survivor", s)
	}
	if txt := s.text(); !strings.Contains(txt, "SURVIVED  "+lit+" with tally_u32_relaxed_dev dropped") || !strings.Contains(txt, "FAIL") {
		t.Fatalf("text does not name the survivor:\n%s", txt)
	}
	runs["tally_u32_relaxed_dev"][lit] = report.Error
	if s := score(p, runs); !s.OK() || s.Killed != 4 {
		t.Fatalf("all killed: score %+v", s)
	}
	// A case the mutated run lost is no kill either.
	delete(runs["add_u64_relaxed_sys"], cnt)
	if s := score(p, runs); s.OK() || len(s.Lost) != 1 {
		t.Fatalf("lost case: score %+v", s)
	}
}

// No case launches two kernels of one group, and every kernel is in one.
func TestGroupKernels(t *testing.T) {
	p := Plan{Kernels: map[string][]string{
		"a": {"fill", "sum", "copy"}, "b": {"fill", "tally", "pmp"}, "c": {"add"}, "d": {"sub", "sum"}, "e": {"copy"},
	}}
	gs := groupKernels(p)
	seen := map[string]int{}
	for _, g := range gs {
		for _, k := range g {
			seen[k]++
		}
		for c, ks := range p.Kernels {
			n := 0
			for _, k := range ks {
				if slices.Contains(g, k) {
					n++
				}
			}
			if n > 1 {
				t.Errorf("group %v drops %d kernels of case %s (%v)", g, n, c, ks)
			}
		}
	}
	for _, ks := range p.Kernels {
		for _, k := range ks {
			if seen[k] != 1 {
				t.Errorf("kernel %s in %d groups", k, seen[k])
			}
		}
	}
	if len(gs) != 3 { // a and b share fill, a's three kernels need three groups
		t.Errorf("%d groups, want 3: %v", len(gs), gs)
	}
}

// The whole checker against a fake suite: a case that passes healthy
// (launching one kernel, as its trace shows) and passes again with that
// kernel dropped is a survivor, and p2pmutate exits 1 naming it; when the
// dropped run fails it, exit 0.
func TestRunFailsOnPlantedSurvivor(t *testing.T) {
	for _, tc := range []struct {
		dropped string
		want    int
	}{{"pass", 1}, {"fail", 0}} {
		dir := t.TempDir()
		fake := filepath.Join(dir, "specs.sh")
		res := func(outcome string) string {
			b, _ := json.Marshal(report.Report{Schema: 1, Results: []report.Result{
				{Case: report.ParseCase("host.memfd.litmus.pmp_u32_acqrel_sys", nil), Outcome: report.Outcome(outcome), Expected: report.Pass}}})
			return string(b)
		}
		script := `#!/bin/sh
out=; inject=
for a in "$@"; do case $a in --out=*) out=${a#--out=};; --internal-inject=*) inject=${a#--internal-inject=};; esac; done
mkdir -p "$out/cases/host.memfd.litmus.pmp_u32_acqrel_sys"
if [ -z "$inject" ]; then
  echo '   12 +0.001 request.launch(seq=3 fds=0 body={"kernel":"tally_u32_relaxed_dev","grid":1}) = OK (0) 1ms' > "$out/cases/host.memfd.litmus.pmp_u32_acqrel_sys/rank-0.trace"
  echo '` + res("pass") + `' > "$out/results.json"
else
  [ "$inject" = drop:tally_u32_relaxed_dev ] || exit 7
  echo '` + res(tc.dropped) + `' > "$out/results.json"
fi
exit 1
`
		if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		rc := run([]string{"--specs=" + fake, "--out=" + filepath.Join(dir, "out")}, &out, &errb)
		if rc != tc.want {
			t.Fatalf("dropped run %s: exit %d, want %d\n%s%s", tc.dropped, rc, tc.want, out.String(), errb.String())
		}
		if tc.want == 1 && !strings.Contains(out.String(), "SURVIVED  host.memfd.litmus.pmp_u32_acqrel_sys with tally_u32_relaxed_dev dropped") {
			t.Fatalf("survivor not named:\n%s", out.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "out", "mutate.json")); err != nil {
			t.Fatal(err)
		}
		// The progress lines make mutate says as it goes (issue 38 item 10).
		for _, want := range []string{"p2pmutate: healthy run with --trace (the plan): start\n",
			"p2pmutate: plan after ", ": 1 passing cases launch a kernel; 1 mutated runs, 1 at once\n",
			"p2pmutate: [1/1] drop-00 (tally_u32_relaxed_dev; 1 cases reported) ended after "} {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, errb.String())
			}
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"--out=/tmp/x"}, &out, &errb); rc != 2 || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", rc, errb.String())
	}
	if rc := run([]string{"--specs=x", "--out=/tmp/x", "--kernels=("}, &out, &errb); rc != 2 {
		t.Fatalf("bad regexp: exit %d", rc)
	}
}
