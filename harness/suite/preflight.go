package suite

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// Selection is what testing's -test.run, -test.skip and -test.list ask the
// binary to do (CheckTestSelection).
type Selection int

const (
	// SelectSuite: TestSpecs runs, the suite; the package's own Go tests
	// run first, all of them, whatever -test.run and -test.skip say.
	SelectSuite Selection = iota
	// SelectGoTests: -test.run or -test.skip leaves TestSpecs out and no
	// suite flag was given (go test -run=TestLabels ./specs): those Go
	// tests, as go test runs them; --out is never touched.
	SelectGoTests
	// SelectList: -test.list with no suite flag: testing lists the
	// binary's Go tests (go test -list . ./specs) and nothing runs.
	SelectList
)

// MinTestTimeout is the shortest -test.timeout a suite run takes: the run
// stops itself before testing's alarm (which panics and loses the record)
// at 90% of it, and below this the stop has no room to kill the ranks and
// write the reports; no run finishes its first case in less.
const MinTestTimeout = 10 * time.Second

// CheckTestSelection reads testing's selection flags from fs (after
// flag.Parse) and refuses, in one line before --out is touched, those
// that would leave the suite out or cut it short while a suite flag asks
// for a suite run (a previous results.json in --out would read as this
// run's, exit 0): -test.run or -test.skip leaving TestSpecs out,
// -test.list (it lists Go tests and runs none; --list lists case ids),
// and a -test.timeout below MinTestTimeout. suiteEnv tells whether a
// P2PAT_<flag> variable of FlagTable is set: outside go test it counts as
// a suite flag (go test -run=X ./... with one exported stays go test's).
func CheckTestSelection(fs *flag.FlagSet, suiteEnv bool) (Selection, error) {
	value := func(name string) string {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") {
			given = append(given, "--"+f.Name)
		}
	})
	goTest := value("test.paniconexit0") == "true" // go test always passes it
	if len(given) == 0 && suiteEnv && !goTest {
		given = append(given, "a P2PAT_ variable")
	}
	suiteFlag := len(given) > 0
	if l := value("test.list"); l != "" {
		if suiteFlag {
			return 0, usagef("-test.list=%s with %s is refused: it lists the binary's Go tests and runs no case (--list prints the case ids): nothing ran, --out untouched", quote(l), given[0])
		}
		return SelectList, nil
	}
	for _, name := range []string{"test.run", "test.skip"} {
		for _, part := range strings.Split(value(name), "/") {
			if _, err := regexp.Compile(part); err != nil && suiteFlag {
				return 0, usagef("-%s=%s: not a pattern testing can use: %s", name, quote(value(name)), oneLine(err.Error()))
			}
		}
	}
	if !SelectsTestSpecs(value("test.run"), value("test.skip")) {
		if suiteFlag {
			return 0, usagef("%s leaves out TestSpecs, the suite, while %s asks for a suite run (-test.run=TestSpecs or none runs it; --case and --ginkgo.focus choose cases): nothing ran, --out untouched", testSelectionFlags(value("test.run"), value("test.skip")), given[0])
		}
		return SelectGoTests, nil
	}
	if t := value("test.timeout"); t != "" {
		if d, err := time.ParseDuration(t); err == nil && d > 0 && d < MinTestTimeout {
			return 0, usagef("-test.timeout=%s is refused: a suite run needs at least %s to start its ranks, run a case and write its record (0 is no limit): nothing ran, --out untouched", d, MinTestTimeout)
		}
	}
	return SelectSuite, nil
}

// testSelectionFlags names the -test.run/-test.skip values as given.
func testSelectionFlags(run, skip string) string {
	var s []string
	if run != "" {
		s = append(s, "-test.run="+quote(run))
	}
	if skip != "" {
		s = append(s, "-test.skip="+quote(skip))
	}
	return strings.Join(s, " ")
}

// SelectsTestSpecs: whether testing's -test.run and -test.skip patterns
// select TestSpecs. Only their first level counts (the specs are not
// subtests); an invalid pattern selects nothing (testing says why).
func SelectsTestSpecs(run, skip string) bool {
	if skip != "" && !strings.Contains(skip, "/") {
		if ok, err := regexp.MatchString(skip, "TestSpecs"); ok || err != nil {
			return false
		}
	}
	if run == "" {
		return true
	}
	first, _, _ := strings.Cut(run, "/")
	ok, err := regexp.MatchString(first, "TestSpecs")
	return ok && err == nil
}

// CheckFileFilters refuses --ginkgo.focus-file/--ginkgo.skip-file that
// select no spec, before --out is touched: Ginkgo would skip every planned
// case after the plan, and the suite's cases are all at one code location
// (loc, the specs' decorator), so the filters select the whole plan or
// none of it. (CheckGinkgo has refused a filter that does not parse.)
func CheckFileFilters(s types.SuiteConfig, loc types.CodeLocation) error {
	at := []types.CodeLocation{loc}
	if len(s.FocusFiles) > 0 {
		if f, err := types.ParseFileFilters(s.FocusFiles); err == nil && !f.Matches(at) {
			return usagef("--ginkgo.focus-file=%s selects no spec: every case's spec is at %s:%d (--case, --ginkgo.focus and --ginkgo.label-filter choose cases): nothing ran, --out untouched", quote(strings.Join(unique(s.FocusFiles), ",")), filepath.Base(loc.FileName), loc.LineNumber)
		}
	}
	if len(s.SkipFiles) > 0 {
		if f, err := types.ParseFileFilters(s.SkipFiles); err == nil && f.Matches(at) {
			return usagef("--ginkgo.skip-file=%s skips every spec: every case's spec is at %s:%d (--case, --ginkgo.skip and --ginkgo.label-filter choose cases): nothing ran, --out untouched", quote(strings.Join(unique(s.SkipFiles), ",")), filepath.Base(loc.FileName), loc.LineNumber)
		}
	}
	return nil
}

// unique is ss without repeats, in order (Ginkgo's list flags hold a value
// twice: the suite's own parse and testing's both append it).
func unique(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
