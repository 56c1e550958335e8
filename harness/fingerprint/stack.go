package fingerprint

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"p2patomics/harness/backends"
)

// Stack reduces an environment (from Collect+Merge, or read back from a
// results.json) to the keys expectation folders are matched on:
//
//	vendor  env["vendor"] (host, "nvidia", "amd"; "unknown" if absent)
//	arch    host: env["goarch"]; GPUs: the ranks' gpus[].arch (distinct
//	        values sorted and "+"-joined), else the KFD nodes' gfx names
//	        (AMD), else "unknown"
//	driver  nvidia: nvidia.driver (580.159.04), else gpus[].driver;
//	        amd: amdgpu.version (DKMS), else the kernel release (in-tree
//	        amdgpu); host: absent
func Stack(env map[string]any) map[string]string {
	e := normalize(env)
	st := map[string]string{}
	vendor := str(e["vendor"])
	if vendor == "" {
		vendor = "unknown"
	}
	st["vendor"] = vendor
	if backends.Driverless(vendor) {
		if a := str(e["goarch"]); a != "" {
			st["arch"] = a
		}
		return st
	}
	archs := map[string]bool{}
	drivers := []string{}
	for _, g := range list(e["gpus"]) {
		if a := str(g["arch"]); a != "" {
			archs[a] = true
		}
		if d := str(g["driver"]); d != "" {
			drivers = append(drivers, d)
		}
	}
	if len(archs) == 0 {
		for _, n := range list(obj(e["amdgpu"])["nodes"]) {
			if a := str(n["gfx"]); a != "" {
				archs[a] = true
			}
		}
	}
	if len(archs) > 0 {
		var as []string
		for a := range archs {
			as = append(as, a)
		}
		sort.Strings(as)
		st["arch"] = strings.Join(as, "+")
	} else {
		st["arch"] = "unknown"
	}
	var driver string
	switch {
	case strings.Contains(vendor, "nvidia"):
		driver = str(obj(e["nvidia"])["driver"])
	case strings.Contains(vendor, "amd"):
		driver = str(obj(e["amdgpu"])["version"])
		if driver == "" {
			driver = str(obj(e["os"])["kernel"])
		}
	}
	if driver == "" && len(drivers) > 0 {
		driver = drivers[0]
	}
	if driver != "" {
		st["driver"] = driver
	}
	return st
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

// normalize round-trips env through JSON so that in-process maps (with
// []map[string]any, typed slices, structs) and maps read back from
// results.json look the same.
func normalize(env map[string]any) map[string]any {
	b, err := json.Marshal(env)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []map[string]any {
	a, _ := v.([]any)
	var out []map[string]any
	for _, x := range a {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
