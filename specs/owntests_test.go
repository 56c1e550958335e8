package specs

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"p2patomics/harness/suite"
)

// This binary is two things: the suite (TestSpecs, which judges a driver)
// and the Go tests of the suite's own code (every other Test in specs/:
// the catalogue's identity, its labels). The combined exit rule
// (docs/GATING.md, "The suite binary's own Go tests"):
//   - a run that selects TestSpecs runs the other tests in a child
//     process (ownTests), started before the plan is made and waited for
//     before --out is touched (startOwnTests); one that fails ends the run before --out is
//     touched: their output on stderr, then one line, exit 1. A suite
//     whose own checks do not hold must not judge a driver, and a
//     failing Go test in specs/ must fail go test ./... and the binary.
//   - they pass: the suite runs and its exit status is its verdict's
//     (0 PASS, 1 FAIL, 2 usage, 3 reports, 4 interrupted). TestSpecs's own
//     pass or fail in testing is not consulted: the verdict is judged
//     after the flake reruns, which can forgive a spec Ginkgo failed.
//   - the own tests run whole whenever the suite runs, whatever
//     -test.run and -test.skip say (-test.run=TestSpecs, the natural way
//     to select the suite, skipped them all and let a failing one read
//     PASS).
//   - they are checks of the suite's own code and start no world: a
//     test that runs host cases end to end lives in specs/e2e (go test
//     ./... runs it), and the own tests' child refuses every rank start
//     (harness.RefuseRanks), so such a test fails here, named.
//   - a child the machine could not carry (killed by a signal, no
//     threads or address space: suite.JudgeOwnTests) is exit 5
//     (suite.ExitEnvironment), never 1 (FAIL) or 2 (usage).
//   - -test.run/-test.skip without TestSpecs, or -test.list, with a suite
//     flag is refused, exit 2 (suite.CheckTestSelection); with none,
//     those tests run as go test runs them. One that selects no test at
//     all is exit 2 (selectsNothing), except under go test with no suite
//     flag (go test -run=X ./...).

// ownTestsEnv marks the child that runs the package's own tests.
const ownTestsEnv = "P2PAT_INTERNAL_OWN_TESTS"

// ownTestsTimeout bounds the child: the tests take milliseconds, and a
// hang there must not hold the suite.
const ownTestsTimeout = 2 * time.Minute

// ownTests runs every test of this package but TestSpecs in a child
// process of this binary, whatever the user's -test.run and -test.skip
// select (they chose the suite; its own checks are not theirs to skip),
// so their output, a panic and testing's own state stay out of the
// suite's run (testing writes its profiles once per process). It returns
// the child's combined output and how it ended; a child that cannot
// start is an error.
func ownTests() (out []byte, judged suite.OwnTestsOutcome, err error) {
	args := []string{"-test.skip=^TestSpecs$", "-test.timeout=" + ownTestsTimeout.String()}
	if v := flagValue("test.v"); v == "true" {
		args = append(args, "-test.v=true")
	}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(os.Environ(), ownTestsEnv+"=1")
	cmd.SysProcAttr = childAttr()
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return out, judged, fmt.Errorf("running this binary's own Go tests: %w", err)
	}
	return out, suite.JudgeOwnTests(out, cmd.ProcessState), nil
}

// worldInOwnTests is why the own tests' child starts no rank
// (harness.RefuseRanks in TestMain): a world's start there fails naming it.
const worldInOwnTests = "a world started in the suite binary's own Go tests: they run before every suite run and start none (a test that runs cases end to end belongs in specs/e2e)"

// childAttr: the child dies with this process, and in its own process
// group, so a ^C reaches only this process, whose handler says
// "interrupted" (exit 4) instead of a child killed mid-test reading as a
// failed test.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// ownTestsRun is the own tests' child started in the background
// (startOwnTests): what ownTests returned once done is closed.
type ownTestsRun struct {
	done    chan struct{}
	out     []byte
	judged  suite.OwnTestsOutcome
	err     error
	skipped bool // they passed in this process's parent (ownTestsPassed)
}

// startOwnTests starts the own tests now, beside what the suite does
// before it touches --out (NewRun: the backend probe, the baseline's
// files, the plan), instead of before all of it (issue 52 item 3: 1.2-2 s
// before the first case). checkOwnTests waits for them before --out is
// touched, so one that fails still records nothing.
func startOwnTests() *ownTestsRun { return startOwnTestsWith(ownTests) }

func startOwnTestsWith(run func() ([]byte, suite.OwnTestsOutcome, error)) *ownTestsRun {
	r := &ownTestsRun{done: make(chan struct{})}
	if ownTestsPassed() {
		r.skipped = true
		close(r.done)
		return r
	}
	go func() {
		// The child's Pdeathsig follows the thread that started it: the
		// thread stays this goroutine's until the child has ended.
		runtime.LockOSThread()
		defer close(r.done)
		r.out, r.judged, r.err = run()
	}()
	return r
}

// ownTestsPassed: this process is a child the suite started of its own
// binary (the SIGTERM canary's suite), whose own tests passed in the
// parent that set suite.OwnTestsPassedEnv to its pid.
func ownTestsPassed() bool {
	v, ok := os.LookupEnv(suite.OwnTestsPassedEnv)
	return ok && v == strconv.Itoa(os.Getppid())
}

// checkOwnTests waits for the own tests startOwnTests started, before the
// suite touches --out, and ends the process when they fail (exit 1), when
// the machine could not run them (exit 5, suite.ExitEnvironment: a
// signal, no threads, no address space) or when they cannot start (exit
// 2); with -test.v a passing child's output is shown.
func checkOwnTests(r *ownTestsRun) {
	<-r.done
	if r.skipped {
		return
	}
	out, judged, err := r.out, r.judged, r.err
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	switch {
	case judged.Environment != "":
		os.Stderr.Write(out)
		fmt.Fprintf(os.Stderr, "p2patomics: ENVIRONMENT — this machine could not run the suite binary's own Go tests (%s): nothing ran, --out untouched (exit %d)\n", judged.Environment, suite.ExitEnvironment)
		os.Exit(suite.ExitEnvironment)
	case len(judged.Failed) > 0:
		os.Stderr.Write(out)
		fmt.Fprintf(os.Stderr, "p2patomics: FAIL — this suite binary's own Go tests failed (%s): nothing ran, --out untouched\n", strings.Join(judged.Failed, ", "))
		os.Exit(1)
	}
	if flagValue("test.v") == "true" {
		os.Stdout.Write(out)
	}
}

// selectsNothing reports whether -test.run selects no test of this binary
// where that must be refused: a suite binary run (not go test, or with a
// suite flag) whose -test.run matches nothing would exit 0 with the
// previous run's results.json in --out, looking current. Under go test
// with no suite flag (go test -run=X ./..., where X lives in another
// package) it is testing's "no tests to run", as in every package. The
// names come from a child run with -test.list.
func selectsNothing() (bool, error) {
	goTest := flagValue("test.paniconexit0") == "true" // go test always passes it
	suiteFlag := false
	flag.Visit(func(f *flag.Flag) { suiteFlag = suiteFlag || !strings.HasPrefix(f.Name, "test.") })
	if goTest && !suiteFlag {
		return false, nil
	}
	first, _, _ := strings.Cut(flagValue("test.run"), "/")
	if first == "" {
		first = "." // -test.skip=TestSpecs alone: any other test counts
	}
	if _, err := regexp.Compile(first); err != nil {
		return false, nil // testing says what is wrong with it
	}
	cmd := exec.Command("/proc/self/exe", "-test.list="+first)
	cmd.Env = append(os.Environ(), ownTestsEnv+"=1")
	cmd.SysProcAttr = childAttr()
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("listing this binary's tests: %w", err)
	}
	return strings.TrimSpace(string(out)) == "", nil
}

// refuseEmptySelection ends the process (exit 2, one line) when
// selectsNothing says so.
func refuseEmptySelection() {
	none, err := selectsNothing()
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	if none {
		fmt.Fprintf(os.Stderr, "p2patomics: -test.run=%s selects no test (TestSpecs runs the suite; --case and --ginkgo.focus choose cases): nothing ran, --out untouched\n", quoteArg(flagValue("test.run")))
		os.Exit(2)
	}
}

// quoteArg renders a user's value on one line.
func quoteArg(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }) || s == "" {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// TestPlantedFailure is the planted always-failing Go test: it fails
// only with P2PAT_PLANT_FAILING_TEST=1, which scripts/gate-selftest.sh
// sets to show that a failing test in specs/ turns go test ./specs and the
// suite binary red (the TestMain that dropped m.Run's status gave ok).
//
// P2PAT_PLANT_FAILING_TEST=signal instead kills the test's own process
// with SIGKILL (as the OOM killer or a thread limit would end it): the
// suite must call that the environment (exit 5), not a failed test.
func TestPlantedFailure(t *testing.T) {
	switch os.Getenv("P2PAT_PLANT_FAILING_TEST") {
	case "1":
		t.Fatal("planted failure (P2PAT_PLANT_FAILING_TEST=1)")
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
