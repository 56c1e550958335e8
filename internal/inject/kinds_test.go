package inject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kindExamples is a rule of every kind, aimed at probeTarget, for the seam
// test: a new row needs its example here.
var kindExamples = map[string]string{
	Drop: "drop:probe_k", DropEvery: "drop-every:1", Fail: "fail:probe_k=5", Noop: "noop:probe_k",
	FailEvery: "fail-every:probe_k=5/1", CopyTimes: "copy-times:2", Stretch: "stretch:probe_k=2",
	Hang: "hang:probe_k", HangAt: "hang-at:probe_k=1", CorruptRead: "corrupt-read:0",
}

// seamProbes call each seam once, as the rank's code does, on probe_k.
var seamProbes = map[string]func(){
	"DropLaunch":    func() { DropLaunch("probe_k") },
	"Call":          func() { Call("probe_k") },
	"Wedge":         func() { Wedge("probe_k") },
	"CopyPlan":      func() { CopyPlan(4096) },
	"StretchOf":     func() { StretchOf("probe_k") },
	"CorruptReadIn": func() { CorruptReadIn(make([]byte, 8)) },
}

// TestEveryRuleKindFiresAtItsSeam (issue 51 item 4): every row of
// ruleKinds parses its example back to its own text, and installed alone
// the rule acts at the seam its row names: the seam's one call counts a
// firing. A row that parses but no seam acts on (the 2026-12d review's
// planted delay:<symbol> passed every test) fails here until it is wired,
// and a row naming a seam no code outside this package calls fails too.
func TestEveryRuleKindFiresAtItsSeam(t *testing.T) {
	t.Cleanup(func() { Set(nil) })
	callers := seamCallers(t)
	for _, rk := range ruleKinds {
		ex, ok := kindExamples[rk.name]
		if !ok {
			t.Errorf("kind %s: no example in kindExamples", rk.name)
			continue
		}
		rules, err := Parse(ex)
		if err != nil || len(rules) != 1 || rules[0].Kind != rk.name || rules[0].String() != ex {
			t.Errorf("kind %s: Parse(%q) = %v, %v; want the one rule, read back as written", rk.name, ex, rules, err)
			continue
		}
		probe, ok := seamProbes[rk.seam]
		if !ok {
			t.Errorf("kind %s: seam %q is not one of this package's seams", rk.name, rk.seam)
			continue
		}
		Set(rules)
		probe()
		if f := Fired(); len(f) != 1 || f[0] == 0 {
			t.Errorf("kind %s: installed, the seam %s never acted on it (fired %v): wire it", rk.name, rk.seam, f)
		}
		Set(nil)
		if !callers[rk.seam] {
			t.Errorf("kind %s: no code outside internal/inject calls its seam inject.%s", rk.name, rk.seam)
		}
	}
}

// seamCallers reports which seams non-test code outside this package calls
// (inject.<Seam>().
func seamCallers(t *testing.T) map[string]bool {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "results" || p == filepath.Join(root, "internal", "inject")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		for seam := range seamProbes {
			if strings.Contains(string(b), "inject."+seam+"(") {
				out[seam] = true
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRuleKindsAreDocumented: every row's syntax is in the package doc
// (inject.go) and in docs/FAULTS.md, so a new rule cannot be left out of
// either.
func TestRuleKindsAreDocumented(t *testing.T) {
	for _, f := range []string{"inject.go", filepath.Join("..", "..", "docs", "FAULTS.md")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, rk := range ruleKinds {
			if !strings.Contains(string(b), rk.syntax) {
				t.Errorf("%s does not name %s", f, rk.syntax)
			}
		}
	}
}
