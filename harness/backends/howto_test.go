package backends

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// backendHowTo is docs/ARCHITECTURE.md's "### … a backend" list: every
// path it names in backquotes, patterns (rank/<name>/) kept.
func backendHowTo(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### … a backend\n")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "### … a backend" section`)
	}
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	if end := strings.Index(sec, "\n### "); end >= 0 {
		sec = sec[:end]
	}
	var paths []string
	for _, m := range regexp.MustCompile("`([a-z0-9_./-]+/[a-z0-9_./<>-]*)`").FindAllStringSubmatch(sec, -1) {
		paths = append(paths, m[1])
	}
	return paths
}

// goSources lists the repository's Go files, slash-separated and relative
// to root (generated or vendored trees aside: none are Go here): the
// non-test files, or with tests the *_test.go files only.
func goSources(t *testing.T, root string, tests bool) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") != tests {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// spelling lists the files of srcs, other than those the allowed paths
// cover (a path ending in "/" covers its folder), that spell name as a Go
// string, "name", in code or in a comment: what `grep -rn '"name"'` finds.
func spelling(srcs map[string]string, name string, allowed []string) []string {
	var bad []string
	for f, text := range srcs {
		if !strings.Contains(text, `"`+name+`"`) {
			continue
		}
		covered := slices.ContainsFunc(allowed, func(a string) bool {
			return f == a || strings.HasSuffix(a, "/") && strings.HasPrefix(f, a)
		})
		if !covered {
			bad = append(bad, f)
		}
	}
	slices.Sort(bad)
	return bad
}

// TestHowToAddABackendIsHonest keeps docs/ARCHITECTURE.md's "how to add a
// backend" list true. The list names the backend's folder and its row file
// (as rank/<name>/ and harness/backends/<name>.go); for every backend the
// files it names exist, and no non-test Go file outside them spells the
// backend's name as a string (issue 28: no literal of the host backend's
// name outside rank/host and the host row; for host that holds for the
// *_test.go files too, which spell it backends.HostName or, below harness,
// rank/host's Name). Such a file would be one more place a new backend has
// to touch. A row planted for a backend whose folder the list does not
// cover must be reported, so the check cannot pass vacuously.
func TestHowToAddABackendIsHonest(t *testing.T) {
	root := repoRoot(t)
	list := backendHowTo(t, root)
	for _, want := range []string{"rank/<name>/", "harness/backends/<name>.go", "rank/rank.go"} {
		if !slices.Contains(list, want) {
			t.Errorf("How to add … a backend does not name %s (it names %v)", want, list)
		}
	}
	srcs := goSources(t, root, false)
	tests := goSources(t, root, true)
	for _, b := range All {
		var allowed []string
		for _, p := range list {
			p = strings.ReplaceAll(p, "<name>", b.Name)
			allowed = append(allowed, p)
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("How to add … a backend names %s, which %s lacks", p, b.Name)
			}
		}
		for _, f := range spelling(srcs, b.Name, allowed) {
			t.Errorf("%s spells %q: adding a backend would touch it too; ask the row (harness/backends) instead", f, b.Name)
		}
		if b.Name != HostName {
			continue // GPU backends' names are still spelt in tests (fixtures of GPU results)
		}
		for _, f := range spelling(tests, b.Name, allowed) {
			t.Errorf("%s spells %q: use backends.HostName (below harness: rank/host's Name)", f, b.Name)
		}
	}
	// Planted: a test file that spells the host backend's name.
	planted := map[string]string{"harness/x_test.go": "NewRunner(\"" + HostName + "\", set, 1)"}
	if got := spelling(planted, HostName, []string{"rank/host/", "harness/backends/host.go"}); !slices.Equal(got, []string{"harness/x_test.go"}) {
		t.Errorf("a test file spelling %q was not reported: %v", HostName, got)
	}
	// Planted: cuda's row without its folder in the list.
	if got := spelling(srcs, CUDAName, []string{"harness/backends/cuda.go"}); !slices.Contains(got, "rank/cuda/backend.go") {
		t.Errorf("rank/cuda/backend.go spells \"cuda\" yet was not reported: %v", got)
	}
}
