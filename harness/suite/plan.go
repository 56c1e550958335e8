package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	descriptors "p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/internal/inject"
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

// NewRun resolves the backend, builds and filters the plan from cat, and
// makes every check that can refuse the run before its first case.
func NewRun(o *Options, userFilter string, cat Catalogue) (*Run, error) {
	r := &Run{Opts: o, runners: map[string]*harness.Runner{}, results: map[string]report.Result{}, startFds: -1, t0: time.Now()}
	r.LabelFilter = labelFilter(o, userFilter)
	if len(o.inject) > 0 && !o.List {
		// One set of counters for the run, kept open to its end (the suite's
		// fd count is taken later, at the first case).
		c, err := inject.NewCounters(o.inject)
		if err != nil {
			return nil, err
		}
		r.counters = c
	}
	gs, err := r.gateSet()
	if err != nil {
		return nil, err
	}
	r.gate = gs
	sel, err := r.selection()
	if err != nil {
		return nil, err
	}
	backends, err := r.resolveBackends()
	if err != nil {
		return nil, err
	}
	if err := r.plan(backends, cat, sel); err != nil {
		return nil, err
	}
	if o.List {
		return r, nil // a list runs nothing: no stack to check against the baseline
	}
	if err := r.checkBaseline(); err != nil {
		return nil, err
	}
	return r, nil
}

// labelFilter is the run's Ginkgo label filter: the user's, and'ed with
// the --atomics and --perf shorthands.
func labelFilter(o *Options, userFilter string) string {
	var terms []string
	if strings.TrimSpace(userFilter) != "" {
		terms = append(terms, "("+userFilter+")")
	}
	if o.Atomics {
		terms = append(terms, report.LabelAtomics.String())
	}
	if o.Perf {
		terms = append(terms, report.LabelPerf.String())
	}
	return strings.Join(terms, " && ")
}

// selection keeps a catalogue case the run selects: --case alone when
// given, else the label filter; and Ginkgo's focus and skip always.
type selection struct {
	labels  func([]string) bool
	inFocus func(group, id string) bool
}

func (r *Run) selection() (selection, error) {
	s := selection{labels: func([]string) bool { return true }}
	if r.LabelFilter != "" {
		f, err := types.ParseLabelFilter(r.LabelFilter)
		if err != nil {
			return s, fmt.Errorf("label filter %s: %s", quote(r.LabelFilter), oneLine(err.Error()))
		}
		s.labels = f
	}
	var err error
	s.inFocus, err = focusFilter(r.Opts.FocusStrings, r.Opts.SkipStrings)
	return s, err
}

func (s selection) keeps(o *Options, group string, c *harness.Case) bool {
	if o.Case != "" && c.ID != o.Case {
		return false
	}
	if o.Case == "" && !s.labels(c.Labels) {
		return false
	}
	return s.inFocus(group, c.ID)
}

// plan fills Groups and planned: per backend and kind the catalogue's
// selected cases (plus the planted ones on the backend's first kind), then
// the suite's own cases where the run is a whole host run, or where --case
// names one of them.
func (r *Run) plan(backends []string, cat Catalogue, sel selection) error {
	o := r.Opts
	for _, be := range backends {
		kinds := harness.Matrix[be]
		if o.Alloc != "" {
			if !slices.Contains(kinds, o.Alloc) {
				continue
			}
			kinds = []string{o.Alloc}
		}
		for i, kind := range kinds {
			cases := cat(o, be, kind)
			if i == 0 {
				// Like the canaries, on the backend's first kind or the
				// one kind the run selected.
				cases = append(cases, planted(o, be, kind)...)
			}
			r.addGroup(be+"."+kind, cases, func(g string, c *harness.Case) bool { return sel.keeps(o, g, c) })
		}
	}
	if o.Case == "" && o.Alloc == "" && r.LabelFilter == "" && slices.Contains(backends, descriptors.HostName) {
		r.addSuiteCases(sel.inFocus)
	}
	if o.Case != "" && len(r.planned) == 0 {
		r.addSuiteCases(func(string, string) bool { return true })
		r.planned = filterID(r.Groups, o.Case)
		if len(r.planned) == 0 {
			return fmt.Errorf("--case=%s matches no case of backend %s (list the ids with --list)", o.Case, strings.Join(backends, ","))
		}
	}
	if len(r.planned) == 0 {
		return fmt.Errorf("the selection (backend %s, alloc %q, labels %q) matches no case", strings.Join(backends, ","), o.Alloc, r.LabelFilter)
	}
	return nil
}

// addGroup plans the cases keep keeps as the group name; a group left
// empty is not planned.
func (r *Run) addGroup(name string, cases []*harness.Case, keep func(group string, c *harness.Case) bool) {
	g := Group{Name: name}
	for _, c := range cases {
		if keep(name, c) {
			g.Cases = append(g.Cases, c)
		}
	}
	if len(g.Cases) > 0 {
		r.Groups = append(r.Groups, g)
		r.planned = append(r.planned, g.Cases...)
	}
}

// checkBaseline refuses, before the first case, a baseline the run cannot
// be judged against or recorded into: another stack, one sharing (almost)
// no case with the plan, an --update-expectations target CheckUpdate
// refuses.
func (r *Run) checkBaseline() error {
	o := r.Opts
	if err := r.checkStack(); err != nil {
		return err
	}
	if r.gate != nil {
		// Not a stack check: --allow-stack-mismatch does not lift it.
		if err := expect.CheckShared(r.gate, r.IDs()); err != nil {
			return usagef("--expectations=%s: %v", o.Expectations, err)
		}
	}
	if o.UpdateExpectations {
		env := r.preEnv()
		env.Backends = recorded(r.Probes)
		if err := expect.CheckUpdate(r.updateDir(), env, o.Force); err != nil {
			return usagef("--update-expectations: %v", err)
		}
	}
	return nil
}

func filterID(groups []Group, id string) []*harness.Case {
	var out []*harness.Case
	for i := range groups {
		var keep []*harness.Case
		for _, c := range groups[i].Cases {
			if c.ID == id {
				keep = append(keep, c)
			}
		}
		groups[i].Cases = keep
		out = append(out, keep...)
	}
	return out
}

// focusFilter applies --ginkgo.focus and --ginkgo.skip to the plan the way
// Ginkgo does (its regexps, joined by "|", over specText), so the plan,
// results.json and the gate's selection hold exactly the specs Ginkgo
// runs: an unselected case is not in the results, never incomplete.
func focusFilter(focus, skip []string) (func(group, id string) bool, error) {
	var fre, sre *regexp.Regexp
	var err error
	if len(focus) > 0 {
		if fre, err = regexp.Compile(strings.Join(focus, "|")); err != nil {
			return nil, usagef("--ginkgo.focus: %v", err)
		}
	}
	if len(skip) > 0 {
		if sre, err = regexp.Compile(strings.Join(skip, "|")); err != nil {
			return nil, usagef("--ginkgo.skip: %v", err)
		}
	}
	return func(group, id string) bool {
		text := specText(group, id)
		if fre != nil && !fre.MatchString(text) {
			return false
		}
		return sre == nil || !sre.MatchString(text)
	}, nil
}

// specText is what Ginkgo matches --focus and --skip against for the It of
// case id in group: the suite's description, then the spec's text as
// Ginkgo's own report derives it (types.SpecReport.FullText: the
// containers, then the leaf, empty texts dropped).
func specText(group, id string) string {
	rep := types.SpecReport{ContainerHierarchyTexts: []string{TopContainer, group}, LeafNodeText: id}
	return SuiteDescription + " " + rep.FullText()
}

// IDs are the planned case ids in plan order (what --list prints).
func (r *Run) IDs() []string {
	ids := make([]string, 0, len(r.planned))
	for _, c := range r.planned {
		ids = append(ids, c.ID)
	}
	return ids
}
