package kernels

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: docs/ARCHITECTURE.md's picture (its
// first fenced block) names every Go package directory of the tree, and
// every package directory it names exists, so the picture cannot fall
// behind a package added, moved or removed.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, pic, ok := strings.Cut(string(b), "```\n")
	pic, _, ok2 := strings.Cut(pic, "```")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md has no fenced picture")
	}
	// A package is named at the start of a row ("harness/suite/",
	// "internal/device") or, on the rows below such a parent, as a word
	// ending in "/" (see below).
	named := map[string]bool{}
	parent := ""
	top := regexp.MustCompile(`^ ([a-z][a-z0-9]*(?:/[a-z][a-z0-9]*)*)/?(?:\s|$)`)
	sub := regexp.MustCompile(`^\(?([a-z][a-z0-9]*)/:?$`)
	for _, line := range strings.Split(pic, "\n") {
		if m := top.FindStringSubmatch(line); m != nil {
			parent = m[1]
			named[parent] = true
			continue
		}
		if parent == "" {
			continue
		}
		// Rows below a parent name its subpackages as words ending in "/":
		// "├─ cuda/", "report/ expect/ heatmap/", "htmlreport/: report.html".
		for _, f := range strings.Fields(line) {
			if m := sub.FindStringSubmatch(f); m != nil {
				named[parent+"/"+m[1]] = true
			}
		}
	}
	var pkgs []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "results") && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pkgs)
	seen := map[string]bool{}
	for _, p := range pkgs {
		if seen[p] {
			continue
		}
		seen[p] = true
		// cmd/NAME is named by NAME on cmd's rows.
		if dir, name, ok := strings.Cut(p, "/"); ok && dir == "cmd" {
			if !strings.Contains(pic, name) {
				t.Errorf("docs/ARCHITECTURE.md's picture does not name command %s", p)
			}
			continue
		}
		if !named[p] {
			t.Errorf("docs/ARCHITECTURE.md's picture does not name package %s", p)
		}
	}
	for p := range named {
		if p == "cmd" || strings.HasPrefix(p, "scripts") || p == "kernels/src" || p == "kernels/obj" {
			continue
		}
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md's picture names %s/, which holds no Go package", p)
		}
	}
}
