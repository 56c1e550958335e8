// Package fingerprint describes the stack a run happened on, for
// results.json's "environment" and for matching expectation folders.
//
// Collect reads ONLY procfs, sysfs, /etc/os-release, the process
// environment and Go's build info: the suite process never loads a GPU
// library (docs/ARCHITECTURE.md, Contracts: the parent never loads a vendor GPU library). Device facts that need a
// runtime (name, arch, UUID, memory, runtime version, per-peer attributes)
// come from the ranks and are folded in with WithDevices. Both build a
// report.Environment typed: the results model is report's, and this
// package only fills it in. A file that is missing
// or unreadable is simply an absent key.
//
// Top-level keys (all optional except vendor, goarch, goos, harness):
//
//	vendor   "nvidia", "amd" or the host backend's (host): detected from the loaded kernel
//	         driver; WithDevices replaces it with the vendor of the devices the
//	         ranks opened (so --backend=host on a GPU machine says host)
//	goarch, goos
//	harness  {version, commit, go, module}
//	os       {kernel, kernel_version, release}
//	nvidia   {driver, version_line, gpus:[{model, gpu_uuid, video_bios,
//	         bus_location, gpu_firmware, ...}], modules:[...]}
//	amdgpu   {version, parameters:{noretry, ...}, nodes:[{node, gfx,
//	         gfx_target_version, simd_count, ...}], links:[...]}
//	iommu    {devices:[...], groups:N, cmdline:[...]}
//	settings {HSA_XNACK, CUDA_VISIBLE_DEVICES, ...} (fault-relevant env)
//	gpus     [...] device facts from the ranks (WithDevices)
package fingerprint

import (
	"bufio"
	"fmt"
	"os"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
)

// Version is the harness version; Commit may be set at link time with
// -ldflags "-X p2patomics/harness/fingerprint.Commit=$(git rev-parse HEAD)"
// (GOFLAGS here carries -buildvcs=false, so build info often lacks it).
var (
	Version = "0.1.0-dev"
	Commit  = ""
)

// Collect fingerprints this machine from the real filesystem and env.
func Collect() report.Environment {
	return collect("/", os.Getenv)
}

// settingsEnv are the environment variables that change fault behaviour or
// device visibility; set ones are recorded under "settings".
var settingsEnv = []string{
	"HSA_XNACK", "HSA_ENABLE_SDMA", "HSA_ENABLE_INTERRUPT", "HSA_FORCE_FINE_GRAIN_PCIE",
	"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
	"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
	"NCCL_NVLS_ENABLE",
}

// amdgpuParams are /sys/module/amdgpu/parameters entries worth recording.
var amdgpuParams = []string{"noretry", "cwsr_enable", "mes", "sched_policy", "vm_update_mode", "ras_enable", "hws_max_conc_proc", "gpu_recovery"}

// kfdProps are the KFD topology node properties recorded per GPU node.
var kfdProps = []string{
	"gfx_target_version", "simd_count", "simd_per_cu", "array_count", "cu_per_simd_array",
	"num_xcc", "vendor_id", "device_id", "location_id", "domain", "drm_render_minor",
	"unique_id", "io_links_count", "p2p_links_count", "max_engine_clk_fcompute",
	"local_mem_size", "fw_version", "sdma_fw_version", "capability",
}

// collect is Collect over a filesystem rooted at root (tests use a tree).
func collect(root string, getenv func(string) string) report.Environment {
	rd := func(p string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
	h := harness()
	env := report.Environment{GOARCH: runtime.GOARCH, GOOS: runtime.GOOS, Harness: &h, OS: osFacts(rd)}
	env.Vendor = gpuDrivers(&env, root, rd)
	env.IOMMU = iommuFacts(root, rd)
	settings := map[string]string{}
	for _, k := range settingsEnv {
		if v := getenv(k); v != "" {
			settings[k] = v
		}
	}
	if len(settings) > 0 {
		env.Settings = settings
	}
	return env
}

// osFacts: the kernel's release and version, the distribution's name;
// nil when none could be read (an os key read empty still records os).
func osFacts(rd func(string) (string, bool)) *report.OS {
	var o report.OS
	read := false
	if v, ok := rd("proc/sys/kernel/osrelease"); ok {
		o.Kernel, read = v, true
	}
	if v, ok := rd("proc/sys/kernel/version"); ok {
		o.KernelVersion, read = v, true
	}
	if v, ok := rd("etc/os-release"); ok {
		if pn := osRelease(v)["PRETTY_NAME"]; pn != "" {
			o.Release, read = pn, true
		}
	}
	if !read {
		return nil
	}
	return &o
}

// gpuDrivers records the NVIDIA and AMD drivers' facts in env's vendor
// sections and says the vendor their loaded kernel driver names (the
// host backend's for neither). The sections stay open maps: each holds
// what its driver exposes (report.Environment.Sections says why). They
// are built in the shape JSON reads back (lists []any, numbers float64),
// so a section reads the same in memory as from a results.json.
func gpuDrivers(env *report.Environment, root string, rd func(string) (string, bool)) string {
	env.Sections = map[string]any{}
	vendor := backends.Host.Vendor
	if nv := nvidia(root, rd); len(nv) > 0 {
		env.Sections["nvidia"] = nv
		if _, ok := nv["driver"]; ok {
			vendor = "nvidia"
		}
	}
	if amd := amdgpu(root, rd); len(amd) > 0 {
		env.Sections["amdgpu"] = amd
		if backends.Driverless(vendor) {
			if _, ok := amd["nodes"]; ok {
				vendor = "amd"
			} else if _, ok := amd["loaded"]; ok {
				vendor = "amd"
			}
		}
	}
	if len(env.Sections) == 0 {
		env.Sections = nil
	}
	return vendor
}

// iommuFacts: the IOMMUs, the number of groups, and the kernel command
// line's IOMMU, GPU driver, PCI and NUMA balancing settings; nil when
// none of the three was found.
func iommuFacts(root string, rd func(string) (string, bool)) *report.IOMMU {
	var iommu report.IOMMU
	if ents, err := os.ReadDir(filepath.Join(root, "sys/class/iommu")); err == nil && len(ents) > 0 {
		for _, e := range ents {
			iommu.Devices = append(iommu.Devices, e.Name())
		}
	}
	if ents, err := os.ReadDir(filepath.Join(root, "sys/kernel/iommu_groups")); err == nil {
		n := len(ents)
		iommu.Groups = &n
	}
	if v, ok := rd("proc/cmdline"); ok {
		var keep []string
		for _, f := range strings.Fields(v) {
			for _, p := range []string{"iommu", "amd_iommu", "intel_iommu", "amdgpu.", "nvidia", "pci=", "numa_balancing"} {
				if strings.HasPrefix(f, p) {
					keep = append(keep, f)
					break
				}
			}
		}
		iommu.Cmdline = keep
	}
	if iommu.Devices == nil && iommu.Groups == nil && iommu.Cmdline == nil {
		return nil
	}
	return &iommu
}

// harness is the harness that makes the record: its version, the Go that
// built it, its module and commit (Commit, else the build's VCS revision).
func harness() report.Harness {
	h := report.Harness{Version: Version, Go: runtime.Version()}
	commit := Commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		h.Module = bi.Main.Path
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if commit == "" && rev != "" {
			commit = rev
			if modified == "true" {
				commit += "-dirty"
			}
		}
	}
	h.Commit = commit
	return h
}

// osRelease parses /etc/os-release KEY=value lines (values may be quoted).
func osRelease(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else {
			v = strings.Trim(v, `"'`)
		}
		m[k] = v
	}
	return m
}

// nvVersionRe finds the driver version in /proc/driver/nvidia/version's
// first line ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64
// 580.159.04  Release Build ...").
var nvVersionRe = regexp.MustCompile(`(?:^|\s)(\d+\.\d+(?:\.\d+)?)(?:\s|$)`)

func nvidia(root string, rd func(string) (string, bool)) map[string]any {
	m := map[string]any{}
	if v, ok := rd("proc/driver/nvidia/version"); ok {
		first, _, _ := strings.Cut(v, "\n")
		first = strings.TrimSpace(first)
		m["version_line"] = first
		if mm := nvVersionRe.FindStringSubmatch(first); mm != nil {
			m["driver"] = mm[1]
		}
	}
	if _, ok := m["driver"]; !ok {
		if v, ok := rd("sys/module/nvidia/version"); ok && v != "" {
			m["driver"] = v
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "proc/driver/nvidia/gpus/*/information"))
	sort.Strings(dirs)
	var gpus []any
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		g := map[string]any{"bus": filepath.Base(filepath.Dir(p))}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			k = snake(k)
			if k == "" {
				continue
			}
			g[k] = strings.TrimSpace(v)
		}
		gpus = append(gpus, g)
	}
	if len(gpus) > 0 {
		m["gpus"] = gpus
	}
	var mods []any
	for _, mod := range []string{"nvidia", "nvidia_uvm", "nvidia_peermem", "nvidia_drm", "nvidia_modeset"} {
		if _, err := os.Stat(filepath.Join(root, "sys/module", mod)); err == nil {
			mods = append(mods, mod)
		}
	}
	if len(mods) > 0 {
		m["modules"] = mods
	}
	return m
}

// amdgpu is the amdgpu module (loaded, version, the parameters that
// change fault behaviour) and the KFD topology's GPU nodes and links.
func amdgpu(root string, rd func(string) (string, bool)) map[string]any {
	m := map[string]any{}
	if _, err := os.Stat(filepath.Join(root, "sys/module/amdgpu")); err == nil {
		m["loaded"] = true
	}
	if v, ok := rd("sys/module/amdgpu/version"); ok && v != "" {
		m["version"] = v
	}
	params := map[string]any{}
	for _, p := range amdgpuParams {
		if v, ok := rd("sys/module/amdgpu/parameters/" + p); ok {
			params[p] = v
		}
	}
	if len(params) > 0 {
		m["parameters"] = params
	}
	nodeDirs, _ := filepath.Glob(filepath.Join(root, "sys/class/kfd/kfd/topology/nodes/*"))
	sort.Slice(nodeDirs, func(i, j int) bool { return natLess(filepath.Base(nodeDirs[i]), filepath.Base(nodeDirs[j])) })
	var nodes, links []any
	for _, d := range nodeDirs {
		if n := kfdNode(d); n != nil {
			nodes = append(nodes, n)
			links = append(links, kfdLinks(d)...)
		}
	}
	if len(nodes) > 0 {
		m["nodes"] = nodes
	}
	if len(links) > 0 {
		m["links"] = links
	}
	return m
}

// kfdNode is one KFD topology node's recorded properties (kfdProps), its
// gfx target and name; nil for a CPU node or an unreadable one.
func kfdNode(d string) map[string]any {
	b, err := os.ReadFile(filepath.Join(d, "properties"))
	if err != nil {
		return nil
	}
	props := kv(string(b))
	gtv, _ := strconv.Atoi(props["gfx_target_version"])
	if gtv == 0 { // CPU node
		return nil
	}
	n := map[string]any{"node": filepath.Base(d), "gfx": GfxName(gtv)}
	for _, k := range kfdProps {
		if v, ok := props[k]; ok {
			n[k] = number(v)
		}
	}
	if b, err := os.ReadFile(filepath.Join(d, "name")); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			n["name"] = s
		}
	}
	return n
}

// kfdLinks is a node's io_links and p2p_links, every property of each.
func kfdLinks(d string) []any {
	var links []any
	for _, kind := range []string{"io_links", "p2p_links"} {
		ls, _ := filepath.Glob(filepath.Join(d, kind, "*", "properties"))
		sort.Strings(ls)
		for _, lp := range ls {
			b, err := os.ReadFile(lp)
			if err != nil {
				continue
			}
			lk := map[string]any{"kind": kind}
			for k, v := range kv(string(b)) {
				lk[k] = number(v)
			}
			links = append(links, lk)
		}
	}
	return links
}

// number is a sysfs value as a JSON number when it is an integer, else
// the text. The number is a float64, as every results.json has held it
// (the environment used to pass through a JSON object before it was
// written): an integer past 2^53 (an AMD node's unique_id) keeps the
// rounding records have always had, so the same machine writes the same
// bytes. Recording it exactly is a change of results.json of its own.
func number(v string) any {
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return float64(i)
	}
	return v
}

// GfxName turns a KFD gfx_target_version (major*10000 + minor*100 +
// stepping) into the LLVM target name: 90402 → gfx942, 90010 → gfx90a,
// 110000 → gfx1100.
func GfxName(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("gfx%d%x%x", v/10000, (v/100)%100, v%100)
}

// kv parses "key value" lines (KFD properties files).
func kv(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			m[f[0]] = f[1]
		}
	}
	return m
}

func snake(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	us := false
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			us = false
		} else if !us && b.Len() > 0 {
			b.WriteByte('_')
			us = true
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

func natLess(a, b string) bool {
	ai, e1 := strconv.Atoi(a)
	bi, e2 := strconv.Atoi(b)
	if e1 == nil && e2 == nil {
		return ai < bi
	}
	return a < b
}

// WithDevices is env with the device facts the ranks reported folded
// into its GPUs, one entry per distinct device (by UUID, else
// vendor+ordinal; several ranks on one device give one entry, whose Ranks
// lists them), sorted by ordinal. When the facts name a vendor, Vendor
// becomes it (sorted, "+"-joined if they differ): the stack is the one
// the ranks actually opened. The facts stay typed from the ranks to
// results.json.
func WithDevices(env report.Environment, infos []device.Info) report.Environment {
	var keys []string
	devs := map[string]device.Info{}
	ranks := map[string][]int{}
	vendors := map[string]bool{}
	for _, in := range infos {
		key := in.UUID
		if key == "" {
			key = in.Vendor + "#" + fmt.Sprint(in.Ordinal)
		}
		if _, seen := devs[key]; !seen {
			keys = append(keys, key)
			devs[key] = in
		}
		ranks[key] = addRank(ranks[key], in.Rank)
		if in.Vendor != "" {
			vendors[in.Vendor] = true
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return devs[keys[i]].Ordinal < devs[keys[j]].Ordinal })
	var gpus []report.GPU
	for _, k := range keys {
		in := devs[k]
		in.Rank = 0 // one rank's own, not written: the entry lists them all
		gpus = append(gpus, report.GPU{Info: in, Ranks: ranks[k]})
	}
	if s := sharing(gpus); s != nil {
		env.Sharing = s
	}
	if len(gpus) > 0 {
		env.GPUs = gpus
	}
	if len(vendors) > 0 {
		var vs []string
		for v := range vendors {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		env.Vendor = strings.Join(vs, "+")
	}
	return env
}

// addRank adds r to a GPU's rank list once (two backends of one stack,
// hsa and hip, each have a rank 0 on the first GPU).
func addRank(rs []int, r int) []int {
	for _, x := range rs {
		if x == r {
			return rs
		}
	}
	rs = append(rs, r)
	sort.Ints(rs)
	return rs
}

// sharing says, for GPU stacks, which ranks share a device and whether
// CUDA MPS serves them (each device's Caps.MPS, the ranks' answer; the
// suite never starts or stops MPS); nil for a stack without a GPU.
// Ranks on one GPU have their kernels time-sliced unless MPS runs, which
// decides what the perf and litmus cases can mean there.
func sharing(gpus []report.GPU) *report.Sharing {
	shared := []report.SharedGPU{}
	mps := map[string]bool{}
	gpuStack := false
	for _, g := range gpus {
		if v := g.Vendor; v == "" || backends.Driverless(v) {
			continue
		}
		gpuStack = true
		if len(g.Ranks) > 1 {
			shared = append(shared, report.SharedGPU{Ordinal: g.Ordinal, Ranks: g.Ranks, UUID: g.UUID})
		}
		switch m := g.Caps.MPS; {
		case !m.Known():
			mps["unknown"] = true
		case m.OK:
			mps["on"] = true
		default:
			mps["off"] = true
		}
	}
	if !gpuStack {
		return nil
	}
	state := "unknown"
	switch {
	case mps["on"] && !mps["off"] && !mps["unknown"]:
		state = "on"
	case mps["off"] && !mps["on"] && !mps["unknown"]:
		state = "off"
	case mps["on"]:
		state = "mixed"
	}
	return &report.Sharing{MPS: state, Shared: shared}
}
