package stream_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// journalRun is a checkpoint over n planned cases (all incomplete), the
// plan written; done(i, o) finishes case i.
type journalRun struct {
	path    string
	results []report.Result
	events  []report.WorldEvent
	c       *stream.Checkpoint
	f       *stream.Fanout
}

func newJournalRun(t *testing.T, dir string, n int) *journalRun {
	t.Helper()
	j := &journalRun{path: filepath.Join(dir, "results.json")}
	for i := 0; i < n; i++ {
		r := result("host.memfd.counter.c"+string(rune('a'+i)), report.Incomplete)
		j.results = append(j.results, r)
	}
	j.c = &stream.Checkpoint{Path: j.path, Stderr: os.Stderr, Snapshot: j.snapshot}
	j.f = stream.NewFanout(j.c)
	j.f.Emit(stream.RunStarted{})
	return j
}

func (j *journalRun) snapshot() *report.Report {
	env := report.EnvironmentOf(map[string]any{"vendor": backends.HostName})
	env.GOARCH = fmt.Sprintf("arch%d", len(j.events))
	return &report.Report{Schema: report.Schema, State: report.StateRunning, Environment: env,
		Results: append([]report.Result(nil), j.results...), WorldEvents: append([]report.WorldEvent(nil), j.events...)}
}

func (j *journalRun) done(i int, o report.Outcome) {
	j.results[i].Outcome = o
	j.f.Emit(stream.CaseDone{Result: j.results[i]})
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Issue 52 item 3: after the plan, a case costs a line appended to the
// journal, not a rewrite of results.json (the same file stays: the old
// code's atomic rewrite replaced it on every case, 5-13 ms a case at 371
// cases). report.Read reads results.json and its journal as the record
// stood after each case, the environment and world events included; the
// final record replaces both, byte for byte what Report.Write writes.
// Planted: the old Checkpoint (a whole rewrite per CaseDone) fails the
// inode check; a Read without the journal fails the "after case" reads.
func TestCheckpointJournalAppendsACase(t *testing.T) {
	dir := t.TempDir()
	j := newJournalRun(t, dir, 3)
	ino := inode(t, j.path)
	j.done(0, report.Pass)
	j.events = append(j.events, report.WorldEvent{Time: "2026-12-06T03:00:00Z", Kind: report.EventRespawn})
	j.done(1, report.Fail)
	if inode(t, j.path) != ino {
		t.Fatal("results.json was rewritten for a case: the journal should have taken it")
	}
	jb, err := os.ReadFile(report.JournalPath(j.path))
	if err != nil || bytes.Count(jb, []byte("\n")) != 2 { // 2 results, the second with the environment and world events
		t.Fatalf("journal: %v, %d lines:\n%s", err, bytes.Count(jb, []byte("\n")), jb)
	}
	rep, err := report.Read(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results[0].Outcome != report.Pass || rep.Results[1].Outcome != report.Fail || rep.Results[2].Outcome != report.Incomplete ||
		len(rep.WorldEvents) != 1 || rep.Environment.GOARCH != "arch1" {
		t.Fatalf("read after two cases: %+v", rep)
	}
	// A rerun changes a result without a case finishing: Write gives it a line.
	j.results[1].Outcome = report.Pass
	j.c.Write()
	if rep, err = report.Read(j.path); err != nil || rep.Results[1].Outcome != report.Pass {
		t.Fatalf("after Write: %v %+v", err, rep)
	}
	// A torn last line (killed mid-write, disk full) is left out.
	f, _ := os.OpenFile(report.JournalPath(j.path), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"result":{"id":"host.memfd.counter.cc","outc`)
	f.Close()
	if rep, err = report.Read(j.path); err != nil || len(rep.Results) != 3 {
		t.Fatalf("a torn last line: %v %+v", err, rep)
	}
	// The final record: results.json whole, the journal gone.
	final := j.snapshot()
	final.State = ""
	j.f.Emit(stream.RunDone{Report: final})
	if err := j.c.FinalErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(report.JournalPath(j.path)); !os.IsNotExist(err) {
		t.Errorf("the journal outlived the final record: %v", err)
	}
	want := filepath.Join(dir, "want.json")
	final.Write(want)
	a, _ := os.ReadFile(j.path)
	b, _ := os.ReadFile(want)
	if !bytes.Equal(a, b) {
		t.Error("the final results.json is not Report.Write's bytes")
	}
}

// A journal line that is not a whole entry mid-file is an error naming
// the journal, never a record read short.
func TestReadRefusesABadJournalLine(t *testing.T) {
	dir := t.TempDir()
	j := newJournalRun(t, dir, 2)
	j.done(0, report.Pass)
	f, _ := os.OpenFile(report.JournalPath(j.path), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{nonsense\n")
	f.Close()
	j.done(1, report.Pass)
	if _, err := report.Read(j.path); err == nil || !strings.Contains(err.Error(), "results.journal") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a bad journal line read as %v", err)
	}
}

// A parent SIGKILLed after some cases leaves results.json and its journal;
// report.Read (every tool's reader) gives every case finished before the
// kill. The child is this test binary, killing itself mid-run.
func TestCheckpointJournalSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv("P2PAT_TEST_JOURNAL_CHILD"); dir != "" {
		j := newJournalRun(t, dir, 4)
		j.done(0, report.Pass)
		j.done(1, report.Fail)
		j.done(2, report.Pass)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointJournalSurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), "P2PAT_TEST_JOURNAL_CHILD="+dir)
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child did not die of SIGKILL: %v", err)
	}
	rep, err := report.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []report.Outcome
	for _, r := range rep.Results {
		got = append(got, r.Outcome)
	}
	if rep.State != report.StateRunning || len(got) != 4 || got[0] != report.Pass || got[1] != report.Fail || got[2] != report.Pass || got[3] != report.Incomplete {
		t.Fatalf("a SIGKILLed run reads as %s %v", rep.State, got)
	}
}
