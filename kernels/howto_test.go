package kernels

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// howTo returns docs/ARCHITECTURE.md's "How to add" subsections by title
// ("an atomic op", ...), each as the file paths it names in backquotes.
func howTo(t *testing.T, root string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## How to add")
	if start < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "## How to add" section`)
	}
	doc = doc[start+1:]
	if end := strings.Index(doc[2:], "\n## "); end >= 0 {
		doc = doc[:end+2]
	}
	path := regexp.MustCompile("`([a-z0-9_./-]+/[a-z0-9_./<>-]*)`")
	out := map[string][]string{}
	for _, sec := range strings.Split(doc, "\n### … ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		for _, m := range path.FindAllStringSubmatch(body, -1) {
			if !strings.Contains(m[1], "<") { // a pattern such as specs/<family>.go
				out[title] = append(out[title], m[1])
			}
		}
	}
	return out
}

// rmwIdents maps each RMW op to the name of its constant in manifest.go.
func rmwIdents(t *testing.T, root string) map[Op]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "kernels", "manifest.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[Op]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			if Op(v).IsRMW() {
				ids[Op(v)] = vs.Names[0].Name
			}
		}
		return true
	})
	return ids
}

// unmentioned lists, per Go file, the identifiers it never mentions.
func unmentioned(t *testing.T, root string, files []string, idents []string) map[string][]string {
	t.Helper()
	missing := map[string][]string{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		word := regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)
		seen := map[string]bool{}
		for _, w := range word.FindAllString(string(b), -1) {
			seen[w] = true
		}
		for _, id := range idents {
			if !seen[id] {
				missing[f] = append(missing[f], id)
			}
		}
	}
	return missing
}

// TestHowToAddIsHonest keeps docs/ARCHITECTURE.md's "How to add" lists
// true: every file they name exists, and every Go file named for adding an
// atomic op mentions every op of kernels.RMW, so an op added to the table
// alone fails here naming the files still to touch. A planted op that no
// file knows must be reported missing from each of them.
func TestHowToAddIsHonest(t *testing.T) {
	root := repoRoot(t)
	secs := howTo(t, root)
	for _, title := range []string{"an atomic op", "a spec family", "an allocation kind"} {
		if len(secs[title]) == 0 {
			t.Errorf("How to add … %s: names no file", title)
		}
	}
	for title, files := range secs {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("How to add … %s: %s does not exist", title, f)
			}
		}
	}
	ids := rmwIdents(t, root)
	if len(ids) != len(RMW) {
		t.Fatalf("found constants for %d of %d RMW ops: %v", len(ids), len(RMW), ids)
	}
	var idents []string
	for _, id := range ids {
		idents = append(idents, id)
	}
	ops := secs["an atomic op"]
	for f, miss := range unmentioned(t, root, ops, idents) {
		t.Errorf("%s (named under How to add … an atomic op) never mentions %v", f, miss)
	}
	planted := unmentioned(t, root, ops, []string{"OpNand"})
	goFiles := 0
	for _, f := range ops {
		if strings.HasSuffix(f, ".go") {
			goFiles++
		}
	}
	if goFiles < 4 || len(planted) != goFiles {
		t.Errorf("a planted op was missed: %d of %d Go files reported (%v)", len(planted), goFiles, planted)
	}
}
