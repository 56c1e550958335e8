package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/cmd/internal/fixture"
	"p2patomics/harness/backends"
)

func write(t *testing.T, dir, results string) string {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, []byte(`{"schema":1,"environment":{"vendor":"`+backends.HostName+`"},"results":[`+results+`]}`), 0o644); err != nil {
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

// Issue 25 item 3: p2pbaseline records by --update-expectations' rule and
// refuses what it refuses: another stack's folder and a backend fallback
// (exit 2, one line, the folder untouched), a crash regression (exit 1),
// each unless the folder is new or --force. Before: it rewrote the NVIDIA
// baseline with host results and blessed the crash, exit 0.
func TestBaselineRefusesWhatUpdateRefuses(t *testing.T) {
	dir := t.TempDir()
	hostRun := func(name, env, outcome string) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		p := filepath.Join(d, "results.json")
		body := `{"schema":1,"environment":` + env + `,"results":[{"id":"host.memfd.a.b","labels":[],"outcome":"` + outcome + `","expected":"pass","detail":"","duration_s":0,"ranks":[]}]}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notRunCrash := filepath.Join(dir, "not-run-crash", "results.json")
	if b, err := os.ReadFile(hostRun("not-run-crash", `{"vendor":"`+backends.HostName+`","goarch":"amd64"}`, "crash")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(notRunCrash, bytes.Replace(b, []byte(`"expected":"pass"`), []byte(`"expected":"pass","verdict":"not-run"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := hostRun("plain", `{"vendor":"`+backends.HostName+`","goarch":"amd64"}`, "pass")
	crash := hostRun("crash", `{"vendor":"`+backends.HostName+`","goarch":"amd64"}`, "crash")
	fallback := hostRun("fallback", `{"vendor":"`+backends.HostName+`","goarch":"amd64","flags":{"backend":"auto"},"backends":[{"backend":"cuda","loaded":false,"used":false,"why":"no libcuda"},{"backend":"`+backends.HostName+`","loaded":true,"used":true,"why":"used: no GPU backend loaded"}]}`, "pass")
	folder := func(name, content string) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "fails.txt"), []byte(content), 0o644)
		os.WriteFile(filepath.Join(d, "cases.txt"), []byte("host.memfd.a.b\n"), 0o644)
		return d
	}
	nv := folder("nv", "# stack: vendor=nvidia arch=sm_90 driver=580\ncuda.vmm.x.y,crash\n")
	host := folder(backends.HostName, "# stack: vendor=host arch=amd64\n")
	for _, c := range []struct {
		name, dir, results string
		force              bool
		rc                 int
		says               string
	}{
		{"another stack's folder", nv, plain, false, 2, "stack is not this run's"},
		{"a backend fallback", host, fallback, false, 2, "fell back to the host backend"},
		{"a crash regression", host, crash, false, 1, "refuses to bless 1 regression"},
		// Issue 49 S3: a crash recorded with the verdict not-run (an
		// interruption's, for a case that finished) was blessed, exit 0.
		{"a crash recorded as not-run", host, notRunCrash, false, 1, "refuses to bless 1 regression"},
		{"another stack's folder, --force", nv, plain, true, 0, ""},
		{"a new folder after a fallback", filepath.Join(dir, "new"), fallback, false, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(filepath.Join(c.dir, "fails.txt"))
			args := []string{c.dir, c.results}
			if c.force {
				args = append([]string{"--force"}, args...)
			}
			var out, errb bytes.Buffer
			rc := run(args, &out, &errb)
			if rc != c.rc || !strings.Contains(errb.String(), c.says) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", rc, errb.String(), c.rc, c.says)
			}
			after, _ := os.ReadFile(filepath.Join(c.dir, "fails.txt"))
			if rc != 0 && (strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 || !bytes.Equal(before, after)) {
				t.Errorf("refused, but stderr %q (want one line) or fails.txt changed", errb.String())
			}
			if rc == 0 && !strings.Contains(string(after), "vendor=host") {
				t.Errorf("written, but fails.txt is %q", after)
			}
		})
	}
}

// Issue 38 item 9: --help is the usage on stdout and exit 0 (it was exit 2
// with the usage on stderr); a bad flag stays one line, exit 2.
func TestHelpExitsZero(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "usage: p2pbaseline") || errb.Len() != 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"--nope", "a", "b"}, &out, &errb); code != 2 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Errorf("--nope: exit %d, stderr %q", code, errb.String())
	}
}

// Issue 49 B6: DIR is never written through another user's link: a
// nobody-owned symlink bl in a sticky folder, pointing at another folder,
// is refused in one line, exit 2, that folder left empty. Before:
// cases.txt, fails.txt and durations.txt were written into it.
func TestBaselineRefusesAForeignFolderLink(t *testing.T) {
	target := t.TempDir()
	link := fixture.ForeignLink(t, "bl", target)
	var out, errb bytes.Buffer
	if code := run([]string{link, fixture.Path}, &out, &errb); code == 0 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 || !strings.Contains(errb.String(), "belongs to uid 65534") {
		t.Errorf("exit %d, stderr %q; want a one-line refusal", code, errb.String())
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
