package amdabi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	got := map[string]string{"A": "1", "B": "absent", "C": "3", "D": "absent"}
	want := Table{{Name: "A", Value: 1}, {Name: "B", Value: 2, Since: "7.0"}, {Name: "C", Value: 4}, {Name: "D", Value: 5}}
	if d := Compare(want, got, "6.4.3"); len(d) != 2 || !strings.HasPrefix(d[0], "C: Go 4") || !strings.HasPrefix(d[1], "D: absent") {
		t.Fatalf("6.4.3: %q", d)
	}
	// The same absence is a mismatch on a version that should have it.
	if d := Compare(want, got, "7.2.4"); len(d) != 3 {
		t.Fatalf("7.2.4: %q", d)
	}
	// A printed line without a Go mirror is reported.
	got["E"] = "9"
	if d := Compare(want, got, "6.4.3"); len(d) != 3 || !strings.Contains(strings.Join(d, "\n"), "E: printed by") {
		t.Fatalf("unmirrored: %q", d)
	}
}

func TestLoadAndVersions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x-7.2.4.txt"), []byte("# c\nA 1\nB absent\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "x-6.4.3.txt"), []byte("A 1\n"), 0o644)
	vs, err := Versions(dir, "x")
	if err != nil || strings.Join(vs, ",") != "6.4.3,7.2.4" {
		t.Fatalf("%v %v", vs, err)
	}
	m, err := Load(filepath.Join(dir, "x-7.2.4.txt"))
	if err != nil || m["A"] != "1" || m["B"] != "absent" || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
	if !Less("6.4.3", "7.2.4") || !Less("7.2", "7.10") || Less("7.2.4", "7.2.4") {
		t.Fatal("Less")
	}
}
