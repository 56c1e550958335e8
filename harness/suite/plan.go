package suite

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"golang.org/x/sys/unix"

	"p2patomics/harness"
	"p2patomics/harness/expect"
	"p2patomics/harness/pairs"
	"p2patomics/harness/report"
)

// Catalogue builds every case for one backend and kind (package specs).
type Catalogue func(o *Options, backend, kind string) []*harness.Case

// The Ginkgo tree specs/suite_test.go builds for a run: RunSpecs'
// description, one top-level container (Ginkgo shuffles top-level
// containers; the plan's order matters), a container per Group, an It per
// case. The plan's focus filter matches the same texts.
const (
	SuiteDescription = "p2patomics"
	TopContainer     = "p2patomics"
)

// Group is the cases of one backend and kind.
type Group struct {
	Name  string
	Cases []*harness.Case
}

// Plan is what a run will do, fixed before its first case: the selected
// cases by backend and kind, the backends probed, and the baseline the
// run is gated on (nil: not gated). It changes no more once NewRun made
// it; the executor reads it (planbuild.go builds it).
type Plan struct {
	Opts        *Options
	LabelFilter string
	Groups      []Group
	// Probes are the backends tried and what each said (environment.backends).
	Probes  []BackendProbe
	planned []*harness.Case
	gate    *expect.Set
	// inFocus is --ginkgo.focus/--ginkgo.skip over a group and an id (nil:
	// none given): the gate's selection of baseline ids (selects).
	inFocus func(group, id string) bool
}

// IDs are the planned case ids in plan order (what --list prints).
func (p *Plan) IDs() []string {
	ids := make([]string, 0, len(p.planned))
	for _, c := range p.planned {
		ids = append(ids, c.ID)
	}
	return ids
}

// SpecTimeout is Ginkgo's outer bound for a case: the harness's own
// deadlines end it first, for every repeat of a soak.
func (p *Plan) SpecTimeout(c *harness.Case) time.Duration {
	per := c.Limit() + 60*time.Second
	return per*time.Duration(p.Opts.Repeat) + p.Opts.Duration/time.Duration(max(1, len(p.planned))) + per
}

// CheckRoom refuses, before --out is touched, a folder whose file system
// cannot hold the run's record (16 KiB and 2 KiB a planned case; a host
// case's final record is 1-2 KiB, and ginkgo.log and the canary's child
// run share the disk): such a run would lose its results, so it is a
// usage error.
func (p *Plan) CheckRoom() error {
	dir := p.Opts.Out
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
	if err := outFileSystem(p.Opts.Out, dir, &st); err != nil {
		return err // read-only, or no files at all: not a matter of space
	}
	free := st.Bavail * uint64(st.Bsize)
	if need := 16<<10 + uint64(len(p.planned))*2<<10; free < need {
		return usagef("--out=%s has %d KiB free; the record of %d cases needs at least %d KiB", quote(p.Opts.Out), free>>10, len(p.planned), need>>10)
	}
	return nil
}

// recordRoom is the space results.json keeps on --out (stream.Reserve):
// twice 32 KiB plus 6 KiB a planned case (a host case's record is 1-2
// KiB; a rank's stderr tail is at most 4 KiB).
func (p *Plan) recordRoom() uint64 {
	return 2 * (32<<10 + uint64(len(p.planned))*6<<10)
}

// expected is case id's expected outcome (pass for an id not planned).
func (p *Plan) expected(id string) report.Outcome {
	if c := p.caseOf(id); c != nil {
		return c.Expected
	}
	return report.Pass
}

// caseOf is the planned case with id, nil when there is none.
func (p *Plan) caseOf(id string) *harness.Case {
	for _, c := range p.planned {
		if c.ID == id {
			return c
		}
	}
	for _, g := range p.Groups {
		for _, c := range g.Cases {
			if c.ID == id {
				return c
			}
		}
	}
	return nil
}

// selects reports whether a baseline id falls in this run's selection (a
// selected id the plan lacks is missing): the same backend and kind group
// (the id's prefix), and --ginkgo.focus/--ginkgo.skip as the plan applies
// them; under a label filter only a planned id (a case the catalogue lost
// has no labels to match). A narrowed run is judged the same way however
// it was narrowed: --ginkgo.focus=X no longer calls every other baseline
// case missing while --ginkgo.label-filter=Y passed.
func (p *Plan) selects(id string) bool {
	if p.Opts.Case != "" {
		return id == p.Opts.Case
	}
	for _, g := range p.Groups {
		if c := report.ParseCase(id, nil); c.Backend+"."+c.Kind == g.Name {
			if p.caseOf(id) != nil {
				return true
			}
			return p.LabelFilter == "" && (p.inFocus == nil || p.inFocus(g.Name, id))
		}
	}
	return false
}

// incomplete is the result of a planned case that did not run to the end.
func incomplete(c *harness.Case, detail string) report.Result {
	return report.Result{Case: c.Identity(), Labels: c.Labels, Outcome: report.Incomplete, Expected: c.Expected,
		Detail: detail, Ranks: []report.Rank{}, Repro: c.Repro}
}

// judge judges the whole run (expect.JudgeRun: the gate's missing cases,
// the summary) into the report results.json records.
func (p *Plan) judge(results []report.Result, env report.Environment, timing *report.Timing, sig string, runFaults []string) *report.Report {
	gate := ""
	if p.gate != nil {
		gate = p.Opts.Expectations
	}
	results, g, sum := expect.JudgeRun(results, p.gate, env, p.selects, gate, p.Opts.Out, expect.Interrupted(sig), expect.RunFaults(runFaults), expect.StatePower(p.Opts.power))
	return &report.Report{Schema: report.Schema, Environment: env, Results: results, Gate: g, Summary: &sum,
		Pairs: pairs.PairRows(results), Timing: timing}
}

// updateDir is the folder --update-expectations writes: the first
// --expectations path.
func (p *Plan) updateDir() string {
	return strings.TrimSpace(strings.Split(p.Opts.Expectations, ",")[0])
}

// reproGate is the gate's flags a case's repro.sh passes: --expectations
// with its paths made absolute (repro.sh runs from any directory) and the
// --allow-* flags that changed the verdict; "" for a run that is not gated
// (ungated, or recording a baseline).
func (p *Plan) reproGate() string {
	if p.gate == nil {
		return ""
	}
	o := p.Opts
	return gateFlags(o.Expectations, o.UpdateExpectations, o.AllowStackMismatch, o.AllowNewFlakes)
}

// inGroups is items in the plan's group order, one slice per backend and
// kind (an item of a group the plan lacks, never, is still kept, last).
func inGroups[T any](p *Plan, items []T, caseOf func(T) *harness.Case) [][]T {
	by := map[string][]T{}
	var order []string
	for _, it := range items {
		c := caseOf(it)
		k := c.Backend + "." + c.Kind
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], it)
	}
	var out [][]T
	for _, g := range p.Groups {
		if ps, ok := by[g.Name]; ok {
			out = append(out, ps)
			delete(by, g.Name)
		}
	}
	for _, k := range order {
		if ps, ok := by[k]; ok {
			out = append(out, ps)
		}
	}
	return out
}

// specText is what Ginkgo matches --focus and --skip against for the It of
// case id in group: the suite's description, then the spec's text as
// Ginkgo's own report derives it (types.SpecReport.FullText: the
// containers, then the leaf, empty texts dropped).
func specText(group, id string) string {
	rep := types.SpecReport{ContainerHierarchyTexts: []string{TopContainer, group}, LeafNodeText: id}
	return SuiteDescription + " " + rep.FullText()
}
