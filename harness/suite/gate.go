package suite

import (
	"os"

	"p2patomics/harness/expect"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// environment is the fingerprint (fingerprint.Environment) of this run.
func environment(o *Options, infos [][]device.Info) report.Environment {
	return fingerprint.Environment(fingerprint.Run{Backend: o.Backend, Alloc: o.Alloc, Ranks: o.Ranks, Seed: o.Seed, Inject: o.InjectRules(), FlagsEnv: flagsFromEnv()}, infos)
}

// flagsFromEnv is every P2PAT_<FLAG> variable set, flags and --<kind>
// shorthands alike, as Parse reads them.
func flagsFromEnv() map[string]string {
	fe := map[string]string{}
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
