package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// File is one file of a case's evidence folder.
type File struct {
	Name string
	Data []byte
	Mode os.FileMode
}

// CaseEvidence is a case's evidence folder, made by the runner while the
// case's world still holds what it needs (each rank's trace and stderr):
// the evidence sink writes it to <Dir>/cases/<ID>/ and answers in Note
// what the case's detail must say (the folder dropped for want of room,
// or not written), "" when it was written. Only the pointer is an Event:
// the sink's answer is read by the emitter once Emit returns.
type CaseEvidence struct {
	ID    string
	Files []File
	Note  string
}

func (*CaseEvidence) event() {}

// Dropped is the note of a folder given up so results.json keeps its room.
const Dropped = "evidence dropped: --out is nearly full and results.json keeps its room"

// Evidence writes evidence folders into Dir/cases/ while Room says the
// record's room is free: results.json keeps every case on a full disk,
// and evidence is what gives way (a folder whose writing took that room
// is removed again).
type Evidence struct {
	Dir  string
	Room func() bool // nil: always room

	mu      sync.Mutex
	written int
}

// Handle writes a *CaseEvidence's folder and sets its Note.
func (s *Evidence) Handle(e Event) {
	ev, ok := e.(*CaseEvidence)
	if !ok || s.Dir == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Room != nil && !s.Room() {
		ev.Note = Dropped
		return
	}
	if ev.ID == "" || ev.ID != filepath.Base(ev.ID) || ev.ID == "." || ev.ID == ".." {
		// The folder is named by the id: one that is not a single folder
		// name would put files outside cases/.
		ev.Note = fmt.Sprintf("evidence not written: case id %q is not a folder name", ev.ID)
		return
	}
	dir := filepath.Join(s.Dir, "cases", ev.ID)
	err := s.write(dir, ev.Files)
	if NoSpace(err) || (s.Room != nil && !s.Room()) {
		os.RemoveAll(dir)
		ev.Note = Dropped
		return
	}
	if err != nil {
		ev.Note = "evidence not written: " + err.Error()
		return
	}
	s.written++
}

func (s *Evidence) write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, os.WriteFile(filepath.Join(dir, f.Name), f.Data, f.Mode))
	}
	return errors.Join(errs...)
}

// Written is how many folders the sink wrote whole.
func (s *Evidence) Written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}
