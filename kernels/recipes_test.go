package kernels

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
