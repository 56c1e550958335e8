package harness_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
)

// Issue 35 item 4 (break N1), end to end: a gated run in which rank 1 is
// killed by SIGSEGV before its hello, in the world start of a case the
// baseline passes, FAILs; the case is a crash (new-flake: its rerun in a
// fresh world passed, and a crash is never forgiven), named by rank and
// pid; results.json holds the start crash as a typed world event and
// junit.xml carries it. At ce5f99b the start was retried and the run
// passed with exit 0, the record holding nothing of it.
func TestGatedRunFailsOnARankDeathAtWorldStart(t *testing.T) {
	const id = "host.memfd.t.needs_world"
	out, pid := gatedRunWithStartCrash(t, id)
	rep, err := report.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	want := fmt.Sprintf("world start: rank 1 (pid %d) killed by SIG", pid)
	if res.Outcome != report.Crash || res.Verdict != report.NewFlake || !strings.HasPrefix(res.Detail, want) {
		t.Fatalf("the case: %s (%s) %q, want crash, new-flake, %q", res.Outcome, res.Verdict, res.Detail, want)
	}
	evs := rep.WorldEvents
	if len(evs) != 1 || evs[0].Kind != report.EventStartCrash || evs[0].Rank == nil || *evs[0].Rank != 1 || evs[0].Pid != pid || evs[0].Case != id || evs[0].Signal == "" {
		t.Fatalf("results.json world_events %+v, want one start-crash of rank 1 (pid %d) for %s", evs, pid, id)
	}
	b, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			SystemErr string `xml:"system-err"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil || len(doc.Suites) != 1 ||
		!strings.Contains(doc.Suites[0].SystemErr, fmt.Sprintf("start-crash rank 1 (pid %d)", pid)) {
		t.Fatalf("junit.xml's system-err lacks the start crash (%v):\n%s", err, b)
	}
}

// gatedRunWithStartCrash runs case id gated against a baseline that passes
// it, rank 1 of its first world start killed by SIGSEGV before its hello,
// reruns it, and finishes the run, which must exit 1; it returns --out and
// the killed rank's pid.
func gatedRunWithStartCrash(t *testing.T, id string) (out string, pid int) {
	var mu sync.Mutex
	kills := 1
	defer harness.InjectStart(func(c *exec.Cmd) error {
		err := c.Start()
		mu.Lock()
		defer mu.Unlock()
		if err == nil && kills > 0 && strings.HasSuffix(c.Env[0], "=1") { // rank 1
			kills--
			pid = c.Process.Pid
			c.Process.Signal(syscall.SIGSEGV)
		}
		return err
	})()
	base := t.TempDir()
	out = filepath.Join(t.TempDir(), "out")
	os.WriteFile(filepath.Join(base, "cases.txt"), []byte("# stack: vendor=host arch="+runtime.GOARCH+"\n"+id+"\n"), 0o644)
	os.MkdirAll(out, 0o755)
	cat := func(_ *suite.Options, be, kind string) []*harness.Case {
		return []*harness.Case{{ID: id, Case: report.Case{Backend: be, Kind: kind, Ranks: 2}, Expected: report.Pass, Timeout: 10 * time.Second,
			Run: func(c *harness.Ctx) error { _, err := c.Shared(0, 4096, true); return err }}}
	}
	run, err := suite.NewRun(&suite.Options{Backend: backends.HostName, Alloc: "memfd", Case: id, Ranks: 2, Repeat: 1, Expectations: base, Out: out}, "", cat)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	run.Stdout = &stdout
	for _, g := range run.Plan.Groups {
		for _, c := range g.Cases {
			run.Execute(c)
		}
	}
	run.RerunPending()
	if code := run.Finish(); code != 1 {
		t.Fatalf("exit %d, want 1 (FAIL)\n%s", code, stdout.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return out, pid
}
