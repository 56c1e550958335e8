package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, dir, results string) string {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, []byte(`{"schema":1,"environment":{"vendor":"host"},"results":[`+results+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `{"id":"host.memfd.a.b","labels":[],"outcome":"fail","expected":"pass","detail":"","duration_s":0,"ranks":[]}`

// Issue 18 item 10: nothing unvalidated reaches an expectation folder.
func TestBaselineValidatesBeforeWriting(t *testing.T) {
	bad := map[string]string{
		"newline_outcome": strings.Replace(good, `"outcome":"fail"`, `"outcome":"fail\nhost.memfd.injected.case"`, 1),
		"unknown_outcome": strings.Replace(good, `"outcome":"fail"`, `"outcome":"meh"`, 1),
		"odd_id":          strings.Replace(good, `host.memfd.a.b`, `Host.memfd/a\u001b[31m`, 1),
		"duplicate_id":    good + "," + good,
	}
	for name, res := range bad {
		dir := t.TempDir()
		p := write(t, dir, res)
		exp := filepath.Join(dir, "exp")
		var out, errb bytes.Buffer
		if code := run([]string{exp, p}, &out, &errb); code != 2 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line", name, code, errb.String())
		}
		if _, err := os.Stat(exp); !os.IsNotExist(err) {
			t.Errorf("%s: the expectation folder was written", name)
		}
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{filepath.Join(dir, "exp"), write(t, dir, good)}, &out, &errb); code != 0 {
		t.Fatalf("a valid results.json: exit %d: %s", code, errb.String())
	}
	// A FIFO is refused at once, not read forever.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan int, 1)
	go func() { done <- run([]string{filepath.Join(dir, "exp2"), fifo}, &out, &errb) }()
	select {
	case code := <-done:
		if code != 2 {
			t.Fatalf("FIFO: exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("p2pbaseline blocked on a FIFO")
	}
}
