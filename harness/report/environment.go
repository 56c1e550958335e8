package report

import (
	"encoding/json"
	"strconv"
	"strings"

	"p2patomics/internal/device"
)

// Environment is results.json's "environment": the fingerprint of the
// machine and the run (package fingerprint writes it; its package doc
// lists the keys). It stays a JSON object of open shape, because a
// results.json of any age must read, re-render and write back unchanged
// (the vendor sections nvidia and amdgpu hold what each driver exposes);
// the methods below are its typed readers, so a reader asks for GPUs or
// the host name instead of walking maps.
type Environment map[string]any

// Text is the string at key, "" when absent or of another type.
func (e Environment) Text(key string) string {
	s, _ := e[key].(string)
	return s
}

// Vendor is the vendor of the devices the ranks opened (the host
// backend's own for a host run), else of the loaded kernel driver.
func (e Environment) Vendor() string { return e.Text("vendor") }

// Hostname is the machine's name; "unknown" for a results.json from
// before the suite recorded it.
func (e Environment) Hostname() string {
	if h := e.Text("hostname"); h != "" {
		return h
	}
	return "unknown"
}

// Started is when the run started, RFC 3339; "" when not recorded.
func (e Environment) Started() string { return e.Text("started") }

// Driver is the GPU kernel driver's version (NVIDIA's driver, amdgpu's
// version), "" on a machine without one.
func (e Environment) Driver() string {
	for _, k := range []string{"nvidia", "amdgpu"} {
		for _, dk := range []string{"driver", "version"} {
			if d, ok := e.section(k)[dk].(string); ok && d != "" {
				return d
			}
		}
	}
	return ""
}

// Section is the object at key (os, harness, nvidia, amdgpu, iommu,
// flags, ...), read as JSON spells it; nil when absent.
func (e Environment) Section(key string) map[string]any { return e.section(key) }

func (e Environment) section(key string) map[string]any {
	switch m := e[key].(type) {
	case map[string]any:
		return m
	case nil:
		return nil
	default:
		var out map[string]any
		if b, err := json.Marshal(m); err == nil && json.Unmarshal(b, &out) == nil {
			return out
		}
		return nil
	}
}

// GPUs is the device facts the ranks reported, one per device (gpus[],
// read by GPUs: typed alike for the suite's own environment and one read
// from a results.json).
func (e Environment) GPUs() []device.Info { return GPUs(e) }

// Inject is the driver-fault injector's rules the run ran under
// (InjectRules); nil for a real measurement.
func (e Environment) Inject() []string { return InjectRules(e) }

// GPUList says the GPUs in a few words: "2 x NVIDIA H200 (sm_90)".
func (e Environment) GPUList() []string {
	count := map[string]int{}
	var order []string
	for _, g := range e.GPUs() {
		k := strings.TrimSpace(g.Name + " (" + g.Arch + ")")
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, strconv.Itoa(count[k])+" x "+k)
	}
	return out
}
