package suite

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"p2patomics/wire"
)

// BackendProbe is what opening one rank of a backend said: loaded (with
// its devices and driver) or why not. Every probe is printed and recorded
// in results.json's environment.backends.
// Its recorded part is report.Probe, the one spelling of that JSON (the
// readers of a results.json use it); infos stay with the suite.
type BackendProbe struct {
	report.Probe
	infos []device.Info
}

// recorded is what results.json keeps of the probes: their report.Probe
// parts (a nil slice when none ran, written as null as before).
func recorded(probes []BackendProbe) *[]report.Probe {
	var ps []report.Probe
	for _, p := range probes {
		ps = append(ps, p.Probe)
	}
	return &ps
}

// Line is the probe as one line of stdout.
func (p BackendProbe) Line() string {
	switch {
	case !backends.IsGPU(p.Backend):
		return "backend " + p.Backend + ": " + p.Why
	case p.Loaded:
		return fmt.Sprintf("backend %s: loaded: %d device(s) (%s), driver %s", p.Backend, p.Devices, p.Device, p.Driver)
	}
	return fmt.Sprintf("backend %s: not loaded: %s", p.Backend, p.Why)
}

// probe opens a one-rank world of backend be and closes it again.
func probe(be string, set wire.Settings) BackendProbe {
	p := BackendProbe{Probe: report.Probe{Backend: be}}
	w, err := harness.NewWorld(be, 1, set, time.Now().Add(60*time.Second))
	if err != nil {
		harness.CloseStart(err) // a world that failed to start is closed here
		p.Why = firstLine(err.Error())
		return p
	}
	defer w.Close()
	p.Loaded = true
	p.infos = append(p.infos, w.Infos...)
	if len(w.Infos) > 0 {
		info := w.Infos[0]
		p.Devices = info.Count
		p.Device = strings.TrimSpace(info.Name + " " + info.Arch)
		p.Driver = info.Driver
	}
	return p
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// gpuNodes lists the GPU device nodes that exist (each backend's row names
// its own, backends.DeviceNodes): where they do, a GPU backend that does
// not load is a broken stack, not a machine without GPUs. A variable so
// tests can plant nodes.
var gpuNodes = backends.DeviceNodes

// probeFunc opens one backend; a variable so tests can fake a driver.
var probeFunc = probe

// resolveBackends turns --backend into the backends to run, said out loud:
// auto probes every GPU backend and uses those that load, else host, but
// never host where GPU device nodes exist (a usage error naming why each
// vendor backend did not load); an explicit GPU backend that cannot load
// is a usage error with a hint. Either way, before any case runs.
func resolveBackends(o *Options) ([]string, []BackendProbe, error) {
	if backends.RunsOnCPU(o.Backend) {
		return []string{o.Backend}, []BackendProbe{{Probe: report.Probe{Backend: o.Backend, Loaded: true, Used: true, Why: "chosen with --backend=" + o.Backend}}}, nil
	}
	if o.Backend != "auto" && o.List {
		// The ids come from the catalogue: listing the CUDA cases (for
		// --case, for a baseline) on a box without the driver must work.
		return []string{o.Backend}, []BackendProbe{{Probe: report.Probe{Backend: o.Backend, Used: true, Why: "not loaded: --list reads the catalogue"}}}, nil
	}
	if o.Backend != "auto" {
		p := probeFunc(o.Backend, o.Settings())
		p.Used = p.Loaded
		if !p.Loaded {
			return nil, []BackendProbe{p}, usagef("--backend=%s cannot load: %s (hint: %s)", o.Backend, p.Why, backends.LoadHint(o.Backend))
		}
		return []string{o.Backend}, []BackendProbe{p}, nil
	}
	probes := make([]BackendProbe, len(harness.GPUBackends()))
	var wg sync.WaitGroup
	for i, be := range harness.GPUBackends() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probes[i] = probeFunc(be, o.Settings())
		}()
	}
	wg.Wait()
	var ok []string
	var why []string
	for i := range probes {
		if probes[i].Loaded {
			probes[i].Used = true
			ok = append(ok, probes[i].Backend)
		} else {
			why = append(why, probes[i].Backend+": "+probes[i].Why)
		}
	}
	if len(ok) > 0 {
		return ok, probes, nil
	}
	if nodes := gpuNodes(); len(nodes) > 0 {
		return nil, probes, usagef("--backend=auto: %s exists but no GPU backend loaded (%s); fix the stack, or pass --backend=host to run the host backend on purpose",
			strings.Join(nodes, ", "), strings.Join(why, "; "))
	}
	probes = append(probes, BackendProbe{Probe: report.Probe{Backend: backends.HostName, Loaded: true, Used: true,
		Why: "used: no GPU backend loaded and no GPU device node (" + strings.Join(backends.DeviceNodePatterns(), ", ") + ") exists"}})
	return []string{backends.HostName}, probes, nil
}
