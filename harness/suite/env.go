package suite

import (
	"fmt"
	"os"
	"sync"

	"p2patomics/harness"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/internal/inject"
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

// caseEnv is what judging one case needs: the vendor and the device
// attributes the backend's ranks reported.
func caseEnv(rn *harness.Runner) report.Environment {
	return fingerprint.WithDevices(report.Environment{}, rn.DeviceInfos())
}

// envCache is the fingerprint with the device facts known so far, for the
// stream (EnvironmentKnown): collected again only when a world brought new
// ones. changed is true the first time and whenever it was collected again.
type envCache struct {
	mu  sync.Mutex
	env *report.Environment
	n   int
}

func (c *envCache) now(o *Options, infos [][]device.Info) (env report.Environment, changed bool) {
	n := 0
	for _, in := range infos {
		n += len(in)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.env == nil || n != c.n {
		env := environment(o, infos)
		c.env, c.n, changed = &env, n, true
	}
	return *c.env, changed
}

// injectFired is how many times each injector rule acted in the whole run,
// read from the run's counters (every rank's, a dead one's too); nil
// without rules. Unreadable counters claim nothing rather than zero.
func injectFired(rules []string, counters *os.File) map[string]uint64 {
	if len(rules) == 0 || counters == nil {
		return nil
	}
	fired, err := inject.ReadFired(counters, len(rules))
	if err != nil {
		fmt.Fprintf(os.Stderr, "p2patomics: the injector's counters: %v\n", err)
		return nil
	}
	out := make(map[string]uint64, len(rules))
	for i, rule := range rules {
		out[rule] = fired[i]
	}
	return out
}

// countFds counts the suite's open fds, leaving out the kernel log, which
// the harness opens once on first use and keeps.
func countFds() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "/dev/kmsg" {
			n++
		}
	}
	return n
}
