package outputs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// Issue 38 item 8: a gated run's "expected" is the baseline's outcome (what
// the verdict is judged against) on every surface: stdout's live line,
// summary.txt's EXPECTED column, junit.xml's expected=, report.html's
// unexpected table and, re-read from results.json, the same again (a
// p2preport re-render). Ungated, every surface shows the spec's own. The
// surfaces used to disagree: stdout showed the baseline's fail, summary.txt
// and report.html the spec's pass, so a case listed as unexpected showed
// "outcome pass, expected pass".
func TestExpectedAgreesOnEverySurface(t *testing.T) {
	const (
		listed = "host.memfd.counter.listed" // fails.txt: fail; it failed (expected-fail)
		fixed  = "host.memfd.counter.fixed"  // fails.txt: fail; it passed (unexpected-pass)
		plain  = "host.memfd.counter.plain"  // not in fails.txt; it passed
	)
	results := []report.Result{
		{Case: report.ParseCase(listed, nil), Outcome: report.Fail, Expected: report.Pass, Detail: "lost updates", Ranks: []report.Rank{}},
		{Case: report.ParseCase(fixed, nil), Outcome: report.Pass, Expected: report.Pass, Ranks: []report.Rank{}},
		{Case: report.ParseCase(plain, nil), Outcome: report.Pass, Expected: report.Pass, Ranks: []report.Rank{}},
	}
	gate := &expect.Set{Fails: map[string]report.Outcome{listed: report.Fail, fixed: report.Fail}}
	for _, tc := range []struct {
		name string
		set  *expect.Set
		want map[string]report.Outcome // the "expected" every surface shows
	}{
		{"gated", gate, map[string]report.Outcome{listed: report.Fail, fixed: report.Fail, plain: report.Pass}},
		{"ungated", nil, map[string]report.Outcome{listed: report.Pass, fixed: report.Pass, plain: report.Pass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gateName := ""
			if tc.set != nil {
				gateName = "expectations/x"
			}
			judged, g, sum := expect.JudgeRun(results, tc.set, report.Environment{}, nil, gateName, "out")
			rep := &report.Report{Schema: report.Schema, Results: judged, Gate: g, Summary: &sum}
			if tc.set != nil && judged[1].Verdict != report.UnexpectedPass {
				t.Fatalf("the fixed case: verdict %s, want %s (the test needs one case in report.html's unexpected table)", judged[1].Verdict, report.UnexpectedPass)
			}
			checkSurfaces(t, "live run", rep, tc.want)

			// Re-read from results.json, as p2preport re-renders a run.
			path := filepath.Join(t.TempDir(), "results.json")
			if err := rep.Write(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var back report.Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for _, r := range back.Results {
				if got := report.Was(r); got != tc.want[r.ID()] {
					t.Errorf("results.json: %s judged against %s (expected %q, baseline %q), want %s", r.ID(), got, r.Expected, r.Baseline, tc.want[r.ID()])
				}
				if r.Expected != report.Pass {
					t.Errorf("results.json: %s expected %s, want the spec's pass (a re-judge against another baseline needs it)", r.ID(), r.Expected)
				}
			}
			checkSurfaces(t, "re-read from results.json", &back, tc.want)
		})
	}
}

// checkSurfaces writes rep's reports and checks that each shows want[id]
// as a case's expected outcome.
func checkSurfaces(t *testing.T, how string, rep *report.Report, want map[string]report.Outcome) {
	t.Helper()
	dir := t.TempDir()
	if err := WriteReports(dir, rep, nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	summary, junit, html := read("summary.txt"), read("junit.xml"), read("report.html")
	for i, r := range rep.Results {
		id, w := r.ID(), string(want[r.ID()])
		if line := report.LiveLine(report.Style{}, i+1, len(rep.Results), r); !regexp.MustCompile(` expected ` + w + ` +[0-9.]+s  ` + regexp.QuoteMeta(id)).MatchString(line) {
			t.Errorf("%s: stdout line %q, want expected %s", how, line, w)
		}
		// summary.txt: CASE OUTCOME EXPECTED VERDICT ...
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + ` +(\S+) +(\S+) `).FindStringSubmatch(summary)
		if row == nil || row[2] != w {
			t.Errorf("%s: summary.txt row %q, want EXPECTED %s", how, row, w)
		}
		if !strings.Contains(junit, "expected="+w) || !regexp.MustCompile(`(?s)name="`+regexp.QuoteMeta(id)+`".*?outcome=\S+ expected=`+w+`\b`).MatchString(junit) {
			t.Errorf("%s: junit.xml's %s lacks expected=%s", how, id, w)
		}
		if report.Unexpected(r) {
			cell := regexp.MustCompile(`<tr class="unmet"><td>[^\n]*` + regexp.QuoteMeta(id) + `[^\n]*?</td><td>[^<]*</td><td>([^<]*)</td>`).FindStringSubmatch(html)
			if cell == nil || cell[1] != w {
				t.Errorf("%s: report.html's unexpected row for %s: %q, want expected %s", how, id, cell, w)
			}
		}
	}
}
