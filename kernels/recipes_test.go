package kernels

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// litmusTableProblems checks docs/LITMUS.md's shape table (the rows whose
// fifth column is a strong kernel) against LitmusEnvs: the same strong
// kernels in the same order, each row naming exactly its kernel's mutants.
func litmusTableProblems(doc string) []string {
	var problems []string
	name := regexp.MustCompile("`(p[a-z0-9]+_u32_[a-z]+_(?:sys|dev))`")
	var rows [][]string
	for _, line := range strings.Split(doc, "\n") {
		cols := strings.Split(line, " | ")
		if len(cols) == 6 && name.MatchString(cols[4]) {
			rows = append(rows, cols)
		}
	}
	envs := LitmusEnvs()
	if len(rows) != len(envs) {
		problems = append(problems, fmt.Sprintf("docs/LITMUS.md's table has %d shapes, the manifest %d", len(rows), len(envs)))
	}
	for i := 0; i < len(rows) && i < len(envs); i++ {
		strong := name.FindStringSubmatch(rows[i][4])[1]
		var mutants []string
		for _, m := range name.FindAllStringSubmatch(rows[i][5], -1) {
			mutants = append(mutants, m[1])
		}
		if strong != envs[i].Name || !slices.Equal(mutants, envs[i].Mutants) {
			problems = append(problems, fmt.Sprintf("docs/LITMUS.md row %d: ", i+1)+strong+" "+strings.Join(mutants, ",")+
				", manifest: "+envs[i].Name+" "+strings.Join(envs[i].Mutants, ","))
		}
	}
	return problems
}

// TestLitmusTableMatchesManifest keeps docs/LITMUS.md's shape table (which
// repeats the manifest for the reader) true to kernels.LitmusEnvs, so a new
// litmus test's row cannot be forgotten or drift; a dropped row and a
// dropped mutant are planted and must be reported.
func TestLitmusTableMatchesManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "LITMUS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range litmusTableProblems(doc) {
		t.Error(p)
	}
	row := regexp.MustCompile("(?m)^\\| LB .*\n").FindString(doc)
	if row == "" || len(litmusTableProblems(strings.Replace(doc, row, "", 1))) == 0 {
		t.Error("a dropped row was not reported")
	}
	if len(litmusTableProblems(strings.Replace(doc, ", `plb_u32_acqrel_dev`", "", 1))) == 0 {
		t.Error("a dropped mutant was not reported")
	}
}

// recipeProblems checks the "How to add" sections of doc that say
// "Touches N paths": each names exactly N distinct paths in backquotes
// (a token with a slash, or a file at the root such as Makefile), each
// exists under root (a pattern such as scripts/fleet/<engine>/ with its
// placeholder read as any name), and every Test it cites is defined in
// tests (the source of every _test.go file).
func recipeProblems(root, doc, tests string) (problems []string, recipes int) {
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	claim := regexp.MustCompile(`Touches (\d+) paths`)
	tok := regexp.MustCompile("`([A-Za-z0-9_./<>-]+)`")
	cite := regexp.MustCompile("`(Test[A-Za-z]+)`")
	for _, sec := range strings.Split(doc, "\n### … ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		if end := strings.Index(body, "\n## "); end >= 0 {
			body = body[:end]
		}
		m := claim.FindStringSubmatch(body)
		if m == nil {
			continue
		}
		recipes++
		seen := map[string]bool{}
		for _, t := range tok.FindAllStringSubmatch(body, -1) {
			p := t[1]
			if !strings.Contains(p, "/") && !fileExists(filepath.Join(root, p)) {
				continue // an identifier, not a path
			}
			seen[p] = true
			glob := regexp.MustCompile(`<[a-z]+>`).ReplaceAllString(p, "*")
			if hits, _ := filepath.Glob(filepath.Join(root, strings.TrimSuffix(glob, "/"))); len(hits) == 0 {
				bad("How to add … %s: %s does not exist", title, p)
			}
		}
		if n, _ := strconv.Atoi(m[1]); n != len(seen) {
			bad("How to add … %s: says it touches %d paths, names %d %v", title, n, len(seen), sortedKeys(seen))
		}
		for _, c := range cite.FindAllStringSubmatch(body, -1) {
			if !strings.Contains(tests, "func "+c[1]+"(t *testing.T)") {
				bad("How to add … %s: cites %s, which no test file defines", title, c[1])
			}
		}
	}
	return problems, recipes
}

func fileExists(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestRecipesAreHonest keeps the counted recipes of docs/ARCHITECTURE.md
// (a litmus test, a CUDA allocation kind, a fleet engine) true: see
// recipeProblems. Plants: a path more than claimed, a path that does not
// exist, and a cited test that does not exist must each be reported.
func TestRecipesAreHonest(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var tests strings.Builder
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			src, err := os.ReadFile(p)
			tests.Write(src)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	problems, n := recipeProblems(root, doc, tests.String())
	for _, p := range problems {
		t.Error(p)
	}
	if n < 3 {
		t.Errorf("%d counted recipes, want a litmus test, a CUDA allocation kind and a fleet engine", n)
	}
	for _, plant := range []struct{ old, new string }{
		{"- `docs/LITMUS.md`: the shape's row", "- `specs/cases.go` and `docs/LITMUS.md`: the shape's row"},
		{"- `cmd/p2pfleet/engines.go`: its row", "- `cmd/p2pfleet/engine.go`: its row"},
		{"`TestDrainReadsTheRows`", "`TestDrainReadsTheRow`"},
	} {
		if !strings.Contains(doc, plant.old) {
			t.Fatalf("docs/ARCHITECTURE.md no longer holds %q: update the plant", plant.old)
		}
		if ps, _ := recipeProblems(root, strings.Replace(doc, plant.old, plant.new, 1), tests.String()); len(ps) == 0 {
			t.Errorf("planted %q was not reported", plant.new)
		}
	}
}
