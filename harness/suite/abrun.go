package suite

import (
	"path/filepath"
	"strings"
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/ab"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// An A/B run (--ab=SPEC, harness/ab): every case runs on stack A (what
// the run loads without --ab) and on stack B in alternating worlds, block
// by block, each block's order drawn from the seed; the case's result is
// A's (gated as any run's), and the ab section of results.json judges B
// against A.

// resolveAB resolves a library SPEC for each backend the run uses and
// starts one rank of stack B on it (the probe A had): a library the rank
// cannot load, or a rank that maps another file than the one named
// (binding's /proc/self/maps check), is a usage error before --out is
// touched.
func (o *Options) resolveAB(bes []string) error {
	if o.ab == nil || o.ab.Kind != ab.Library || o.List {
		return nil
	}
	o.abLib = map[string]string{}
	for _, be := range bes {
		lib, err := o.ab.Resolve(be)
		if err != nil {
			return usagef("--ab=%s: %v", quote(o.AB), specWhy(err))
		}
		o.abLib[be] = lib
		if p := probeFunc(be, o.settingsB(be)); !p.Loaded {
			return usagef("--ab=%s: stack B (%s) does not load on backend %s: %s", quote(o.AB), lib, be, p.Why)
		}
	}
	return nil
}

// settingsB is what stack B's ranks of backend are told in their hello:
// A's settings with B's library or B's injector rules.
func (o *Options) settingsB(backend string) wire.Settings {
	set := o.Settings()
	if o.ab == nil {
		return set
	}
	switch o.ab.Kind {
	case ab.Inject:
		set.Inject = o.ab.RuleStrings()
	case ab.Library:
		set.Library = o.abLib[backend]
	}
	return set
}

// abRun is an A/B run's side of the executor: it runs each case on both
// stacks (runs, which the executor calls in place of its soak) and keeps
// every case's blocks for the judgement at the end (judge). It holds what
// it needs, never the executor, so abrun.go stands below executor.go.
type abRun struct {
	o      *Options
	worlds *worlds
	mu     sync.Mutex
	cases  []ab.Case
}

func (a *abRun) add(c ab.Case) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cases = append(a.cases, c)
}

// runs runs c Blocks times on each side, each block's order drawn from
// the seed (ab.BFirst), and records both sides' results; it returns A's
// one result (the worst of its blocks, its metrics summarised over them),
// which the run records and gates as any run's. stopped is the run ending
// (the ledger's done): no block starts after it, nor after a runner's
// abort.
func (a *abRun) runs(c *harness.Case, rn *harness.Runner, stopped func() bool) report.Result {
	o := a.o
	rb := a.worlds.getB(c.Backend)
	var as, bs []report.Result
	for b := 0; b < o.ABBlocks; b++ {
		first, second := rn, rb
		if ab.BFirst(o.Seed, c.ID, b) {
			first, second = rb, rn
		}
		for _, r := range []*harness.Runner{first, second} {
			one := r.Run(c)
			if r == rb {
				bs = append(bs, one)
			} else {
				as = append(as, one)
			}
		}
		if stopped() || rn.Abort != "" || rb.Abort != "" {
			break
		}
	}
	repro := c.Repro
	if repro == "" {
		repro = Repro(o, c.Backend, c.Kind, c.ID, c.Ranks) // carries --ab: the case on both stacks
	}
	a.add(ab.Case{ID: c.ID, Repro: repro, A: as, B: bs})
	res := ab.Worst(as)
	if len(as) > 1 {
		ms := make([]map[string]report.Metric, len(as))
		for i, r := range as {
			ms[i] = r.Metrics
		}
		res.Metrics = report.SoakMetrics(ms)
	}
	return res
}

// judge is the run's A/B section, nil without --ab.
func (a *abRun) judge() *report.AB {
	if a == nil || a.o.ab == nil {
		return nil
	}
	o := a.o
	a.mu.Lock()
	cases := append([]ab.Case(nil), a.cases...)
	a.mu.Unlock()
	sa, sb := report.ABStack{Side: "A"}, report.ABStack{Side: "B", Inject: o.ab.RuleStrings()}
	var libs []string
	for _, rn := range a.worlds.list() {
		st := &sa
		if a.worlds.sideB(rn) {
			st = &sb
			if l := o.abLib[rn.Backend]; l != "" && !containsStr(libs, l) {
				libs = append(libs, l)
			}
		}
		stackFacts(st, rn.DeviceInfos())
	}
	sb.Library = strings.Join(libs, ", ")
	return ab.Judge(o.AB, o.ABBlocks, sa, sb, cases)
}

// stackFacts fills a side's driver facts from its ranks' reports.
func stackFacts(st *report.ABStack, infos []device.Info) {
	for _, in := range infos {
		if st.Driver == "" {
			st.Driver = in.Driver
		}
		if st.Runtime == "" {
			st.Runtime = in.Runtime
		}
		if st.Device == "" {
			st.Device = strings.TrimSpace(in.Name + " " + in.Arch)
		}
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// runnerB is backend's stack-B runner: A's runner as newRun makes it, with
// B's hello settings, and its evidence folders under <out>/b/ so A's and
// B's folders of one case never overwrite each other.
func runnerB(o *Options, makeA func(string) *harness.Runner) func(string) *harness.Runner {
	return func(backend string) *harness.Runner {
		rn := makeA(backend)
		set := o.settingsB(backend)
		if len(set.Inject) > 0 {
			set.InjectCounters = nil // B's ranks count alone: A's counters are the run's
		}
		rn.Settings = set
		if rn.Evidence != nil {
			ev := *rn.Evidence
			ev.Out = filepath.Join(o.Out, "b")
			ev.Write = nil
			rn.Evidence = &ev
		}
		return rn
	}
}
