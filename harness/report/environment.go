package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"p2patomics/internal/device"
)

// Environment is results.json's "environment": the fingerprint of the
// machine and the run. The parts the harness itself writes and reads are
// typed fields; MarshalJSON and UnmarshalJSON keep the JSON object's
// shape (one object, its keys sorted, each key as before), so a
// results.json of any age reads, re-renders and writes back unchanged.
type Environment struct {
	// Vendor is the vendor of the devices the ranks opened (the host
	// backend's own for a host run), else of the loaded kernel driver.
	Vendor string
	// GOARCH and GOOS are the suite's (goarch, goos).
	GOARCH, GOOS string
	// Hostname is the machine's name (junit.xml's hostname); "" in a
	// record from before the suite wrote it (NodeName says "unknown").
	Hostname string
	// Started is when the run started, RFC 3339 (junit.xml's timestamp);
	// "" in a checkpoint and in older records.
	Started string
	// GPUs are the device facts the ranks reported, one per device.
	GPUs []GPU
	// Inject is the driver-fault injector's rules the run ran under; nil
	// for a real measurement.
	Inject []string
	// InjectFired is how many times each of Inject's rules acted in the
	// whole run, counted across every rank (internal/inject's run
	// counters); nil where the run had no rules, and in older records.
	InjectFired map[string]uint64
	// Flags are the flags that chose the machine's work; nil in a record
	// that has none.
	Flags *Flags
	// Backends are the suite's backend probes (the recorded part of its
	// BackendProbe); a pointer, so that a recorded null (nil slice) and an
	// absent key (nil pointer) write back as they were read.
	Backends *[]Probe
	// WorldsStarted is how many worlds the run started (nil in a
	// checkpoint, which is written before the count is final).
	WorldsStarted *int
	// Trimmed says what the suite cut from a report when --out was full.
	Trimmed string
	// OS is the kernel and distribution (os); nil when not recorded.
	OS *OS
	// Harness is the harness that made the record (harness).
	Harness *Harness
	// IOMMU is the IOMMUs, their groups and the kernel command line's
	// IOMMU, GPU driver, PCI and NUMA settings (iommu).
	IOMMU *IOMMU
	// Settings are the fault-relevant environment variables that were
	// set (settings: HSA_XNACK, CUDA_VISIBLE_DEVICES, ...).
	Settings map[string]string
	// FlagsEnv are the P2PAT_* variables the flags were read from
	// (flags_env).
	FlagsEnv map[string]string
	// Sharing says which ranks share a GPU and whether CUDA MPS serves
	// them (device_sharing; GPU stacks only).
	Sharing *Sharing
	// Sections are the other keys, as JSON spells them: the vendor
	// sections nvidia and amdgpu, a key a later writer adds, and any of
	// the objects above holding a key its type lacks. They stay open maps
	// on purpose: the vendor sections hold what each driver exposes
	// (their shapes are fingerprint's, per vendor, and the harness
	// decides nothing on them beyond the readers below), and what a later
	// writer added must survive a re-render by an older reader.
	Sections map[string]any
}

// Flags are environment.flags: the run's --backend, --alloc, --ranks and
// --seed (all four always written; the field order is the key order).
type Flags struct {
	Alloc   string `json:"alloc"`
	Backend string `json:"backend"`
	Ranks   int    `json:"ranks"`
	Seed    int64  `json:"seed"`
}

// OS is environment.os: the kernel's release and version, the
// distribution's name (field order = key order).
type OS struct {
	Kernel        string `json:"kernel,omitempty"`
	KernelVersion string `json:"kernel_version,omitempty"`
	Release       string `json:"release,omitempty"`
}

// Harness is environment.harness: the harness's version, commit, Go
// version and module (field order = key order).
type Harness struct {
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go,omitempty"`
	Module  string `json:"module,omitempty"`
	Version string `json:"version,omitempty"`
}

// IOMMU is environment.iommu (field order = key order).
type IOMMU struct {
	Cmdline []string `json:"cmdline,omitempty"`
	Devices []string `json:"devices,omitempty"`
	Groups  *int     `json:"groups,omitempty"`
}

// Sharing is environment.device_sharing: the GPUs more than one rank
// opened, and MPS "on", "off", "mixed" or "unknown".
type Sharing struct {
	MPS    string      `json:"mps"`
	Shared []SharedGPU `json:"shared"`
}

// SharedGPU is one GPU several ranks opened (field order = key order).
type SharedGPU struct {
	Ordinal int    `json:"ordinal"`
	Ranks   []int  `json:"ranks"`
	UUID    string `json:"uuid,omitempty"`
}

// Probe is one of environment.backends: a backend the suite tried and
// what it said (the JSON of the suite's BackendProbe).
//
// Field order = key order, as for the other typed parts: a record read
// and written again keeps its bytes.
type Probe struct {
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"`
	Devices int    `json:"devices,omitempty"`
	Driver  string `json:"driver,omitempty"`
	Loaded  bool   `json:"loaded"`
	Used    bool   `json:"used"`
	Why     string `json:"why,omitempty"`
}

// GPU is one of environment.gpus: one device's facts (its device.Info,
// whose per-rank Rank is not written) and the ranks that opened it.
type GPU struct {
	device.Info
	Ranks []int
	// read is the keys the entry had when read from a file (nil for one
	// built in memory). A record written before device.Info grew a key
	// (caps, in the first H200 records) lacks it, and writing it back must
	// not add the key's zero value: MarshalJSON leaves out a key the entry
	// was read without while the value is still the zero one.
	read map[string]bool
}

// zeroGPU is device.Info{} in its JSON shape: what a key the entry was
// read without holds when nothing has set it since.
var zeroGPU = func() map[string]any {
	m, _ := infoShape(device.Info{})
	return m
}()

func infoShape(in device.Info) (map[string]any, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	return m, err
}

// MarshalJSON writes the entry as results.json holds it: device.Info's
// keys without "rank", plus "ranks" when known, keys sorted.
func (g GPU) MarshalJSON() ([]byte, error) {
	m, err := infoShape(g.Info)
	if err != nil {
		return nil, err
	}
	delete(m, "rank")
	if g.Ranks != nil {
		m["ranks"] = g.Ranks
	}
	if g.read != nil {
		for k, v := range m {
			if !g.read[k] && reflect.DeepEqual(v, zeroGPU[k]) {
				delete(m, k)
			}
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an entry MarshalJSON wrote, or an older one.
func (g *GPU) UnmarshalJSON(b []byte) error {
	var r struct {
		Ranks []int `json:"ranks"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	*g = GPU{Ranks: r.Ranks, read: map[string]bool{}}
	for k := range keys {
		g.read[k] = true
	}
	return json.Unmarshal(b, &g.Info)
}

// MarshalJSON writes one object: Sections plus each typed part that is
// set, under the key the fingerprint has always used.
func (e Environment) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Sections)+10)
	maps.Copy(m, e.Sections)
	for k, v := range map[string]string{"vendor": e.Vendor, "goarch": e.GOARCH, "goos": e.GOOS, "hostname": e.Hostname, "started": e.Started, "trimmed": e.Trimmed} {
		if v != "" {
			m[k] = v
		}
	}
	if e.GPUs != nil {
		m["gpus"] = e.GPUs
	}
	if len(e.Inject) > 0 {
		m["inject"] = e.Inject
	}
	if e.InjectFired != nil {
		m["inject_fired"] = e.InjectFired
	}
	if e.Flags != nil {
		m["flags"] = e.Flags
	}
	if e.Backends != nil {
		m["backends"] = e.Backends
	}
	if e.WorldsStarted != nil {
		m["worlds_started"] = *e.WorldsStarted
	}
	if e.OS != nil {
		m["os"] = e.OS
	}
	if e.Harness != nil {
		m["harness"] = e.Harness
	}
	if e.IOMMU != nil {
		m["iommu"] = e.IOMMU
	}
	if e.Settings != nil {
		m["settings"] = e.Settings
	}
	if e.FlagsEnv != nil {
		m["flags_env"] = e.FlagsEnv
	}
	if e.Sharing != nil {
		m["device_sharing"] = e.Sharing
	}
	return json.Marshal(m) // a map: keys sorted, as when Environment was one
}

// UnmarshalJSON reads the object back: the known keys into the typed
// parts, every other key into Sections as JSON spells it.
func (e *Environment) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = Environment{}
	texts := map[string]*string{"vendor": &e.Vendor, "goarch": &e.GOARCH, "goos": &e.GOOS, "hostname": &e.Hostname, "started": &e.Started, "trimmed": &e.Trimmed}
	typed := map[string]any{"gpus": &e.GPUs, "inject": &e.Inject, "inject_fired": &e.InjectFired, "flags": &e.Flags, "worlds_started": &e.WorldsStarted}
	for k, v := range raw {
		var err error
		switch {
		case texts[k] != nil:
			err = json.Unmarshal(v, texts[k])
		case typed[k] != nil:
			err = json.Unmarshal(v, typed[k])
		case k == "os" && strict(v, &e.OS), k == "harness" && strict(v, &e.Harness),
			k == "iommu" && strict(v, &e.IOMMU), k == "device_sharing" && strict(v, &e.Sharing),
			k == "settings" && strictMap(v, &e.Settings), k == "flags_env" && strictMap(v, &e.FlagsEnv),
			k == "backends" && strict(v, &e.Backends):
			// typed; an object with a key (or a value) its type lacks, a
			// later writer's, stays whole in Sections instead
		default:
			var x any
			err = json.Unmarshal(v, &x)
			if e.Sections == nil {
				e.Sections = map[string]any{}
			}
			e.Sections[k] = x
		}
		if err != nil {
			return fmt.Errorf("environment.%s: %w", k, err)
		}
	}
	return nil
}

// strict decodes v into *dst when every key of v has a field there (a
// null is left to Sections, so it writes back as null).
func strict[T any](v json.RawMessage, dst **T) bool {
	if string(bytes.TrimSpace(v)) == "null" {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	var t T
	if d.Decode(&t) != nil {
		return false
	}
	*dst = &t
	return true
}

// strictMap decodes v into *dst when v is an object of strings.
func strictMap(v json.RawMessage, dst *map[string]string) bool {
	var m map[string]string
	if string(bytes.TrimSpace(v)) == "null" || json.Unmarshal(v, &m) != nil {
		return false
	}
	*dst = m
	return true
}

// Probes is Backends typed (nil when none were recorded).
func (e Environment) Probes() []Probe {
	if e.Backends == nil {
		return nil
	}
	return *e.Backends
}

// NodeName is the machine's name; "unknown" for a results.json from
// before the suite recorded it.
func (e Environment) NodeName() string {
	if e.Hostname != "" {
		return e.Hostname
	}
	return "unknown"
}

// Driver is the GPU kernel driver's version (NVIDIA's driver, amdgpu's
// version), "" on a machine without one. The vendor sections' names are
// known here and in fingerprint only: a picture's title or a CI property
// asks for "the driver".
func (e Environment) Driver() string {
	for _, k := range []string{"nvidia", "amdgpu"} {
		for _, dk := range []string{"driver", "version"} {
			if d, ok := e.Section(k)[dk].(string); ok && d != "" {
				return d
			}
		}
	}
	return ""
}

// Kernel is the OS kernel's release (os.kernel), "" when not recorded.
func (e Environment) Kernel() string { return e.OSFacts().Kernel }

// OSFacts is OS, also when a later writer's os object stayed in
// Sections; zero when not recorded.
func (e Environment) OSFacts() OS {
	if e.OS != nil {
		return *e.OS
	}
	return loose[OS](e.Sections["os"])
}

// HarnessFacts is Harness, also when a later writer's harness object
// stayed in Sections; zero when not recorded.
func (e Environment) HarnessFacts() Harness {
	if e.Harness != nil {
		return *e.Harness
	}
	return loose[Harness](e.Sections["harness"])
}

// loose reads v's known keys into a T, ignoring the rest.
func loose[T any](v any) T {
	var t T
	if v != nil {
		if b, err := json.Marshal(v); err == nil {
			_ = json.Unmarshal(b, &t)
		}
	}
	return t
}

// Section is the object at key in Sections (nvidia, amdgpu, ...),
// read as JSON spells it; nil when absent. A section the fingerprint
// built in memory (typed slices inside) reads as a file's would.
func (e Environment) Section(key string) map[string]any {
	switch m := e.Sections[key].(type) {
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

// Devices is GPUs as the ranks' device.Info (Rank zero).
func (e Environment) Devices() []device.Info {
	if e.GPUs == nil {
		return nil
	}
	out := make([]device.Info, len(e.GPUs))
	for i, g := range e.GPUs {
		out[i] = g.Info
	}
	return out
}

// GPUList says the GPUs in a few words: "2 x NVIDIA H200 (sm_90)".
func (e Environment) GPUList() []string {
	count := map[string]int{}
	var order []string
	for _, g := range e.GPUs {
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

// EnvironmentOf types an environment held as a JSON-shaped object (a
// test's literal, a tool's hand-made record); the run's own environment
// is built typed by package fingerprint and never takes this path. Its
// values are strings, numbers, maps and device facts, which JSON always
// holds; were one not, the record keeps the error under "error" rather
// than losing the run.
func EnvironmentOf(m map[string]any) Environment {
	var e Environment
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, &e)
	}
	if err != nil {
		return Environment{Sections: map[string]any{"error": "environment: " + err.Error()}}
	}
	return e
}
