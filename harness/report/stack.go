package report

import (
	"regexp"
	"sort"
	"strings"

	"p2patomics/harness/backends"
)

// Stack reduces the environment (built by package fingerprint, or read
// back from a results.json) to the keys expectation folders are matched
// on:
//
//	vendor  Vendor (host, "nvidia", "amd"; "unknown" if absent)
//	arch    host: GOARCH; GPUs: the ranks' gpus[].arch (distinct values
//	        sorted and "+"-joined), else the KFD nodes' gfx names (AMD),
//	        else "unknown"
//	driver  nvidia: nvidia.driver (580.159.04), else gpus[].driver;
//	        amd: amdgpu.version (DKMS), else the kernel release (in-tree
//	        amdgpu); host: absent
//
// It reads the typed parts directly: the results model owns the rule,
// so that reading a record never needs the collector of machine facts.
func (e Environment) Stack() map[string]string {
	st := map[string]string{}
	vendor := e.Vendor
	if vendor == "" {
		vendor = "unknown"
	}
	st["vendor"] = vendor
	if backends.Driverless(vendor) {
		if a := e.GOARCH; a != "" {
			st["arch"] = a
		}
		return st
	}
	st["arch"] = e.stackArch()
	if driver := e.stackDriver(vendor); driver != "" {
		st["driver"] = driver
	}
	return st
}

// stackArch is Stack's arch on a GPU stack.
func (e Environment) stackArch() string {
	archs := map[string]bool{}
	for _, g := range e.GPUs {
		if g.Arch != "" {
			archs[g.Arch] = true
		}
	}
	if len(archs) == 0 {
		for _, n := range objects(e.Section("amdgpu")["nodes"]) {
			if a := text(n["gfx"]); a != "" {
				archs[a] = true
			}
		}
	}
	if len(archs) == 0 {
		return "unknown"
	}
	var as []string
	for a := range archs {
		as = append(as, a)
	}
	sort.Strings(as)
	return strings.Join(as, "+")
}

// stackDriver is Stack's driver on a GPU stack ("" when none is known).
func (e Environment) stackDriver(vendor string) string {
	var driver string
	switch {
	case strings.Contains(vendor, "nvidia"):
		driver = text(e.Section("nvidia")["driver"])
	case strings.Contains(vendor, "amd"):
		driver = text(e.Section("amdgpu")["version"])
		if driver == "" {
			driver = e.OSFacts().Kernel
		}
	}
	if driver == "" {
		for _, g := range e.GPUs {
			if g.Driver != "" {
				return g.Driver
			}
		}
	}
	return driver
}

var numRe = regexp.MustCompile(`^\d+(?:\.\d+)*`)

// DriverLine is the part of a driver version that names a driver line:
// NVIDIA's branch (major: "580.159.04" → "580"), otherwise major.minor
// ("6.8.5" → "6.8", kernel "6.1.0-28-amd64" → "6.1"). A version with no
// leading number is returned as is.
func DriverLine(vendor, driver string) string {
	num := numRe.FindString(driver)
	if num == "" {
		return driver
	}
	parts := strings.Split(num, ".")
	if strings.Contains(vendor, "nvidia") || len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + "." + parts[1]
}

var unsafeRe = regexp.MustCompile(`[^a-z0-9._+-]+`)

// Folder names the expectation folder of a stack: <vendor>-<arch>-<driverline>
// ("nvidia-sm_90-580", "amd-gfx942-6.8"), or <vendor>-<arch> when there is no
// driver (always for host: "host-amd64"). Characters outside [a-z0-9._+-]
// become "_".
func Folder(stack map[string]string) string {
	parts := []string{stack["vendor"], stack["arch"]}
	if !backends.Driverless(stack["vendor"]) && stack["driver"] != "" {
		parts = append(parts, DriverLine(stack["vendor"], stack["driver"]))
	}
	var out []string
	for _, p := range parts {
		p = unsafeRe.ReplaceAllString(strings.ToLower(p), "_")
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "-")
}

// objects is a section's list of objects, as JSON spells it ([]any) or
// as the fingerprint builds it in memory ([]map[string]any).
func objects(v any) []map[string]any {
	switch a := v.(type) {
	case []map[string]any:
		return a
	case []any:
		var out []map[string]any
		for _, x := range a {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func text(v any) string {
	s, _ := v.(string)
	return s
}
