package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"p2patomics/harness/report"
)

// A full --out must not cost the record: results.json keeps room for
// itself on --out, and evidence is what gives way. The room is twice the
// record's estimated final size (an atomic rewrite holds the old file and
// the new one at once); below it, case folders are no longer written
// (each case says so), and the final write, if it still finds no space,
// trims the record's bulk and replaces the checkpoint in place.

// recordRoom is the space results.json keeps: twice 32 KiB plus 6 KiB a
// planned case (a host case's record is 1-2 KiB; a rank's stderr tail is
// at most 4 KiB).
func (r *Run) recordRoom() uint64 {
	return 2 * (32<<10 + uint64(len(r.planned))*6<<10)
}

// room reports whether --out still has recordRoom free. Once it has not,
// it never has again in this run (a folder written later would take what
// the record needs); the first time it says so on stderr, in one line.
func (r *Run) room() bool {
	if r.outFull.Load() {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.Opts.Out, &st); err != nil {
		return true // not knowable: the writes will tell
	}
	free := st.Bavail * uint64(st.Bsize)
	// What the reserve holds is already kept; the checkpoints need their
	// own 64 KiB besides.
	need := 64<<10 + r.recordRoom() - min(r.reserved.Load(), r.recordRoom())
	if free >= need {
		return true
	}
	r.markFull(fmt.Sprintf("%d KiB free, results.json keeps %d KiB", free>>10, need>>10))
	return false
}

// reserveFile holds the final results.json's space while the run goes on.
const reserveFile = ".p2patomics-reserve"

// reserve takes the record's room on --out before the first case (up to
// half the free space): Finish releases it just before the final write,
// so nothing the run writes meanwhile (evidence, logs, another process)
// can take the space the record needs.
func (r *Run) reserve() {
	var st unix.Statfs_t
	if err := unix.Statfs(r.Opts.Out, &st); err != nil {
		return
	}
	size := min(r.recordRoom(), st.Bavail*uint64(st.Bsize)/2)
	path := filepath.Join(r.Opts.Out, reserveFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		// No fallocate here (or no space): zeros, as far as they go.
		_, err = f.Write(make([]byte, size))
		if err != nil {
			fi, _ := f.Stat()
			if fi != nil {
				size = uint64(fi.Size())
			}
		}
	}
	r.reserved.Store(size)
}

// release gives the reserve back, for the final write.
func (r *Run) release() {
	if r.reserved.Swap(0) > 0 || r.Opts.Out != "" {
		os.Remove(filepath.Join(r.Opts.Out, reserveFile))
	}
}

func (r *Run) markFull(why string) {
	if r.outFull.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "p2patomics: --out is nearly full (%s): case folders are no longer written, every result still is\n", why)
	}
}

func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// writeRecord writes the final results.json. When there is no space for
// it beside the last checkpoint, the record's bulk is trimmed (rank
// stderr tails to 512 bytes, metric samples dropped; the summary and every
// outcome kept), written compact, and it replaces the checkpoint in
// place: the checkpoint is removed first so the new file has its space,
// and put back if the new one still does not fit.
func (r *Run) writeRecord(path string, rep *report.Report) error {
	err := rep.Write(path)
	if !noSpace(err) {
		return err
	}
	r.markFull("results.json: " + err.Error())
	trimRecord(rep)
	old, rerr := os.ReadFile(path)
	os.Remove(path)
	// Compact, not indented: a third smaller.
	b, err2 := json.Marshal(rep)
	if err2 == nil {
		err2 = report.WriteAtomic(path, append(b, '\n'))
	}
	if err2 != nil {
		if rerr == nil {
			// The last checkpoint goes back where it was (its own space
			// is free again): a record of what finished before is kept.
			report.WriteAtomic(path, old)
		}
		return err2
	}
	return nil
}

// CheckRoom refuses, before --out is touched, a folder whose file system
// cannot hold the run's record (16 KiB and 2 KiB a planned case; a host
// case's final record is 1-2 KiB, and ginkgo.log and the canary's child
// run share the disk): such a run would lose its results, so it is a
// usage error.
func (r *Run) CheckRoom() error {
	dir := r.Opts.Out
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // not knowable here: Prepare's first write will tell
	}
	free := st.Bavail * uint64(st.Bsize)
	if need := 16<<10 + uint64(len(r.planned))*2<<10; free < need {
		return usagef("--out=%s has %d KiB free; the record of %d cases needs at least %d KiB", quote(r.Opts.Out), free>>10, len(r.planned), need>>10)
	}
	return nil
}

// trimRecord cuts what a full disk cannot hold from the record, saying so
// in the environment (trimmed) so no reader takes the cut for the data.
func trimRecord(rep *report.Report) {
	for i := range rep.Results {
		res := &rep.Results[i]
		for j := range res.Ranks {
			if t := res.Ranks[j].StderrTail; len(t) > 512 {
				res.Ranks[j].StderrTail = "…" + t[len(t)-512:]
			}
		}
		for k, m := range res.Metrics {
			m.Samples = nil
			res.Metrics[k] = m
		}
		if len(res.KernelLog) > 8 {
			res.KernelLog = res.KernelLog[len(res.KernelLog)-8:]
		}
	}
	rep.Pairs, rep.Matrices = nil, nil
	rep.Environment.Trimmed = "--out was full: rank stderr tails cut to 512 bytes, metric samples, pair rows and matrices dropped"
}

// LogWriter wraps a log the suite keeps in --out (ginkgo.log, about 1 KiB
// a case, as much as results.json): it writes while --out has the
// record's room, then says once that it was cut and drops the rest.
func (r *Run) LogWriter(w io.Writer) io.Writer { return &roomWriter{r: r, w: w} }

type roomWriter struct {
	r     *Run
	w     io.Writer
	since int // bytes written since room was last asked
	cut   bool
}

func (l *roomWriter) Write(p []byte) (int, error) {
	if l.cut {
		return len(p), nil
	}
	if l.since += len(p); l.since >= 8<<10 {
		l.since = 0
		if !l.r.room() {
			l.cut = true
			fmt.Fprintln(l.w, "\n[ginkgo.log cut here: --out is nearly full; results.json keeps every case]")
			return len(p), nil
		}
	}
	return l.w.Write(p)
}
