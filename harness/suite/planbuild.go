package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"p2patomics/harness"
	descriptors "p2patomics/harness/backends"
	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// fill resolves the backend, builds and filters the plan of p.Opts from
// cat, and makes every check that can refuse the run before its first
// case. self is the suite's own cases (suitecases.go), planned on a whole
// host run.
func (p *Plan) fill(userFilter string, cat Catalogue, self *selfChecks) error {
	o := p.Opts
	p.LabelFilter = labelFilter(o, userFilter)
	gs, err := gateSet(o)
	if err != nil {
		return err
	}
	p.gate = gs
	sel, err := p.selection()
	if err != nil {
		return err
	}
	backends, probes, err := resolveBackends(o)
	p.Probes = probes
	if err != nil {
		return err
	}
	if err := o.resolveAB(backends); err != nil {
		return err // stack B of --ab cannot run (abrun.go)
	}
	if err := p.plan(backends, cat, sel, self); err != nil {
		return err
	}
	if o.List {
		return nil // a list runs nothing: no stack to check against the baseline
	}
	return p.checkBaseline()
}

// gateSet is the baseline the run is gated on: nil when there is none or
// the run records one (--update-expectations).
func gateSet(o *Options) (*expect.Set, error) {
	if o.Expectations == "" || o.UpdateExpectations {
		return nil, nil
	}
	s, err := expect.LoadList(o.Expectations)
	if err != nil {
		return nil, err
	}
	s.AllowNewFlakes = o.AllowNewFlakes
	return s, nil
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

// selector keeps a catalogue case the run selects: --case alone when
// given, else the label filter; and Ginkgo's focus and skip always.
type selector struct {
	labels  func([]string) bool
	inFocus func(group, id string) bool
}

func (p *Plan) selection() (selector, error) {
	s := selector{labels: func([]string) bool { return true }}
	if p.LabelFilter != "" {
		f, err := types.ParseLabelFilter(p.LabelFilter)
		if err != nil {
			return s, fmt.Errorf("label filter %s: %s", quote(p.LabelFilter), oneLine(err.Error()))
		}
		s.labels = f
	}
	var err error
	s.inFocus, err = focusFilter(p.Opts.FocusStrings, p.Opts.SkipStrings)
	if len(p.Opts.FocusStrings)+len(p.Opts.SkipStrings) > 0 {
		p.inFocus = s.inFocus
	}
	return s, err
}

func (s selector) keeps(o *Options, group string, c *harness.Case) bool {
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
func (p *Plan) plan(backends []string, cat Catalogue, sel selector, self *selfChecks) error {
	o := p.Opts
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
			p.addGroup(be+"."+kind, cases, func(g string, c *harness.Case) bool { return sel.keeps(o, g, c) })
		}
	}
	if o.Case == "" && o.Alloc == "" && p.LabelFilter == "" && slices.Contains(backends, descriptors.HostName) {
		p.addGroup(suiteGroup, self.cases(), func(g string, c *harness.Case) bool { return sel.inFocus(g, c.ID) })
	}
	if o.Case != "" && len(p.planned) == 0 {
		p.addGroup(suiteGroup, self.cases(), func(string, *harness.Case) bool { return true })
		p.planned = filterID(p.Groups, o.Case)
		if len(p.planned) == 0 {
			return fmt.Errorf("--case=%s matches no case of backend %s (list the ids with --list)", o.Case, strings.Join(backends, ","))
		}
	}
	if len(p.planned) == 0 {
		return fmt.Errorf("the selection (backend %s, alloc %q, labels %q) matches no case", strings.Join(backends, ","), o.Alloc, p.LabelFilter)
	}
	return nil
}

// addGroup plans the cases keep keeps as the group name; a group left
// empty is not planned.
func (p *Plan) addGroup(name string, cases []*harness.Case, keep func(group string, c *harness.Case) bool) {
	g := Group{Name: name}
	for _, c := range cases {
		if keep(name, c) {
			g.Cases = append(g.Cases, c)
		}
	}
	if len(g.Cases) > 0 {
		p.Groups = append(p.Groups, g)
		p.planned = append(p.planned, g.Cases...)
	}
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

// checkBaseline refuses, before the first case, a baseline the run cannot
// be judged against or recorded into: another stack, one sharing (almost)
// no case with the plan, an --update-expectations target CheckUpdate
// refuses.
func (p *Plan) checkBaseline() error {
	o := p.Opts
	if err := p.checkStack(); err != nil {
		return err
	}
	if p.gate != nil {
		// The perf baseline whose scope is this run's GPUs (a folder may
		// hold one per card); none is refused like a stack mismatch.
		if err := p.gate.ChoosePerf(p.preEnv(), o.AllowStackMismatch); err != nil {
			return usagef("--expectations=%s: %v", o.Expectations, err)
		}
		// Not a stack check: --allow-stack-mismatch does not lift it.
		if err := expect.CheckShared(p.gate, p.IDs()); err != nil {
			return usagef("--expectations=%s: %v", o.Expectations, err)
		}
	}
	if o.UpdateExpectations {
		env := p.preEnv()
		env.Backends = recorded(p.Probes)
		if err := expect.CheckUpdate(p.updateDir(), env, o.Force); err != nil {
			return usagef("--update-expectations: %v", err)
		}
	}
	return nil
}

// checkStack refuses a baseline for another stack before any case runs,
// naming the expectation folders beside it that do match this machine.
func (p *Plan) checkStack() error {
	if p.gate == nil {
		return nil
	}
	env := p.preEnv()
	err := expect.CheckStack(p.gate.Stack, env, p.Opts.AllowStackMismatch)
	if err == nil {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	for _, e := range strings.Split(p.Opts.Expectations, ",") {
		parent := filepath.Dir(filepath.Clean(strings.TrimSpace(e)))
		if seen[parent] {
			continue
		}
		seen[parent] = true
		ents, _ := os.ReadDir(parent)
		for _, ent := range ents {
			if !ent.IsDir() {
				continue
			}
			d := filepath.Join(parent, ent.Name())
			if isFixture(d) {
				continue // a planted folder is never the one to gate on
			}
			s, lerr := expect.Load([]string{d})
			if lerr == nil && len(s.Stack) > 0 && expect.CheckStack(s.Stack, env, false) == nil {
				dirs = append(dirs, d)
			}
		}
	}
	match := "no folder beside it matches this machine"
	if len(dirs) > 0 {
		match = "folders that match this machine: " + strings.Join(dirs, ", ")
	}
	return usagef("--expectations=%s: %v; %s", p.Opts.Expectations, err, match)
}

// isFixture: dir's cases.txt has a "# fixture:" line, a folder planted for
// a test (expectations/host-amd64-verdicts), not a baseline.
func isFixture(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "# fixture:") {
			return true
		}
	}
	return false
}

// preEnv is the fingerprint known before any case runs: sysfs/procfs and
// the device facts of the backend probes.
func (p *Plan) preEnv() report.Environment {
	var infos [][]device.Info
	for _, pr := range p.Probes {
		if pr.Used {
			infos = append(infos, pr.infos)
		}
	}
	return environment(p.Opts, infos)
}
