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
)

// focusFilter applies --ginkgo.focus and --ginkgo.skip to the plan the way
// Ginkgo does (regexps over "<suite> <containers> <id>"), so the plan,
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
		// RunSpecs' description, the one top-level container, the group.
		text := "p2patomics p2patomics " + group + " " + id
		if fre != nil && !fre.MatchString(text) {
			return false
		}
		return sre == nil || !sre.MatchString(text)
	}, nil
}

// IDs are the planned case ids in plan order (what --list prints).
func (r *Run) IDs() []string {
	ids := make([]string, 0, len(r.planned))
	for _, c := range r.planned {
		ids = append(ids, c.ID)
	}
	return ids
}

// Catalogue builds every case for one backend and kind (package specs).
type Catalogue func(o *Options, backend, kind string) []*harness.Case

// NewRun resolves the backend, builds and filters the plan from cat.
func NewRun(o *Options, userFilter string, cat Catalogue) (*Run, error) {
	r := &Run{Opts: o, runners: map[string]*harness.Runner{}, results: map[string]report.Result{}, startFds: -1, t0: time.Now()}
	var terms []string
	if strings.TrimSpace(userFilter) != "" {
		terms = append(terms, "("+userFilter+")")
	}
	if o.Atomics {
		terms = append(terms, "atomics")
	}
	if o.Perf {
		terms = append(terms, "perf")
	}
	r.LabelFilter = strings.Join(terms, " && ")
	gs, err := r.gateSet()
	if err != nil {
		return nil, err
	}
	r.gate = gs
	match := func([]string) bool { return true }
	if r.LabelFilter != "" {
		f, err := types.ParseLabelFilter(r.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("label filter %s: %s", quote(r.LabelFilter), oneLine(err.Error()))
		}
		match = f
	}
	inFocus, err := focusFilter(o.FocusStrings, o.SkipStrings)
	if err != nil {
		return nil, err
	}
	backends, err := r.resolveBackends()
	if err != nil {
		return nil, err
	}
	for _, be := range backends {
		kinds := harness.Matrix[be]
		if o.Alloc != "" {
			if !slices.Contains(kinds, o.Alloc) {
				continue
			}
			kinds = []string{o.Alloc}
		}
		for _, kind := range kinds {
			g := Group{Name: be + "." + kind}
			for _, c := range cat(o, be, kind) {
				if o.Case != "" && c.ID != o.Case {
					continue
				}
				if o.Case == "" && !match(c.Labels) {
					continue
				}
				if !inFocus(g.Name, c.ID) {
					continue
				}
				g.Cases = append(g.Cases, c)
			}
			if len(g.Cases) > 0 {
				r.Groups = append(r.Groups, g)
				r.planned = append(r.planned, g.Cases...)
			}
		}
	}
	if o.Case == "" && o.Alloc == "" && r.LabelFilter == "" && slices.Contains(backends, descriptors.HostName) {
		r.addSuiteCases()
		r.focusSuiteCases(inFocus)
	}
	if o.Case != "" && len(r.planned) == 0 {
		r.addSuiteCases()
		r.planned = filterID(r.Groups, o.Case)
		if len(r.planned) == 0 {
			return nil, fmt.Errorf("--case=%s matches no case of backend %s (list the ids with --list)", o.Case, strings.Join(backends, ","))
		}
	}
	if len(r.planned) == 0 {
		return nil, fmt.Errorf("the selection (backend %s, alloc %q, labels %q) matches no case", strings.Join(backends, ","), o.Alloc, r.LabelFilter)
	}
	if o.List {
		return r, nil // a list runs nothing: no stack to check against the baseline
	}
	if err := r.checkStack(); err != nil {
		return nil, err
	}
	if r.gate != nil {
		// Not a stack check: --allow-stack-mismatch does not lift it.
		if err := expect.CheckShared(r.gate, r.IDs()); err != nil {
			return nil, usagef("--expectations=%s: %v", o.Expectations, err)
		}
	}
	if o.UpdateExpectations {
		env := r.preEnv()
		env["backends"] = r.Probes
		if err := expect.CheckUpdate(r.updateDir(), env, o.Force); err != nil {
			return nil, usagef("--update-expectations: %v", err)
		}
	}
	return r, nil
}

// focusSuiteCases drops the suite's own cases that Ginkgo's focus/skip
// leaves out.
func (r *Run) focusSuiteCases(inFocus func(group, id string) bool) {
	last := &r.Groups[len(r.Groups)-1]
	var keep []*harness.Case
	for _, c := range last.Cases {
		if inFocus(last.Name, c.ID) {
			keep = append(keep, c)
		}
	}
	r.planned = r.planned[:len(r.planned)-len(last.Cases)]
	last.Cases = keep
	r.planned = append(r.planned, keep...)
	if len(keep) == 0 {
		r.Groups = r.Groups[:len(r.Groups)-1]
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
