package suite

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// Preflight checks, run after the flags and before NewRun and Prepare:
// Go's testing package and Ginkgo find some of their own bad settings
// only after the last case (a profile they cannot write) or print many
// coloured lines for them (a parallel setting). Each is one line and exit 2
// here, before --out is touched.

// CheckGinkgo refuses Ginkgo settings the suite cannot honour: parallel
// process numbers, a spec retry (FlakeAttempts, MustPassRepeatedly: a retry
// keeps only the last attempt, so a crash then a pass reads pass), and
// file filters Ginkgo would refuse only inside RunSpecs.
func CheckGinkgo(s types.SuiteConfig) error {
	switch {
	case s.ParallelTotal > 1:
		return usagef("ginkgo -p is refused: ranks own GPUs and the suite serialises them itself (run ginkgo without -p)")
	case s.ParallelTotal < 1:
		return usagef("--ginkgo.parallel.total=%d: the suite runs as one process", s.ParallelTotal)
	case s.ParallelProcess != 1:
		return usagef("--ginkgo.parallel.process=%d: the suite runs as one process (process 1 of 1)", s.ParallelProcess)
	case s.FlakeAttempts > 0:
		return usagef("--ginkgo.flake-attempts=%d is refused: Ginkgo's retries would hide the first attempt's outcome (use --repeat=N for a soak)", s.FlakeAttempts)
	case s.MustPassRepeatedly > 0:
		return usagef("must-pass-repeatedly=%d is refused: use --repeat=N, which records every attempt", s.MustPassRepeatedly)
	case s.GracePeriod <= 0:
		return usagef("--ginkgo.grace-period=%s: must be positive", s.GracePeriod)
	case s.SleepOnFailure < 0:
		return usagef("--ginkgo.sleep-on-failure=%s: must not be negative", s.SleepOnFailure)
	}
	for _, ff := range [][]string{s.FocusFiles, s.SkipFiles} {
		if len(ff) == 0 {
			continue
		}
		if _, err := types.ParseFileFilters(ff); err != nil {
			return usagef("--ginkgo.focus-file/skip-file %s: %s", quote(fmt.Sprint(ff)), oneLine(ginkgoMessage(err)))
		}
	}
	return nil
}

func ginkgoMessage(err error) string {
	var ge types.GinkgoError
	if errors.As(err, &ge) {
		return ge.Heading + ": " + ge.Message
	}
	return err.Error()
}

// profileFlags are testing's flags that name a file written after the
// last test: a file that cannot be written there ends the run with exit 2
// and none of the suite's reports (testing exits before Finish).
var profileFlags = []string{"test.cpuprofile", "test.memprofile", "test.blockprofile", "test.mutexprofile", "test.trace", "test.testlogfile", "test.coverprofile"}

// CheckTestFlags tries every file testing was told to write (a fresh
// file is created, written one byte and removed; an existing one is opened
// for writing, and a device written one byte, so /dev/full is found) and
// refuses coverage flags in a binary built without coverage.
func CheckTestFlags(fs *flag.FlagSet) error {
	outdir := ""
	if f := fs.Lookup("test.outputdir"); f != nil {
		outdir = f.Value.String()
	}
	for _, name := range profileFlags {
		f := fs.Lookup(name)
		if f == nil || f.Value.String() == "" {
			continue
		}
		if (name == "test.coverprofile") && testing.CoverMode() == "" {
			return usagef("-%s: this binary was built without coverage (go test -c -cover)", name)
		}
		path := f.Value.String()
		if outdir != "" && !filepath.IsAbs(path) && name != "test.testlogfile" {
			path = filepath.Join(outdir, path)
		}
		if err := tryWrite(path); err != nil {
			return usagef("-%s=%s cannot be written: %s", name, quote(f.Value.String()), oneLine(err.Error()))
		}
	}
	if f := fs.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" && testing.CoverMode() == "" {
		return usagef("-test.gocoverdir: this binary was built without coverage (go test -c -cover)")
	}
	return nil
}

func tryWrite(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.Write([]byte{0})
		cerr := f.Close()
		os.Remove(path)
		return errors.Join(werr, cerr)
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("is a directory")
	case st.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	case st.Mode()&os.ModeCharDevice != 0:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, werr := f.Write([]byte{0})
		return errors.Join(werr, f.Close())
	}
	return errors.New("not a regular file")
}
