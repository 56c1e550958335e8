package specs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// specsDir is the specs/ source folder, for the tests that read the
// source tree (labels.go, harness/report's golden results). These tests
// run in go test (working directory specs/) and in every suite run
// (bin/specs.test runs its own Go tests first, from the repository root or
// anywhere else), so a path relative to the working directory is wrong
// half the time. Tried in turn: the folder this file was compiled from
// (runtime.Caller; the tree the binary was built from), then specs/ of the
// p2patomics checkout the working directory is in (a binary built
// elsewhere and carried into a checkout). With neither, the test skips
// saying so: the binary travelled without its source, and a check of the
// source cannot be made.
func specsDir(t *testing.T) string {
	t.Helper()
	var tried []string
	if dir := compiledDir(); dir != "" {
		if isSpecsDir(dir) {
			return dir
		}
		tried = append(tried, dir)
	} else {
		tried = append(tried, "no compiled-in path (built with -trimpath)")
	}
	if root := checkoutRoot(); root != "" {
		dir := filepath.Join(root, "specs")
		if isSpecsDir(dir) {
			return dir
		}
		tried = append(tried, dir)
	}
	wd, _ := os.Getwd()
	t.Skipf("the p2patomics source tree is not here (tried %s, and no checkout above %s): this check reads specs/labels.go and harness/report/testdata", strings.Join(tried, ", "), wd)
	return ""
}

// specsSources are the non-test Go files of specs/ (specsDir), by base
// name, for the checks that no source spells what it should derive (a
// pair label, a litmus kernel's name). A folder with none fails the test:
// such a check must not pass on nothing.
func specsSources(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(specsDir(t), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	if len(out) == 0 {
		t.Fatalf("no Go source in %s", specsDir(t))
	}
	return out
}

// compiledDir is the folder this file was compiled from, "" when the
// binary does not know it (-trimpath leaves a module path).
func compiledDir() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Dir(file)
	}
	return ""
}

// isSpecsDir: dir holds this package's source (labels.go, which the label
// check parses).
func isSpecsDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "labels.go"))
	return err == nil && fi.Mode().IsRegular()
}

// checkoutRoot is the nearest folder at or above the working directory
// whose go.mod declares module p2patomics, or "".
func checkoutRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
			if strings.TrimSpace(first) == "module p2patomics" {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
		d = filepath.Dir(d)
	}
}

// TestSpecsDirFromAnywhere: specsDir finds the source from the repository
// root, from specs/ and from a folder outside any checkout (through the
// compiled-in path); checkoutRoot finds the checkout from its root and
// nothing outside one.
func TestSpecsDirFromAnywhere(t *testing.T) {
	want := specsDir(t)
	dirs := []string{filepath.Dir(want), want}
	if compiledDir() != "" {
		dirs = append(dirs, t.TempDir()) // found through the compiled-in path
	}
	for _, wd := range dirs {
		t.Chdir(wd)
		if got := specsDir(t); got != want {
			t.Errorf("from %s: specsDir = %s, want %s", wd, got, want)
		}
	}
	t.Chdir(filepath.Dir(want))
	if root := checkoutRoot(); root != filepath.Dir(want) {
		t.Errorf("from the repository root: checkoutRoot = %q, want %q", root, filepath.Dir(want))
	}
	t.Chdir(t.TempDir())
	if root := checkoutRoot(); root != "" {
		t.Errorf("outside any checkout: checkoutRoot = %q, want none", root)
	}
}
