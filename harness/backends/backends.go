// Package backends describes each backend from the parent's side, without
// loading it (no dlopen): its name, whether it drives a GPU, its allocation
// kinds and their properties, the environment its ranks inherit, the device
// nodes that say its hardware is present, the hint printed when it cannot
// load, and the parsers for the fault lines its runtime prints. The rank's
// side of a backend lives in rank/<name>; the hello checks that the two
// agree on the kinds. One file per backend holds its one row (cuda.go,
// hsa.go, hip.go, host.go): adding a backend adds a file here and a folder
// under rank/, and nothing in the parent compares a backend's name.
package backends

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"p2patomics/internal/device"
)

// Kind names an allocation kind (the matrix's columns, --alloc's values).
type Kind string

// KindSpec is one allocation kind and what the parent may assume about its
// memory. The properties are what cases and the runner used to re-derive by
// comparing kind names.
type KindSpec struct {
	Name Kind
	// DeviceMemory: the backend's device's own memory (HBM; the CPU's for
	// host). A reduction's scratch target lives in the backend's first
	// such kind, whatever kind the case tests (Ctx.ScratchWords).
	DeviceMemory bool
	// HostMemory: CPU memory a GPU reaches over its host link (PCIe, C2C):
	// copies and atomics on it cross that link, which bounds their rate.
	HostMemory bool
	// AlwaysGranted: every peer's mapping carries access; there is no
	// ungranted mapping to test (CUDA's legacy IPC handles).
	AlwaysGranted bool
	// ExportOnly: a kind only exported as an fd (fdexchange's dma-buf), not
	// a memory the cases run their atomics on.
	ExportOnly bool
}

// FaultParser reads the fault a backend's runtime prints on a rank's stderr
// before it aborts. Line is tried on every line of stderr (the first line
// any backend's Line parses wins, so the order of lines decides); Text, for
// messages that are not one line's worth (CUDA's error names followed by
// their code), is tried on the whole stderr after every Line. Name keeps a
// parser two backends share (ROCr, under both HSA and HIP) from running
// twice.
type FaultParser struct {
	Name string
	Line func(line string) *device.Fault
	Text func(stderr string) *device.Fault
}

// Backend is one backend's row.
type Backend struct {
	Name string
	// GPU: the backend drives a GPU (false only for host, the CPU backend
	// that runs everywhere): its cases take the per-device lock, and
	// --backend=auto probes it.
	GPU bool
	// Probe orders the GPU backends --backend=auto probes (lowest first;
	// all of them are probed, at once, but probes are listed and used in
	// this order).
	Probe int
	// InjectSymbols are the calls its ranks' choke point puts behind the
	// driver-fault injector (internal/inject's list for it): a rule naming
	// another is refused before the run (inject.CheckSymbols).
	InjectSymbols []string
	// SpeedRules: its ranks apply the injector's speed rules (copy-times,
	// stretch; internal/inject.CheckBackend refuses them elsewhere).
	SpeedRules bool
	// Vendor is the device.Info.Vendor its ranks report.
	Vendor string
	// Kinds are its allocation kinds, in the order the rank reports them
	// at hello (the matrix's order).
	Kinds []KindSpec
	// EnvVars and EnvPrefixes are the environment variables (by name, and
	// by prefix) a rank inherits for this backend's runtime; the rank's
	// environment drops everything else, so that a stray variable in the
	// suite's environment cannot change a rank's driver.
	EnvVars, EnvPrefixes []string
	// DeviceNodes are glob patterns of the device nodes that exist where
	// its hardware is present: there, a backend that does not load is a
	// broken stack, not a machine without its GPUs.
	DeviceNodes []string
	// LoadHint is what to check when --backend=<name> cannot load.
	LoadHint string
	// LargeMappings: the catalogue adds the cases that map one allocation
	// past 4 GiB (the counter on a word above 4 GiB, where 32-bit address
	// truncation in any layer would show). Set where such a case has run
	// on hardware; the others would spend 4 GiB a case untried.
	LargeMappings bool
	// FaultParsers read its runtime's fault lines from a rank's stderr.
	FaultParsers []FaultParser
	// NoDriver: its stack has no driver or runtime version (the CPU): a
	// stack header, a baseline's folder and a stack check are its vendor
	// and arch only, and two of its ranks never share a GPU.
	NoDriver bool
	// HostAtomicsVary: whether atomics on its host memory work depends on
	// the device (Caps.HostAtomics says; no on a PCIe H200), so its cases
	// of atomics on host memory, and its CPU/GPU cases, carry
	// needs=host_atomics (a fail where the device says no is not-supported).
	HostAtomicsVary bool
	// HSAVmemCase: its first kind also gets the hipvmem case, HIP's dispatch
	// on HSA fine-grained vmem memory (docs/AMD.md, "HIP on HSA vmem").
	HSAVmemCase bool
	// Library is the driver library its ranks load, as --ab's library SPEC
	// checks a stack B's file (harness/ab); nil for a backend that loads
	// none (host).
	Library *DriverLibrary
}

// DriverLibrary is what makes a file a backend's driver library: its
// soname, a symbol every version of it exports, and where a folder (a ROCm
// root, a cuda-compat folder) holds it.
type DriverLibrary struct {
	// Soname matches its soname (or, for a stand-in built without one, its
	// file name).
	Soname *regexp.Regexp
	// InitSymbol is the entry point every version exports (cuInit).
	InitSymbol string
	// InRoot are the paths, relative to a folder SPEC, where the library
	// is looked for, in order.
	InRoot []string
	// ModuleVersionFile, where set, is the kernel module's version file
	// (/proc/driver/nvidia/version): a user-mode library whose version the
	// module cannot run is refused before the run (NVIDIA's forward
	// compatibility; harness/ab.CheckCUDAVersion).
	ModuleVersionFile string
}

// All is the one list of backends, filled by each row's file (register):
// GPU backends in the order --backend=auto probes them (Probe), host (the
// fallback) last.
var All []*Backend

// register adds a row's backend to All, keeping All in probe order, so a
// backend's file is the one place that names it.
func register(b *Backend) {
	All = append(All, b)
	slices.SortStableFunc(All, func(x, y *Backend) int {
		switch {
		case x.GPU != y.GPU:
			if x.GPU {
				return -1
			}
			return 1
		case x.Probe != y.Probe:
			return x.Probe - y.Probe
		}
		return strings.Compare(x.Name, y.Name)
	})
}

// Lookup is the named backend's row, nil for a name no backend has.
func Lookup(name string) *Backend {
	for _, b := range All {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// Kind is the named kind's spec, nil when the backend has no such kind.
func (b *Backend) Kind(name string) *KindSpec {
	for i := range b.Kinds {
		if string(b.Kinds[i].Name) == name {
			return &b.Kinds[i]
		}
	}
	return nil
}

// KindNames are its kinds' names in order, as strings (the matrix's row).
func (b *Backend) KindNames() []string {
	names := make([]string, len(b.Kinds))
	for i, k := range b.Kinds {
		names[i] = string(k.Name)
	}
	return names
}

// ScratchKind is the backend's first kind of device memory ("" if none).
func (b *Backend) ScratchKind() string {
	for _, k := range b.Kinds {
		if k.DeviceMemory {
			return string(k.Name)
		}
	}
	return ""
}

// KindSpecOf is kind's spec under the named backend. Kind names are unique
// across backends (TestKindNamesAreUnique), so a world built without a
// backend name (a test's hand-made world) still finds its kind's row. A
// kind no row has gets the zero spec (no property), so a caller asking
// about a malformed case reads "none of these" rather than panicking.
func KindSpecOf(backend, kind string) KindSpec {
	for _, b := range All {
		if b.Name != backend && backend != "" {
			continue
		}
		if k := b.Kind(kind); k != nil {
			return *k
		}
	}
	return KindSpec{Name: Kind(kind)}
}

// InjectSymbols is the calls a rule may name on backend name: its row's
// list, or for "auto" every row's joined; nil for an unknown name.
func InjectSymbols(name string) []string {
	if b := Lookup(name); b != nil {
		return b.InjectSymbols
	}
	if name != "auto" {
		return nil
	}
	var all []string
	for _, b := range All {
		all = append(all, b.InjectSymbols...)
	}
	return all
}

// RunsOnCPU says whether the named backend is a backend without a GPU (the
// host backend; false for a name no backend has).
func RunsOnCPU(name string) bool {
	b := Lookup(name)
	return b != nil && !b.GPU
}

// Driverless says whether vendor (a device.Info.Vendor, a stack's vendor)
// is a backend's whose stack has no driver (Backend.NoDriver): its stack is
// vendor and arch only.
func Driverless(vendor string) bool {
	for _, b := range All {
		if b.NoDriver && b.Vendor == vendor {
			return true
		}
	}
	return false
}

// CPUVendor says whether vendor (a device.Info.Vendor, a record's
// Environment.Vendor) is a backend's without a GPU (host): the devices its
// ranks report are the CPU.
func CPUVendor(vendor string) bool {
	for _, b := range All {
		if !b.GPU && b.Vendor == vendor {
			return true
		}
	}
	return false
}

// IsGPU says whether the named backend drives a GPU (false for host and
// for a name no backend has).
func IsGPU(name string) bool {
	b := Lookup(name)
	return b != nil && b.GPU
}

// LoadHint is what to check when the named backend cannot load.
func LoadHint(name string) string {
	if b := Lookup(name); b != nil && b.LoadHint != "" {
		return b.LoadHint
	}
	return "see docs/FLAGS.md"
}

// EnvAllowed says whether a rank inherits the environment variable key:
// one some backend's runtime reads (by name or prefix).
func EnvAllowed(key string) bool {
	for _, b := range All {
		if slices.Contains(b.EnvVars, key) {
			return true
		}
		for _, p := range b.EnvPrefixes {
			if strings.HasPrefix(key, p) {
				return true
			}
		}
	}
	return false
}

// DeviceNodePatterns are every backend's device node patterns, each once,
// in the backends' order (for a message naming what was looked for).
func DeviceNodePatterns() []string {
	var pats []string
	for _, b := range All {
		for _, p := range b.DeviceNodes {
			if !slices.Contains(pats, p) {
				pats = append(pats, p)
			}
		}
	}
	return pats
}

// DeviceNodes lists the GPU device nodes that exist, every backend's
// patterns in order, each node once.
func DeviceNodes() []string {
	var nodes []string
	for _, p := range DeviceNodePatterns() {
		ms, _ := filepath.Glob(p) // the only error is a malformed pattern, which a test rules out
		for _, m := range ms {
			if !slices.Contains(nodes, m) {
				nodes = append(nodes, m)
			}
		}
	}
	return nodes
}

// ParseFault finds a backend runtime's fault in a rank's stderr: every
// backend's Line parsers on each line in turn, then their Text parsers.
func ParseFault(stderr string) *device.Fault {
	var lines, texts []FaultParser
	seen := map[string]bool{}
	for _, b := range All {
		for _, p := range b.FaultParsers {
			if seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			if p.Line != nil {
				lines = append(lines, p)
			}
			if p.Text != nil {
				texts = append(texts, p)
			}
		}
	}
	for _, line := range strings.Split(stderr, "\n") {
		for _, p := range lines {
			if f := p.Line(line); f != nil {
				return f
			}
		}
	}
	for _, p := range texts {
		if f := p.Text(stderr); f != nil {
			return f
		}
	}
	return nil
}
