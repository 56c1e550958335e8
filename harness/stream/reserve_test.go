package stream_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"p2patomics/harness/report"
	"p2patomics/harness/stream"
)

// The reserve takes the record's room on RunStarted (never more than half
// the free space), counts it as kept while it holds it, says "full" once
// and for good, and gives the room back on RunDone, before the record sink
// fed after it writes.
func TestReserveSink(t *testing.T) {
	dir := t.TempDir()
	free := uint64(1 << 20)
	var stderr bytes.Buffer
	r := &stream.Reserve{Dir: dir, Need: 256 << 10, Stderr: &stderr, Free: func(string) (uint64, error) { return free, nil }}
	f := stream.NewFanout(r)
	f.Emit(stream.RunStarted{Total: 3})
	fi, err := os.Stat(filepath.Join(dir, stream.ReserveFile))
	if err != nil || r.Reserved() != 256<<10 || fi.Size() != 256<<10 {
		t.Fatalf("reserve after RunStarted: %v, %d bytes held, file %v", err, r.Reserved(), fi)
	}
	// The reserve is kept: 64 KiB free besides it is room enough.
	free = 64 << 10
	if !r.Room() || r.Full() {
		t.Fatal("64 KiB free with the record's room reserved: no room")
	}
	free = 32 << 10
	os.WriteFile(filepath.Join(dir, "results.json"), make([]byte, 20<<10), 0o644)
	if r.Room() || !r.Full() || strings.Count(stderr.String(), "nearly full") != 1 {
		t.Fatalf("32 KiB free: room %v full %v, stderr %q", r.Room(), r.Full(), stderr.String())
	}
	// Issue 49 U15: the line gives results.json's real size beside the
	// room kept ("results.json keeps 1490 KiB" on a 500 KiB disk).
	if !strings.Contains(stderr.String(), "(32 KiB free, under the 64 KiB kept for the final results.json (20 KiB now;") {
		t.Errorf("the nearly-full line: %q", stderr.String())
	}
	free = 1 << 30
	if r.Room() || strings.Count(stderr.String(), "nearly full") != 1 {
		t.Errorf("room came back after full, or said twice: %q", stderr.String())
	}
	f.Emit(stream.RunDone{Report: &report.Report{}})
	if _, err := os.Stat(filepath.Join(dir, stream.ReserveFile)); !os.IsNotExist(err) || r.Reserved() != 0 {
		t.Errorf("RunDone left the reserve: %v, %d bytes", err, r.Reserved())
	}
	// Half the free space at most.
	r2 := &stream.Reserve{Dir: t.TempDir(), Need: 1 << 20, Free: func(string) (uint64, error) { return 100 << 10, nil }}
	r2.Handle(stream.RunStarted{})
	if r2.Reserved() != 50<<10 {
		t.Errorf("reserve on a nearly full disk: %d bytes, want half the free 50 KiB", r2.Reserved())
	}
}

// The evidence writer writes a folder while there is room, drops it (and
// says so in its answer) when there is none or when writing it took the
// room, and says why a folder it could not write was not written.
func TestEvidenceWriter(t *testing.T) {
	dir := t.TempDir()
	room := true
	s := &stream.Evidence{Dir: dir, Room: func() bool { return room }}
	files := []stream.File{{Name: "repro.sh", Data: []byte("#!/bin/sh\n"), Mode: 0o755}, {Name: "kernel.log", Data: []byte("# none\n"), Mode: 0o644}}
	id := "host.memfd.counter.add"
	if note := s.Write(id, files); note != "" || s.Written() != 1 {
		t.Fatalf("folder with room: note %q, written %d", note, s.Written())
	}
	if fi, err := os.Stat(filepath.Join(dir, "cases", id, "repro.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("repro.sh: %v %v", fi, err)
	}
	room = false
	if note := s.Write("host.memfd.counter.sub", files); note != stream.Dropped {
		t.Errorf("no room: note %q", note)
	}
	if _, err := os.Stat(filepath.Join(dir, "cases", "host.memfd.counter.sub")); !os.IsNotExist(err) {
		t.Errorf("a dropped folder exists: %v", err)
	}
	// Writing took the room: the folder is removed again.
	calls := 0
	s.Room = func() bool { calls++; return calls == 1 }
	note := s.Write("host.memfd.counter.xchg", files)
	if _, err := os.Stat(filepath.Join(dir, "cases", "host.memfd.counter.xchg")); note != stream.Dropped || !os.IsNotExist(err) {
		t.Errorf("a folder that took the room: note %q, stat %v", note, err)
	}
	// Not writable: the note says why.
	s.Room = nil
	bad := &stream.Evidence{Dir: filepath.Join(dir, "cases", id, "repro.sh")}
	if note := bad.Write("x", files); !strings.HasPrefix(note, "evidence not written: ") {
		t.Errorf("unwritable: note %q", note)
	}
	// An id that is not one folder name writes nothing outside cases/.
	for _, id := range []string{"../escape", "a/b", "..", ""} {
		if note := s.Write(id, files); !strings.Contains(note, "is not a folder name") {
			t.Errorf("id %q: note %q", id, note)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); !os.IsNotExist(err) {
		t.Errorf("a folder outside cases/: %v", err)
	}
	if !stream.NoSpace(syscall.ENOSPC) || !stream.NoSpace(&os.PathError{Err: syscall.EDQUOT}) || stream.NoSpace(errors.New("x")) {
		t.Error("NoSpace")
	}
}

// The final record is RunDone's, written after an interrupt stopped the
// checkpoints; a disk with no room for it beside the last checkpoint gets
// the record trimmed in its place, never no record.
func TestCheckpointFinalWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	rs := []report.Result{result("host.memfd.counter.add", report.Pass)}
	rs[0].Ranks = []report.Rank{{StderrTail: strings.Repeat("e", 2000)}}
	snap := func() *report.Report {
		return &report.Report{Schema: report.Schema, State: report.StateRunning, Results: rs}
	}
	c := &stream.Checkpoint{Path: path, Snapshot: snap, Stderr: os.Stderr}
	f := stream.NewFanout(c)
	if c.FinalErr() == nil {
		t.Error("FinalErr before RunDone: nil")
	}
	f.Emit(stream.RunStarted{Total: 1})
	if rep, err := report.Read(path); err != nil || rep.State != report.StateRunning {
		t.Fatalf("RunStarted wrote no first record: %v", err)
	}
	f.Emit(stream.Interrupted{Signal: "SIGTERM"})
	rs[0].Outcome = report.Fail
	f.Emit(stream.CaseDone{Result: rs[0]})
	if rep, _ := report.Read(path); rep.Results[0].Outcome != report.Pass {
		t.Error("a checkpoint after Interrupted")
	}
	sum := report.SummarizeRun(rs, "", "", "SIGTERM")
	f.Emit(stream.RunDone{Report: &report.Report{Schema: report.Schema, Results: rs, Summary: &sum}})
	rep, err := report.Read(path)
	if err != nil || c.FinalErr() != nil || rep.Summary == nil || rep.Results[0].Outcome != report.Fail {
		t.Fatalf("final record: %v %v %+v", err, c.FinalErr(), rep)
	}
	trimmed := &report.Report{Results: append([]report.Result(nil), rs...)}
	trimmed = stream.Trimmed(trimmed)
	if tail := trimmed.Results[0].Ranks[0].StderrTail; len(tail) > 520 || trimmed.Environment.Trimmed == "" {
		t.Errorf("Trim: tail of %d bytes, trimmed %q", len(tail), trimmed.Environment.Trimmed)
	}
}

// The world log keeps world events in time order, stable within a second.
func TestWorldLogSink(t *testing.T) {
	w := &stream.WorldLog{}
	f := stream.NewFanout(w)
	f.Emit(stream.WorldEvent{Event: report.WorldEvent{Time: "2026-12-04T00:00:02Z", Detail: "b"}})
	f.Emit(stream.WorldEvent{Event: report.WorldEvent{Time: "2026-12-04T00:00:01Z", Detail: "a"}})
	f.Emit(stream.WorldEvent{Event: report.WorldEvent{Time: "2026-12-04T00:00:02Z", Detail: "c"}})
	f.Emit(stream.CaseStarted{ID: "x"})
	var got []string
	for _, e := range w.Events() {
		got = append(got, e.Detail)
	}
	if strings.Join(got, "") != "abc" {
		t.Errorf("world log order %v, want a b c", got)
	}
}
