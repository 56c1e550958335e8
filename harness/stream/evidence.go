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

// Dropped is the note of a folder given up so results.json keeps its room.
const Dropped = "evidence dropped: --out is nearly full and results.json keeps its room"

// Evidence writes evidence folders into Dir/cases/ while Room says the
// record's room is free: results.json keeps every case on a full disk,
// and evidence is what gives way (a folder whose writing took that room
// is removed again). It is a collaborator the runner calls while the
// case's world still holds what the folder needs (each rank's trace and
// stderr), not a sink: its answer is a return value, and no event carries
// it back (Ginkgo's reporters take values and return nothing).
type Evidence struct {
	Dir  string
	Room func() bool // nil: always room

	mu      sync.Mutex
	written int
}

// Write writes case id's folder, <Dir>/cases/<id>/, and returns what the
// case's detail must say: the folder dropped for want of room, or not
// written and why; "" when it was written (or there is no Dir).
func (s *Evidence) Write(id string, files []File) (note string) {
	if s.Dir == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Room != nil && !s.Room() {
		return Dropped
	}
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		// The folder is named by the id: one that is not a single folder
		// name would put files outside cases/.
		return fmt.Sprintf("evidence not written: case id %q is not a folder name", id)
	}
	dir := filepath.Join(s.Dir, "cases", id)
	err := s.write(dir, files)
	if NoSpace(err) || (s.Room != nil && !s.Room()) {
		os.RemoveAll(dir)
		return Dropped
	}
	if err != nil {
		return "evidence not written: " + err.Error()
	}
	s.written++
	return ""
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
