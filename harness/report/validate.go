package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// MaxInput caps what ReadRegular reads: the largest committed results.json
// is a few MiB, and a 28,000-case run at 64 ranks about 60 MiB.
const MaxInput = 256 << 20

// ReadRegular reads a regular file of at most max bytes. Anything else is
// refused at once: a FIFO would block forever (it is opened non-blocking,
// so not even the open waits) and /dev/zero would fill memory.
func ReadRegular(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s grew over the %d-byte limit while read", path, max)
	}
	return b, nil
}

// ValidID reports whether s is a case id: lowercase [a-z0-9._-], non-empty
// (the schema's pattern).
func ValidID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Verdicts lists every verdict (the schema's enum).
var Verdicts = []Verdict{Expected, ExpectedFail, UnexpectedPass, UnexpectedImprovement, Regression, Flake, KnownFlake, Missing, NewFlake, NotRun, CapabilityLost}

// Validate checks what everything downstream relies on and the schema
// states: the schema number, ids of [a-z0-9._-] (one line, no terminal
// escapes, usable as a file name and as a baseline line), each id once,
// and outcomes, expectations, verdicts and world event kinds from the
// known lists. A results.json that fails it is not read and not written.
func (r *Report) Validate() error {
	if r.Schema != Schema {
		return fmt.Errorf("schema %d, want %d", r.Schema, Schema)
	}
	switch r.State {
	case "", StateRunning:
	case StateNoPlan:
		if len(r.Results) > 0 {
			return fmt.Errorf("state %s with %d results", StateNoPlan, len(r.Results))
		}
	default:
		return fmt.Errorf("unknown state %s (want %s, %s or none)", strconv.Quote(r.State), StateNoPlan, StateRunning)
	}
	seen := map[string]bool{}
	var errs []error
	for i, res := range r.Results {
		at := "results[" + strconv.Itoa(i) + "]"
		switch {
		case !ValidID(res.ID()):
			errs = append(errs, fmt.Errorf("%s: id %s is not lowercase [a-z0-9._-]", at, strconv.Quote(res.ID())))
		case seen[res.ID()]:
			errs = append(errs, fmt.Errorf("%s: id %s appears twice", at, res.ID()))
		}
		seen[res.ID()] = true
		if res.Outcome.Severity() < 0 {
			errs = append(errs, fmt.Errorf("%s: unknown outcome %s", at, strconv.Quote(string(res.Outcome))))
		}
		if res.Expected.Severity() < 0 {
			errs = append(errs, fmt.Errorf("%s: unknown expected outcome %s", at, strconv.Quote(string(res.Expected))))
		}
		if res.Rerun != nil && res.Rerun.Outcome.Severity() < 0 {
			errs = append(errs, fmt.Errorf("%s: unknown rerun outcome %s", at, strconv.Quote(string(res.Rerun.Outcome))))
		}
		if res.Verdict != "" && !knownVerdict(res.Verdict) {
			errs = append(errs, fmt.Errorf("%s: unknown verdict %s", at, strconv.Quote(string(res.Verdict))))
		}
		if len(errs) >= 3 {
			break
		}
	}
	for i, e := range r.WorldEvents {
		if !knownEventKind(e.Kind) && len(errs) < 3 {
			errs = append(errs, fmt.Errorf("world_events[%d]: unknown kind %s", i, strconv.Quote(e.Kind)))
		}
	}
	return errors.Join(errs...)
}

func knownVerdict(v Verdict) bool {
	for _, x := range Verdicts {
		if x == v {
			return true
		}
	}
	return false
}
