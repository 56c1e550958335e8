package report

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data, or leaves it as it was: the data
// goes to a temporary file created in the same folder with O_EXCL (so a
// symlink planted under any name is never followed, and two writers never
// share a temporary file), is synced, and is renamed over path (rename
// replaces a symlink at path, it does not follow it). On any failure the
// temporary file is removed. The error names path.
func WriteAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	// Without the sync a crash after the rename can leave an empty file
	// where the last good report was.
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
