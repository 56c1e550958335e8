package fingerprint

import (
	"encoding/json"
	"os"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func noenv(string) string { return "" }

// nvidiaTree is a two-H200 machine's procfs and sysfs, as read on one.
func nvidiaTree(t *testing.T) string {
	return tree(t, map[string]string{
		"proc/sys/kernel/osrelease": "6.8.0-49-generic\n",
		"proc/sys/kernel/version":   "#49-Ubuntu SMP PREEMPT_DYNAMIC\n",
		"etc/os-release":            "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n",
		"proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Oct  9 17:11:38 UTC 2025\n" +
			"GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n",
		"proc/driver/nvidia/gpus/0000:18:00.0/information": "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t GPU-3d9a\nVideo BIOS: \t 96.00.af.00.01\nBus Location: \t 0000:18:00.0\nGPU Firmware: \t 580.159.04\n",
		"proc/driver/nvidia/gpus/0000:2a:00.0/information": "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-77aa\n",
		"sys/module/nvidia/version":                        "580.159.04\n",
		"sys/module/nvidia_uvm/x":                          "",
		"sys/class/iommu/dmar0/x":                          "",
		"sys/kernel/iommu_groups/0/x":                      "",
		"sys/kernel/iommu_groups/1/x":                      "",
		"proc/cmdline":                                     "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt quiet\n",
	})
}

func TestCollectNvidia(t *testing.T) {
	env := collect(nvidiaTree(t), func(k string) string {
		if k == "CUDA_VISIBLE_DEVICES" {
			return "0,1"
		}
		return ""
	})
	if env.Vendor != "nvidia" || env.GOARCH != runtime.GOARCH {
		t.Errorf("vendor/goarch: %v %v", env.Vendor, env.GOARCH)
	}
	if osm := env.OS; osm == nil || osm.Kernel != "6.8.0-49-generic" || osm.Release != "Ubuntu 24.04.1 LTS" {
		t.Errorf("os = %v", osm)
	}
	nv := env.Section("nvidia")
	if nv["driver"] != "580.159.04" {
		t.Errorf("driver = %v", nv["driver"])
	}
	gpus := nv["gpus"].([]any)
	if len(gpus) != 2 || gpus[0].(map[string]any)["model"] != "NVIDIA H200" || gpus[0].(map[string]any)["gpu_uuid"] != "GPU-3d9a" || gpus[0].(map[string]any)["gpu_firmware"] != "580.159.04" || gpus[0].(map[string]any)["bus"] != "0000:18:00.0" {
		t.Errorf("gpus = %v", gpus)
	}
	if !reflect.DeepEqual(nv["modules"], []any{"nvidia", "nvidia_uvm"}) {
		t.Errorf("modules = %v", nv["modules"])
	}
	io := env.IOMMU
	if io == nil || !reflect.DeepEqual(io.Devices, []string{"dmar0"}) || io.Groups == nil || *io.Groups != 2 || !reflect.DeepEqual(io.Cmdline, []string{"intel_iommu=on", "iommu=pt"}) {
		t.Errorf("iommu = %+v", io)
	}
	if env.Settings["CUDA_VISIBLE_DEVICES"] != "0,1" {
		t.Errorf("settings = %v", env.Settings)
	}
	if _, ok := env.Sections["amdgpu"]; ok {
		t.Error("amdgpu key on an NVIDIA machine")
	}
	if h := env.Harness; h == nil || h.Version != Version || h.Go != runtime.Version() {
		t.Errorf("harness = %v", h)
	}
	if _, err := json.Marshal(env); err != nil {
		t.Fatal(err)
	}
	checkMergedStack(t, env)
}

// checkMergedStack: the ranks' facts (two ranks on each of two GPUs)
// merge into one entry per GPU, and the stack read from them is the same
// before and after a JSON round trip.
func checkMergedStack(t *testing.T, env report.Environment) {
	t.Helper()
	dev := func(uuid string, ordinal int) device.Info {
		return device.Info{Vendor: "nvidia", Name: "NVIDIA H200", Arch: "sm_90", UUID: uuid, Ordinal: ordinal}
	}
	env = WithDevices(env, []device.Info{dev("GPU-77aa", 1), dev("GPU-3d9a", 0), dev("GPU-77aa", 1)})
	g := env.GPUs
	if len(g) != 2 || g[0].UUID != "GPU-3d9a" {
		t.Errorf("merged gpus = %v", g)
	}
	st := env.Stack()
	if !reflect.DeepEqual(st, map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580.159.04"}) {
		t.Errorf("Stack = %v", st)
	}
	if report.Folder(st) != "nvidia-sm_90-580" {
		t.Errorf("Folder = %s", report.Folder(st))
	}
	// Read back from JSON, the stack is the same.
	b, _ := json.Marshal(env)
	var back report.Environment
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Stack(), st) {
		t.Errorf("Stack after JSON = %v", back.Stack())
	}
}

func TestCollectAMD(t *testing.T) {
	root := tree(t, map[string]string{
		"proc/sys/kernel/osrelease":                                "6.1.0-28-amd64\n",
		"sys/module/amdgpu/parameters/noretry":                     "1\n",
		"sys/module/amdgpu/parameters/cwsr_enable":                 "1\n",
		"sys/class/kfd/kfd/topology/nodes/0/properties":            "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n",
		"sys/class/kfd/kfd/topology/nodes/1/properties":            "cpu_cores_count 0\nsimd_count 1216\ngfx_target_version 90402\nnum_xcc 8\nunique_id 123456\n",
		"sys/class/kfd/kfd/topology/nodes/1/io_links/0/properties": "type 11\nnode_from 1\nnode_to 2\nweight 15\n",
		"sys/class/kfd/kfd/topology/nodes/10/properties":           "simd_count 8\ngfx_target_version 90010\n",
	})
	env := collect(root, func(k string) string {
		if k == "HSA_XNACK" {
			return "1"
		}
		return ""
	})
	if env.Vendor != "amd" {
		t.Errorf("vendor = %v", env.Vendor)
	}
	amd := env.Section("amdgpu")
	if amd["parameters"].(map[string]any)["noretry"] != "1" {
		t.Errorf("params = %v", amd["parameters"])
	}
	nodes := amd["nodes"].([]any)
	n0, n1 := nodes[0].(map[string]any), nodes[len(nodes)-1].(map[string]any)
	if len(nodes) != 2 || n0["gfx"] != "gfx942" || n0["simd_count"] != float64(1216) || n1["gfx"] != "gfx90a" || n1["node"] != "10" {
		t.Errorf("nodes = %v", nodes)
	}
	links := amd["links"].([]any)
	if len(links) != 1 || links[0].(map[string]any)["node_to"] != float64(2) || links[0].(map[string]any)["kind"] != "io_links" {
		t.Errorf("links = %v", links)
	}
	if env.Settings["HSA_XNACK"] != "1" {
		t.Errorf("settings = %v", env.Settings)
	}
	st := env.Stack()
	if !reflect.DeepEqual(st, map[string]string{"vendor": "amd", "arch": "gfx90a+gfx942", "driver": "6.1.0-28-amd64"}) {
		t.Errorf("Stack = %v", st)
	}
	if report.Folder(st) != "amd-gfx90a+gfx942-6.1" {
		t.Errorf("Folder = %s", report.Folder(st))
	}
}

func TestCollectBare(t *testing.T) {
	env := collect(t.TempDir(), noenv)
	b, _ := json.Marshal(env)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"os", "nvidia", "amdgpu", "iommu", "settings", "gpus"} {
		if _, ok := m[k]; ok {
			t.Errorf("key %s present on an empty tree", k)
		}
	}
	if env.Vendor != backends.HostName {
		t.Errorf("vendor = %v", env.Vendor)
	}
	// Running the host backend on any machine: WithDevices makes the vendor host.
	env = WithDevices(env, []device.Info{{Vendor: backends.HostName, Arch: runtime.GOARCH}})
	st := env.Stack()
	if !reflect.DeepEqual(st, map[string]string{"vendor": backends.HostName, "arch": runtime.GOARCH}) || report.Folder(st) != "host-"+runtime.GOARCH {
		t.Errorf("Stack = %v, Folder = %s", st, report.Folder(st))
	}
}

func TestCollectReal(t *testing.T) {
	env := Collect()
	if _, err := json.Marshal(env); err != nil {
		t.Fatal(err)
	}
	if env.GOARCH != runtime.GOARCH {
		t.Errorf("goarch = %v", env.GOARCH)
	}
}

func TestCommitLdflags(t *testing.T) {
	old := Commit
	defer func() { Commit = old }()
	Commit = "abc123"
	if harness().Commit != "abc123" {
		t.Errorf("commit = %v", harness().Commit)
	}
}

func TestGfxName(t *testing.T) {
	for v, want := range map[int]string{90402: "gfx942", 90010: "gfx90a", 110000: "gfx1100", 100300: "gfx1030", 0: ""} {
		if got := GfxName(v); got != want {
			t.Errorf("GfxName(%d) = %s, want %s", v, got, want)
		}
	}
}

// TestMergeSharing: ranks that opened one device are listed on it, a
// device with more than one rank is named under device_sharing, and MPS is
// the ranks' typed answer (Caps.MPS, "" unanswered); a host-only run has
// none.
func TestMergeSharing(t *testing.T) {
	gpu := func(uuid string, ord, rank int, mps string) device.Info {
		in := device.Info{Vendor: "nvidia", UUID: uuid, Ordinal: ord, Rank: rank}
		switch mps {
		case "1":
			in.Caps.MPS = device.Yes("MPS_ENABLED 1")
		case "0":
			in.Caps.MPS = device.No("MPS_ENABLED 0")
		}
		return in
	}
	env := WithDevices(report.Environment{}, []device.Info{gpu("GPU-a", 0, 0, "0"), gpu("GPU-b", 1, 1, "0"), gpu("GPU-a", 0, 2, "0")})
	ds := env.Sharing
	if ds == nil || ds.MPS != "off" {
		t.Fatalf("device_sharing = %v, want mps off", env.Sharing)
	}
	if sh := ds.Shared; len(sh) != 1 || sh[0].UUID != "GPU-a" || !reflect.DeepEqual(sh[0].Ranks, []int{0, 2}) {
		t.Errorf("shared = %v, want GPU-a with ranks 0 and 2", sh)
	}
	for _, g := range env.GPUs {
		if b, _ := json.Marshal(g); strings.Contains(string(b), `"rank":`) || g.Rank != 0 {
			t.Errorf("a gpu entry keeps one rank's own field: %s", b)
		}
	}
	env = WithDevices(report.Environment{}, []device.Info{gpu("GPU-a", 0, 0, "1"), gpu("GPU-b", 1, 1, "1")})
	if ds := env.Sharing; ds.MPS != "on" || ds.Shared == nil || len(ds.Shared) != 0 {
		t.Errorf("two GPUs under MPS: %v", ds)
	}
	raw := gpu("GPU-c", 2, 2, "")
	raw.Attrs = map[string]string{"mps_enabled": "1"} // the attribute alone decides nothing
	env = WithDevices(report.Environment{}, []device.Info{gpu("GPU-a", 0, 0, "1"), raw})
	if ds := env.Sharing; ds.MPS != "mixed" {
		t.Errorf("one GPU under MPS, one unanswered: %v, want mixed", ds)
	}
	env = WithDevices(report.Environment{}, []device.Info{{Vendor: backends.HostName, Rank: 0}, {Vendor: backends.HostName, Rank: 1}})
	if env.Sharing != nil {
		t.Errorf("host backend has no GPU to share: %v", env.Sharing)
	}
}

// TestEnvironment: the run's flags, the injector's rules, the P2PAT_*
// variables and the host name join the machine's facts and the ranks';
// a run without rules or variables records neither key.
func TestEnvironment(t *testing.T) {
	infos := [][]device.Info{{{Vendor: backends.HostName, Name: "cpu", Rank: 0}, {Vendor: backends.HostName, Name: "cpu", Rank: 1}}}
	env := Environment(Run{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Seed: 7, Inject: []string{"fail:x"}, FlagsEnv: map[string]string{"P2PAT_RANKS": "2"}}, infos)
	if !reflect.DeepEqual(env.Flags, &report.Flags{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Seed: 7}) {
		t.Errorf("flags = %#v", env.Flags)
	}
	if !reflect.DeepEqual(env.Inject, []string{"fail:x"}) || env.FlagsEnv["P2PAT_RANKS"] != "2" {
		t.Errorf("inject %v, flags_env %v", env.Inject, env.FlagsEnv)
	}
	if h, _ := os.Hostname(); env.Hostname != h || env.Vendor != backends.HostName || len(env.GPUs) != 1 {
		t.Errorf("hostname %v, vendor %v, gpus %v", env.Hostname, env.Vendor, env.GPUs)
	}
	plain := Environment(Run{Backend: backends.HostName}, nil)
	if plain.Inject != nil {
		t.Error("inject recorded without rules")
	}
	if plain.FlagsEnv != nil {
		t.Error("flags_env recorded without variables")
	}
}
