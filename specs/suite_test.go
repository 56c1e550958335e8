package specs

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"p2patomics/harness"
	"p2patomics/harness/outputs"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/rank"
)

var (
	opts suite.Options
	run  *suite.Run
	// ginkgoReports are Ginkgo's report flags, written by the suite
	// (TestSpecs); ginkgoReportsErr says which could not be.
	ginkgoReports    *suite.GinkgoReports
	ginkgoReportsErr error
	// suiteStart is when RunSpecs began (ginkgoSkipReason's timeout).
	suiteStart time.Time
)

// specLocation is the one code location of every node of the suite's
// tree (its containers, its specs, its ReportAfterEach), given to each as
// a decorator: Ginkgo's --ginkgo.focus-file and --ginkgo.skip-file match
// node locations, so the plan can tell before --out is touched whether
// they select the suite (all of it) or nothing (suite.CheckFileFilters).
var specLocation = types.NewCodeLocation(0)

// TestMain picks the role before any flag is parsed: a rank has none of the
// suite's flags and must never see them.
func TestMain(m *testing.M) {
	if rank.IsRank() {
		os.Exit(rank.Main())
	}
	if os.Getenv(ownTestsEnv) == "1" {
		// The child checkOwnTests starts: the package's own tests only,
		// and they start no world (owntests_test.go).
		harness.RefuseRanks(worldInOwnTests)
		os.Exit(m.Run())
	}
	// A Go runtime abort of the suite (out of memory, a thread limit)
	// raises SIGABRT (status 134) instead of exiting 2, the usage-error
	// status: CI can tell "bad flags" from "the suite died mid-run".
	debug.SetTraceback("crash")
	// From here a SIGINT/SIGTERM/SIGHUP is one line and exit 4, and once
	// --out is ready it leaves results (before the GPU backend probe).
	suite.CatchSignals(&opts)
	parseFlags(m)
	suiteCfg, repCfg := GinkgoConfiguration()
	ginkgoReports = suite.GinkgoReportsOf(&repCfg)
	if suiteCfg.ParallelTotal > 1 && suiteCfg.ParallelProcess != 1 {
		// Said once, by process 1 (CheckGinkgo below): the Ginkgo CLI
		// prints every process's output, and N copies of one line read as
		// N problems.
		os.Exit(suite.ExitUsage)
	}
	// Every check that can refuse the run happens before --out is touched
	// (a refused run never displaces the last good one): Ginkgo's and
	// testing's own settings, then NewRun's (--case, labels, focus, the
	// backend, the baseline).
	if err := errors.Join(suite.CheckGinkgo(suiteCfg), suite.CheckFileFilters(suiteCfg, specLocation), suite.CheckTestFlags(flag.CommandLine), ginkgoReports.Check(opts.Out)); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	opts.FocusStrings, opts.SkipStrings = suiteCfg.FocusStrings, suiteCfg.SkipStrings
	// The binary's own Go tests start now, beside the plan and the probe
	// (startOwnTests); checkOwnTests waits for them before --out.
	var own *ownTestsRun
	if !opts.List && !suiteCfg.DryRun {
		own = startOwnTests()
	}
	r, err := suite.NewRun(&opts, suiteCfg.LabelFilter, Catalogue)
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	run = r
	run.Style = outputs.StdoutStyle()
	// The suite's lines go to the real stdout even while testing's are
	// kept off it (runQuietly swaps os.Stdout around TestSpecs).
	run.Stdout = os.Stdout
	if opts.List || suiteCfg.DryRun {
		// The selected case ids, one a line; nothing runs and no report
		// is written. The probes go to stderr so the list stays clean.
		for _, p := range run.Plan.Probes {
			fmt.Fprintln(os.Stderr, p.Line())
		}
		for _, id := range run.Plan.IDs() {
			fmt.Println(id)
		}
		os.Exit(0)
	}
	// The binary's own Go tests, before --out is touched: one that fails
	// ends the run here, exit 1 (owntests_test.go says the exit rule).
	checkOwnTests(own)
	// --out (locked, previous run kept aside, a first results.json) once
	// the plan is known to be runnable and --out can hold its record.
	if err := run.Plan.CheckRoom(); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	if err := suite.Prepare(&opts); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	for _, p := range run.Plan.Probes {
		fmt.Println(p.Line())
	}
	fmt.Printf("p2patomics: %d case(s), seed %d, reports in %s\n", len(run.Plan.IDs()), opts.Seed, opts.Out)
	run.WatchSignals()
	armStops(suiteCfg)
	runQuietly(m)
	run.RerunPending() // the gate's flake checks, one fresh world per kind
	// Ginkgo's own reports were written as its run ended: one not written
	// is exit 3, which Finish records in results.json and the last line.
	run.GinkgoReportsNotWritten(ginkgoReportsErr)
	os.Exit(suite.ExitWithGinkgoReports(run.Finish(), ginkgoReportsErr))
}

// parseFlags parses the suite's flags and testing's, and validates them;
// a go test selection that leaves the suite out runs those tests (or
// lists them) and exits; a usage error exits 2.
func parseFlags(m *testing.M) {
	opts.Register(flag.CommandLine)
	if err := suite.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			suite.Help(os.Stdout)
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	flag.Parse()
	// -test.run/-test.skip/-test.list/-test.timeout that would leave the
	// suite out or cut it short are refused here while a suite flag asks
	// for a run (a previous results.json in --out would read as this
	// run's); without one they are go test's.
	sel, err := suite.CheckTestSelection(flag.CommandLine, suiteEnvSet())
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	switch sel {
	case suite.SelectList:
		os.Exit(m.Run()) // go test -list: testing lists, nothing runs
	case suite.SelectGoTests:
		// go test -run=TestLabels: those tests, as go test runs them; no
		// --out is touched. A selection of nothing is refused where it
		// would read as a run (refuseEmptySelection).
		refuseEmptySelection()
		os.Exit(m.Run())
	}
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if _, env := os.LookupEnv(suite.EnvName("out")); !outSet && !env {
		// go tool ginkgo runs the binary in specs/; the default out/ is
		// the checkout's either way (make run passes $(CURDIR)/out).
		opts.Out = suite.DefaultOut()
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
}

// armStops makes -test.timeout and Ginkgo's suite timeout stop the run
// before either cuts it short, and leaves only TestSpecs to testing.
func armStops(suiteCfg types.SuiteConfig) {
	if d := testTimeout(); d > 0 {
		// go test passes -test.timeout=10m unless told otherwise; its
		// alarm panics and loses the report, so the run stops first.
		run.StopAfter(d-min(d/10, 30*time.Second), "-test.timeout="+d.String())
		// testing's alarm becomes a backstop a minute later: at 10s the
		// stop has 1s to kill the ranks and write the reports, and on a
		// loaded machine the alarm's panic must not cut that write short.
		if err := flag.Set("test.timeout", (d + time.Minute).String()); err != nil {
			fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
			os.Exit(suite.ExitUsage)
		}
	}
	if d := suiteCfg.Timeout; d > 0 {
		// Ginkgo's own suite timeout (1h unless told) would skip the
		// specs left and leave them planned but unrun: the run stops as
		// for -test.timeout, INTERRUPTED, its unrun cases not run.
		run.StopAfter(d-min(d/10, 30*time.Second), "--ginkgo.timeout="+d.String())
	}
	// Only TestSpecs runs here (checkOwnTests ran the others), and its
	// verdict is Finish's: testing's status for it is not the run's, as a
	// flake rerun can forgive a spec Ginkgo failed.
	if err := flag.Set("test.run", "^TestSpecs$"); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
	if err := flag.Set("test.skip", ""); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(suite.ExitUsage)
	}
}

// testTimeout is testing's -test.timeout (0: none, as the Ginkgo CLI
// passes).
func testTimeout() time.Duration {
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil {
			return d
		}
	}
	return 0
}

// suiteEnvSet: whether a P2PAT_<flag> variable of the flag table is set
// (outside go test it asks for a suite run like the flag).
func suiteEnvSet() bool {
	for _, d := range suite.FlagTable {
		if _, ok := os.LookupEnv(suite.EnvName(d.Name)); ok {
			return true
		}
	}
	return false
}

// runQuietly runs TestSpecs with testing's own lines (=== RUN, --- FAIL:
// TestSpecs, PASS, FAIL) kept off stdout: they are testing's status for
// TestSpecs, printed before the flake reruns and the reports, and said
// "--- FAIL" on a PASS with an allowed new flake and "PASS" on an exit 3.
// The suite's verdict line is the run's word (run.Stdout keeps the real
// stdout). Under go test -json (-test.v=test2json) they stay: test2json
// reads them, and go test's own ok/FAIL follows the exit status.
func runQuietly(m *testing.M) {
	if flagValue("test.v") == "test2json" {
		m.Run()
		return
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		m.Run() // no /dev/null: testing's lines stay on stdout
		return
	}
	real := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = real; null.Close() }()
	m.Run()
}

func TestSpecs(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteCfg, repCfg := GinkgoConfiguration()
	suiteCfg.LabelFilter = run.Plan.LabelFilter
	// The plan's order is fixed; Ginkgo's shuffle seed is the suite's, so
	// one seed is printed, not two.
	suiteCfg.RandomSeed = opts.Seed
	repCfg.NoColor = repCfg.NoColor || !run.Style.Color
	if suite.GinkgoReportsOf(&repCfg).Any() {
		// TestMain took them (ginkgoReports): written below, their
		// failure an error, not a failed spec.
		ReportAfterSuite("p2patomics: Ginkgo's reports", func(rep Report) {
			ginkgoReportsErr = ginkgoReports.Write(rep)
		})
	}
	if !repCfg.Verbose && !repCfg.VeryVerbose {
		// The suite prints a live line per case and the verdict; Ginkgo's
		// own report (dots, its failure summary) goes to out/ginkgo.log.
		// -v/-vv keep Ginkgo on stdout.
		repCfg.Succinct = true
		if err := os.MkdirAll(opts.Out, 0o755); err == nil {
			if f, err := os.Create(filepath.Join(opts.Out, "ginkgo.log")); err == nil {
				defer f.Close()
				formatter.ColorableStdOut = run.LogWriter(f)
				repCfg.NoColor = true
			}
		}
	}
	// One top-level container: Ginkgo shuffles top-level containers, and
	// the plan's order (each canary followed by its recovery case) matters.
	Describe(suite.TopContainer, specLocation, func() {
		// Ginkgo's own word on each spec: a body that panicked before its
		// case recorded a result is the case's fail, a spec Ginkgo
		// skipped (its timeout, fail-fast, an abort) is not run, with
		// Ginkgo's reason (Run.HeardSpec).
		ReportAfterEach(func(rep SpecReport) {
			run.HeardSpec(rep, ginkgoSkipReason(suiteCfg, rep))
		}, specLocation)
		for _, group := range run.Plan.Groups {
			describeGroup(group)
		}
	})
	suiteStart = time.Now()
	RunSpecs(t, suite.SuiteDescription, suiteCfg, repCfg)
}

// ginkgoSkipReason says why Ginkgo skipped a spec the plan holds: its
// failure message when it gave one, else the setting that made it skip.
func ginkgoSkipReason(cfg types.SuiteConfig, rep SpecReport) string {
	switch {
	case rep.Failure.Message != "":
		return suite.GinkgoFailure(rep)
	case rep.State.Is(types.SpecStatePending):
		return "the spec is pending"
	case cfg.Timeout > 0 && time.Since(suiteStart) > cfg.Timeout:
		return "--ginkgo.timeout=" + cfg.Timeout.String() + " elapsed"
	case cfg.FailFast:
		return "--ginkgo.fail-fast after a failed spec"
	case len(cfg.FocusFiles)+len(cfg.SkipFiles) > 0:
		return "--ginkgo.focus-file/--ginkgo.skip-file"
	}
	return "the run was interrupted or aborted"
}

func describeGroup(group suite.Group) {
	Describe(group.Name, specLocation, func() {
		for _, c := range group.Cases {
			decorators := []any{Label(c.Labels...), SpecTimeout(run.Plan.SpecTimeout(c)), specLocation}
			if c.GPU {
				decorators = append(decorators, Serial)
			}
			It(c.ID, append(decorators, func(ctx SpecContext) {
				res := run.Execute(c)
				// Report entries carry the case into --ginkgo.json-report
				// and --ginkgo.junit-report.
				AddReportEntry("outcome", string(res.Outcome))
				AddReportEntry("expected", string(res.Expected))
				if res.Verdict != "" {
					AddReportEntry("verdict", string(res.Verdict))
				}
				if res.NotSupported != "" {
					AddReportEntry("not_supported", res.NotSupported)
				}
				AddReportEntry("detail", res.Detail)
				if len(res.Metrics) > 0 {
					AddReportEntry("metrics", res.Metrics)
				}
				// The spec fails exactly when the verdict calls the case
				// unexpected: a canary's expected crash passes.
				if report.Unexpected(res) {
					Fail(fmt.Sprintf("%s: %s: %s → %s: %s", c.ID, res.Verdict, report.Was(res), res.Outcome, res.Detail))
				}
				if res.Outcome == report.Skip {
					Skip(res.Detail)
				}
			})...)
		}
	})
}
