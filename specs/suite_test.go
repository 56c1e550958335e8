package specs

import (
	"flag"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/rank"
)

var (
	opts suite.Options
	run  *suite.Run
)

// TestMain picks the role before any flag is parsed: a rank has none of the
// suite's flags and must never see them.
func TestMain(m *testing.M) {
	if rank.IsRank() {
		os.Exit(rank.Main())
	}
	// From here a SIGINT/SIGTERM/SIGHUP is one line and exit 1, and once
	// --out is ready it leaves results (before the GPU backend probe).
	suite.CatchSignals(&opts)
	opts.Register(flag.CommandLine)
	if err := suite.Parse(flag.CommandLine, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	flag.Parse()
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	suiteCfg, _ := GinkgoConfiguration()
	if suiteCfg.ParallelTotal > 1 {
		fmt.Fprintln(os.Stderr, "p2patomics: ginkgo -p is refused: ranks own GPUs and the suite serialises them itself")
		os.Exit(2)
	}
	if !suiteCfg.DryRun {
		// --out (locked, previous run kept aside, a first results.json) and
		// the signal handler, before NewRun probes the GPU backends.
		if err := suite.Prepare(&opts); err != nil {
			fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
			os.Exit(suite.ExitUsage)
		}
	}
	r, err := suite.NewRun(&opts, suiteCfg.LabelFilter, Catalogue)
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: %v\n", err)
		os.Exit(2)
	}
	run = r
	if suiteCfg.DryRun {
		// --ginkgo.dry-run lists the selected case ids; nothing runs and
		// no report is written.
		m.Run()
		os.Exit(0)
	}
	run.WatchSignals()
	m.Run()
	os.Exit(run.Finish())
}

func TestSpecs(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteCfg, repCfg := GinkgoConfiguration()
	suiteCfg.LabelFilter = run.LabelFilter
	if !repCfg.Verbose && !repCfg.VeryVerbose {
		repCfg.Succinct = true
	}
	// One top-level container: Ginkgo shuffles top-level containers, and
	// the plan's order (each canary followed by its recovery case) matters.
	Describe("p2patomics", func() {
		for _, group := range run.Groups {
			describeGroup(group)
		}
	})
	RunSpecs(t, "p2patomics", suiteCfg, repCfg)
}

func describeGroup(group suite.Group) {
	{
		Describe(group.Name, func() {
			for _, c := range group.Cases {
				decorators := []any{Label(c.Labels...), SpecTimeout(run.SpecTimeout(c))}
				if c.GPU {
					decorators = append(decorators, Serial)
				}
				It(c.ID, append(decorators, func(ctx SpecContext) {
					res := run.Execute(c)
					if !res.Met() {
						Fail(fmt.Sprintf("%s: outcome %s, expected %s: %s", c.ID, res.Outcome, res.Expected, res.Detail))
					}
					if res.Outcome == report.Skip {
						Skip(res.Detail)
					}
				})...)
			}
		})
	}
}
