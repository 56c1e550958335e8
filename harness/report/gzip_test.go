package report

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A committed run's results.json.gz reads as the results.json it holds
// (report.Read knows it by its bytes), and a broken archive is one error
// naming the file, never a panic.
func TestReadGzippedRecord(t *testing.T) {
	plain := filepath.Join("testdata", "host-results.json")
	want, err := Read(plain)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	dir := t.TempDir()
	gz := filepath.Join(dir, "results.json.gz")
	if err := os.WriteFile(gz, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(gz)
	if err != nil {
		t.Fatalf("Read(%s): %v", gz, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the gzipped record reads otherwise than the plain one")
	}
	cut := filepath.Join(dir, "cut.json.gz")
	if err := os.WriteFile(cut, z.Bytes()[:z.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cut); err == nil || !strings.Contains(err.Error(), cut) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a cut archive: %v, want one line naming %s", err, cut)
	}
}
