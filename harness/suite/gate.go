package suite

import (
	"os"

	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// environment is the fingerprint: sysfs/procfs facts from the suite process
// plus the device facts every rank reported.
func environment(o *Options, infos [][]device.Info) map[string]any {
	env := fingerprint.Collect()
	var facts []device.Info
	for _, list := range infos {
		facts = append(facts, list...)
	}
	fingerprint.Merge(env, facts)
	env["flags"] = map[string]any{"backend": o.Backend, "alloc": o.Alloc, "ranks": o.Ranks, "seed": o.Seed}
	if rules := o.InjectRules(); len(rules) > 0 {
		env["inject"] = rules // the run is not a measurement of this driver
	}
	if fe := flagsFromEnv(); len(fe) > 0 {
		// The P2PAT_* variables the options were read from (a flag on the
		// command line wins over them): a scheduler that passes the
		// submitter's environment on to every node changes each node's
		// run, and its results.json must show by what (docs/FLEET.md).
		env["flags_env"] = fe
	}
	if h, err := os.Hostname(); err == nil {
		env["hostname"] = h // junit.xml's hostname, also when re-rendered elsewhere
	}
	return env
}

// flagsFromEnv is every P2PAT_<FLAG> variable set, flags and --<kind>
// shorthands alike, as Parse reads them.
func flagsFromEnv() map[string]any {
	fe := map[string]any{}
	names := append([]string{}, allKinds()...)
	for _, d := range FlagTable {
		names = append(names, d.Name)
	}
	for _, n := range names {
		if v, ok := os.LookupEnv(EnvName(n)); ok {
			fe[EnvName(n)] = v
		}
	}
	return fe
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
	s.AllowNewFlakes = r.Opts.AllowNewFlakes
	return s, nil
}

// selects reports whether a baseline id falls in this run's selection: the
// same backend and kind groups and labels (approximated by the id prefix).
func (r *Run) selects(id string) bool {
	if r.Opts.Case != "" {
		return id == r.Opts.Case
	}
	for _, g := range r.Groups {
		if c := report.ParseCase(id, nil); c.Backend+"."+c.Kind == g.Name {
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
