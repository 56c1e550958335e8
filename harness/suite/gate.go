package suite

import (
	"fmt"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
)

// environment is the fingerprint: sysfs/procfs facts from the suite process
// plus the device facts every rank reported.
func environment(o *Options, infos [][]map[string]any) map[string]any {
	env := fingerprint.Collect()
	var facts []map[string]any
	for _, list := range infos {
		facts = append(facts, list...)
	}
	fingerprint.Merge(env, facts)
	env["flags"] = map[string]any{"backend": o.Backend, "alloc": o.Alloc, "ranks": o.Ranks, "seed": o.Seed}
	return env
}

func (r *Run) gateSet() (*expect.Set, error) {
	if r.Opts.Expectations == "" {
		return nil, nil
	}
	if r.Opts.UpdateExpectations {
		return nil, nil // recording, not gating
	}
	s, err := expect.LoadList(r.Opts.Expectations)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// applyGate judges the run against the baseline (gate mode) or records it
// as the new baseline. It returns the exit code, or -1 when not gating.
func applyGate(r *Run, rep *report.Report) (int, error) {
	if r.Opts.Expectations == "" {
		return -1, nil
	}
	if r.Opts.UpdateExpectations {
		dir := strings.Split(r.Opts.Expectations, ",")[0]
		if err := expect.WriteBaseline(dir, rep, nil); err != nil {
			return 1, err
		}
		fmt.Printf("baseline written to %s\n", dir)
		return -1, nil
	}
	s := r.gate
	if err := expect.CheckStack(s.Stack, rep.Environment, r.Opts.AllowStackMismatch); err != nil {
		return 2, err
	}
	selected := func(id string) bool { return r.selects(id) }
	results, g := expect.Gate(rep.Results, s, selected)
	rep.Results, rep.Gate = results, &g
	if g.Pass {
		return 0, nil
	}
	return 1, nil
}

// selects reports whether a baseline id falls in this run's selection: the
// same backend and kind groups and labels (approximated by the id prefix).
func (r *Run) selects(id string) bool {
	if r.Opts.Case != "" {
		return id == r.Opts.Case
	}
	for _, g := range r.Groups {
		if strings.HasPrefix(id, g.Name+".") {
			return r.LabelFilter == "" || r.planID(id)
		}
	}
	return false
}

func (r *Run) planID(id string) bool {
	for _, c := range r.planned {
		if c.ID == id {
			return true
		}
	}
	return false
}
