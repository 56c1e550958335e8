package fingerprint

import (
	"os"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// Run is what a run was asked to do, as its environment records it: the
// flags that choose the machine's work, the driver-fault injector's
// rules, and the P2PAT_* variables the flags were read from.
type Run struct {
	Backend, Alloc string
	Ranks          int
	Seed           int64
	Inject         []string
	FlagsEnv       map[string]string
}

// Environment is a run's fingerprint for results.json's "environment",
// typed: the sysfs/procfs facts of this machine (Collect) plus the device
// facts every rank reported (WithDevices), the run's flags, the
// injector's rules and the host name.
func Environment(run Run, infos [][]device.Info) report.Environment {
	host, _ := os.Hostname() // "" on an error: no hostname key
	return withRun(Collect(), run, infos, host)
}

// withRun is Environment over a machine's facts already collected.
func withRun(env report.Environment, run Run, infos [][]device.Info, host string) report.Environment {
	var facts []device.Info
	for _, list := range infos {
		facts = append(facts, list...)
	}
	env = WithDevices(env, facts)
	env.Flags = &report.Flags{Backend: run.Backend, Alloc: run.Alloc, Ranks: run.Ranks, Seed: run.Seed}
	if len(run.Inject) > 0 {
		env.Inject = run.Inject // the run is not a measurement of this driver
	}
	if len(run.FlagsEnv) > 0 {
		// The P2PAT_* variables the options were read from (a flag on the
		// command line wins over them): a scheduler that passes the
		// submitter's environment on to every node changes each node's
		// run, and its results.json must show by what (docs/FLEET.md).
		env.FlagsEnv = run.FlagsEnv
	}
	env.Hostname = host // junit.xml's hostname, also when re-rendered elsewhere
	return env
}
