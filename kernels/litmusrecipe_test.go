package kernels

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// recipeEdit is one step of a recipe: insert after the one place in file
// that holds after.
type recipeEdit struct{ file, after, insert string }

// litmusRecipe is docs/ARCHITECTURE.md's "… a litmus test" done for a new
// shape, pcorw (a copy of CoRR): one edit per file the recipe names, each
// an insertion after an anchor that today's file holds.
var litmusRecipe = []recipeEdit{
	{"kernels/manifest.go", "weak: new then old (1, 3)\",\n\t\tWeak: [2]uint64{1, 3}, Needs: [][2]uint64{{1, 1}, {1, 4}}}, // reader saw (0, 0): before the write; (1, 1): after it\n",
		"\t{Op: \"pcorw\", Strong: Relaxed, Doc: \"CoRW (the recipe test's copy of CoRR)\",\n\t\tWeak: [2]uint64{1, 3}, Needs: [][2]uint64{{1, 1}, {1, 4}}},\n"},
	{"kernels/src/kernels.cu", "P2P_K_LITMUS(pcorr, relaxed, dev, 2, P2P_CORR_BODY(p2p_st_relaxed_u32_dev, p2p_ld_relaxed_u32_dev), )\n",
		"P2P_K_LITMUS(pcorw, relaxed, sys, 2, P2P_CORR_BODY(p2p_st_relaxed_u32_sys, p2p_ld_relaxed_u32_sys), )\n" +
			"P2P_K_LITMUS(pcorw, relaxed, dev, 2, P2P_CORR_BODY(p2p_st_relaxed_u32_dev, p2p_ld_relaxed_u32_dev), )\n"},
	{"rank/host/litmus.go", "\tkernels.OpPCoRR: litmusEnvOp,\n", "\t\"pcorw\":         litmusEnvOp,\n"},
	{"rank/host/litmus.go", "\t\treturn 1 + 2*r1 + r2, me\n\t},\n",
		"\t\"pcorw\": func(a litmusAccess, me uint64, x, y unsafe.Pointer) (uint32, uint64) {\n\t\tif me == 0 {\n\t\t\ta.store(x, 1)\n" +
			"\t\t\treturn 1, me\n\t\t}\n\t\tr1 := a.load(x)\n\t\tr2 := a.load(x)\n\t\treturn 1 + 2*r1 + r2, me\n\t},\n"},
	{"docs/LITMUS.md", "`pcorr_u32_relaxed_dev` only (below) |\n",
		"| CoRW (the recipe test's copy) | x=1 (relaxed) | r0=x; r1=x (relaxed) | r0=1, r1=0 | `pcorw_u32_relaxed_sys` | `pcorw_u32_relaxed_dev` only |\n"},
}

// sectionPaths are the paths the "… <title>" recipe of
// docs/ARCHITECTURE.md names (as TestRecipesAreHonest reads them).
func sectionPaths(t *testing.T, root, title string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### … "+title+"\n")
	if !ok {
		t.Fatalf("docs/ARCHITECTURE.md has no %q recipe", "… "+title)
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	var paths []string
	for _, m := range regexp.MustCompile("`([A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+)`").FindAllStringSubmatch(sec, -1) {
		if !slices.Contains(paths, m[1]) && fileExists(filepath.Join(root, m[1])) {
			paths = append(paths, m[1])
		}
	}
	slices.Sort(paths)
	return paths
}

// copyModule copies the module under root to dst, less what no test here
// reads (VCS, recorded runs, build outputs).
func copyModule(t *testing.T, root, dst string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains([]string{"results", "out", "bin", "out-checks"}, rel)) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// applyEdits makes edits in the module at dir, less the ones to files in
// skip, and returns the files it changed.
func applyEdits(t *testing.T, dir string, edits []recipeEdit, skip ...string) []string {
	t.Helper()
	var changed []string
	for _, e := range edits {
		if slices.Contains(skip, e.file) {
			continue
		}
		p := filepath.Join(dir, e.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), e.after) != 1 {
			t.Fatalf("%s no longer holds the recipe's anchor once: %q (update the recipe test)", e.file, e.after)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.after, e.after+e.insert, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(changed, e.file) {
			changed = append(changed, e.file)
		}
	}
	slices.Sort(changed)
	return changed
}

func getenv(k string) string { return os.Getenv(k) }

// goIn runs the go command in dir and returns its output and whether it
// succeeded.
func goIn(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "P2PAT_RECIPE_RUN=1")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestLitmusRecipeRuns (issue 51 item 4) runs docs/ARCHITECTURE.md's
// "… a litmus test" recipe in a copy of the module: a new shape (pcorw)
// is one row in kernels/manifest.go's litmusShapes, its kernel bodies, its
// host body and its docs/LITMUS.md row, exactly the files the recipe
// names, with no golden file to regenerate. The derivation tests pass in
// the copy, and the host catalogue lists the new case. The same recipe
// without its docs/LITMUS.md row must fail (TestLitmusTableMatchesManifest),
// so the run proves each file is needed, not only that it is enough.
// (kernels/obj is not rebuilt: that needs the pinned compilers, make
// kernels; the tests of the built objects are left out here.)
func TestLitmusRecipeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and builds the suite (about a minute on two cores)")
	}
	if os.Getenv("P2PAT_RECIPE_RUN") != "" {
		t.Skip("inside a recipe run's copy")
	}
	root := repoRoot(t)
	named := sectionPaths(t, root, "a litmus test")
	dir := t.TempDir()
	copyModule(t, root, dir)
	bare := filepath.Join(t.TempDir(), "bare")
	copyModule(t, root, bare)
	if changed := applyEdits(t, dir, litmusRecipe); !slices.Equal(changed, named) {
		t.Errorf("the recipe run changed %v; docs/ARCHITECTURE.md's recipe names %v", changed, named)
	}
	derive := "^(TestLitmusTableMatchesManifest|TestLitmusNeeds|TestSourceMatchesManifest|TestRecipesAreHonest|TestHowToAddIsHonest)$"
	if out, ok := goIn(t, dir, "test", "-count=1", "-run", derive, "./kernels"); !ok {
		t.Errorf("with the new shape, the manifest's derivation tests fail:\n%s", out)
	}
	if out, ok := goIn(t, dir, "test", "-count=1", "-run", "^(TestEveryManifestKernelHasAHostBody|TestLitmus)", "./rank/host"); !ok {
		t.Errorf("with the new shape, the host body's tests fail:\n%s", out)
	}
	if out, ok := goIn(t, dir, "test", "-count=1", "-run", "^(TestCatalogueIdentityIsTodays|TestLitmusCasesDeriveFromManifest)$", "./specs"); !ok {
		t.Errorf("with the new shape, the catalogue's identity tests fail:\n%s", out)
	}
	bin := filepath.Join(t.TempDir(), "specs.test")
	if out, ok := goIn(t, dir, "test", "-c", "-o", bin, "./specs"); !ok {
		t.Fatalf("go test -c ./specs: %s", out)
	}
	list := exec.Command(bin, "--backend=host", "--list")
	list.Dir = dir
	out, _ := list.CombinedOutput()
	for _, id := range []string{"host.memfd.litmus.pcorw_u32_relaxed_sys", "host.memfd.litmus.pcorr_u32_relaxed_sys"} {
		if !strings.Contains(string(out), id) {
			t.Errorf("specs.test --backend=host --list lacks %s:\n%.2000s", id, out)
		}
	}

	applyEdits(t, bare, litmusRecipe, "docs/LITMUS.md")
	if out, ok := goIn(t, bare, "test", "-count=1", "-run", "^TestLitmusTableMatchesManifest$", "./kernels"); ok || !strings.Contains(out, "docs/LITMUS.md") {
		t.Errorf("the recipe without its docs/LITMUS.md row passed TestLitmusTableMatchesManifest (ok %v):\n%s", ok, out)
	}
}
