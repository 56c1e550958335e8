package fingerprint

import (
	"encoding/json"
	"os"
	"p2patomics/harness/backends"
	"p2patomics/internal/device"
	"path/filepath"
	"reflect"
	"runtime"
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
	if env["vendor"] != "nvidia" || env["goarch"] != runtime.GOARCH {
		t.Errorf("vendor/goarch: %v %v", env["vendor"], env["goarch"])
	}
	osm := env["os"].(map[string]any)
	if osm["kernel"] != "6.8.0-49-generic" || osm["release"] != "Ubuntu 24.04.1 LTS" {
		t.Errorf("os = %v", osm)
	}
	nv := env["nvidia"].(map[string]any)
	if nv["driver"] != "580.159.04" {
		t.Errorf("driver = %v", nv["driver"])
	}
	gpus := nv["gpus"].([]map[string]any)
	if len(gpus) != 2 || gpus[0]["model"] != "NVIDIA H200" || gpus[0]["gpu_uuid"] != "GPU-3d9a" || gpus[0]["gpu_firmware"] != "580.159.04" || gpus[0]["bus"] != "0000:18:00.0" {
		t.Errorf("gpus = %v", gpus)
	}
	if !reflect.DeepEqual(nv["modules"], []string{"nvidia", "nvidia_uvm"}) {
		t.Errorf("modules = %v", nv["modules"])
	}
	io := env["iommu"].(map[string]any)
	if !reflect.DeepEqual(io["devices"], []string{"dmar0"}) || io["groups"] != 2 || !reflect.DeepEqual(io["cmdline"], []string{"intel_iommu=on", "iommu=pt"}) {
		t.Errorf("iommu = %v", io)
	}
	if env["settings"].(map[string]any)["CUDA_VISIBLE_DEVICES"] != "0,1" {
		t.Errorf("settings = %v", env["settings"])
	}
	if _, ok := env["amdgpu"]; ok {
		t.Error("amdgpu key on an NVIDIA machine")
	}
	h := env["harness"].(map[string]any)
	if h["version"] != Version || h["go"] != runtime.Version() {
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
func checkMergedStack(t *testing.T, env map[string]any) {
	t.Helper()
	dev := func(uuid string, ordinal int) device.Info {
		return device.Info{Vendor: "nvidia", Name: "NVIDIA H200", Arch: "sm_90", UUID: uuid, Ordinal: ordinal}
	}
	Merge(env, []device.Info{dev("GPU-77aa", 1), dev("GPU-3d9a", 0), dev("GPU-77aa", 1)})
	g := env["gpus"].([]any)
	if len(g) != 2 || g[0].(map[string]any)["uuid"] != "GPU-3d9a" {
		t.Errorf("merged gpus = %v", g)
	}
	st := Stack(env)
	if !reflect.DeepEqual(st, map[string]string{"vendor": "nvidia", "arch": "sm_90", "driver": "580.159.04"}) {
		t.Errorf("Stack = %v", st)
	}
	if Folder(st) != "nvidia-sm_90-580" {
		t.Errorf("Folder = %s", Folder(st))
	}
	// Read back from JSON, the stack is the same.
	b, _ := json.Marshal(env)
	var back map[string]any
	json.Unmarshal(b, &back)
	if !reflect.DeepEqual(Stack(back), st) {
		t.Errorf("Stack after JSON = %v", Stack(back))
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
	if env["vendor"] != "amd" {
		t.Errorf("vendor = %v", env["vendor"])
	}
	amd := env["amdgpu"].(map[string]any)
	if amd["parameters"].(map[string]any)["noretry"] != "1" {
		t.Errorf("params = %v", amd["parameters"])
	}
	nodes := amd["nodes"].([]map[string]any)
	if len(nodes) != 2 || nodes[0]["gfx"] != "gfx942" || nodes[0]["simd_count"] != int64(1216) || nodes[1]["gfx"] != "gfx90a" || nodes[1]["node"] != "10" {
		t.Errorf("nodes = %v", nodes)
	}
	links := amd["links"].([]map[string]any)
	if len(links) != 1 || links[0]["node_to"] != int64(2) || links[0]["kind"] != "io_links" {
		t.Errorf("links = %v", links)
	}
	if env["settings"].(map[string]any)["HSA_XNACK"] != "1" {
		t.Errorf("settings = %v", env["settings"])
	}
	st := Stack(env)
	if !reflect.DeepEqual(st, map[string]string{"vendor": "amd", "arch": "gfx90a+gfx942", "driver": "6.1.0-28-amd64"}) {
		t.Errorf("Stack = %v", st)
	}
	if Folder(st) != "amd-gfx90a+gfx942-6.1" {
		t.Errorf("Folder = %s", Folder(st))
	}
}

func TestCollectBare(t *testing.T) {
	env := collect(t.TempDir(), noenv)
	for _, k := range []string{"os", "nvidia", "amdgpu", "iommu", "settings", "gpus"} {
		if _, ok := env[k]; ok {
			t.Errorf("key %s present on an empty tree", k)
		}
	}
	if env["vendor"] != backends.HostName {
		t.Errorf("vendor = %v", env["vendor"])
	}
	// Running the host backend on any machine: Merge makes the vendor host.
	Merge(env, []device.Info{{Vendor: backends.HostName, Arch: runtime.GOARCH}})
	st := Stack(env)
	if !reflect.DeepEqual(st, map[string]string{"vendor": backends.HostName, "arch": runtime.GOARCH}) || Folder(st) != "host-"+runtime.GOARCH {
		t.Errorf("Stack = %v, Folder = %s", st, Folder(st))
	}
}

func TestCollectReal(t *testing.T) {
	env := Collect()
	if _, err := json.Marshal(env); err != nil {
		t.Fatal(err)
	}
	if env["goarch"] != runtime.GOARCH {
		t.Errorf("goarch = %v", env["goarch"])
	}
}

func TestCommitLdflags(t *testing.T) {
	old := Commit
	defer func() { Commit = old }()
	Commit = "abc123"
	if harness()["commit"] != "abc123" {
		t.Errorf("commit = %v", harness()["commit"])
	}
}

func TestGfxNameAndDriverLine(t *testing.T) {
	for v, want := range map[int]string{90402: "gfx942", 90010: "gfx90a", 110000: "gfx1100", 100300: "gfx1030", 0: ""} {
		if got := GfxName(v); got != want {
			t.Errorf("GfxName(%d) = %s, want %s", v, got, want)
		}
	}
	for _, c := range [][3]string{
		{"nvidia", "580.159.04", "580"},
		{"nvidia", "580", "580"},
		{"amd", "6.8.5", "6.8"},
		{"amd", "6.1.0-28-amd64", "6.1"},
		{"amd", "weird", "weird"},
	} {
		if got := DriverLine(c[0], c[1]); got != c[2] {
			t.Errorf("DriverLine(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	if got := Folder(map[string]string{"vendor": "nvidia", "arch": "NVIDIA H200/x"}); got != "nvidia-nvidia_h200_x" {
		t.Errorf("Folder sanitising = %s", got)
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
	env := map[string]any{}
	Merge(env, []device.Info{gpu("GPU-a", 0, 0, "0"), gpu("GPU-b", 1, 1, "0"), gpu("GPU-a", 0, 2, "0")})
	ds, _ := env["device_sharing"].(map[string]any)
	if ds == nil || ds["mps"] != "off" {
		t.Fatalf("device_sharing = %v, want mps off", env["device_sharing"])
	}
	sh, _ := ds["shared"].([]any)
	if len(sh) != 1 || sh[0].(map[string]any)["uuid"] != "GPU-a" || !reflect.DeepEqual(sh[0].(map[string]any)["ranks"], []int{0, 2}) {
		t.Errorf("shared = %v, want GPU-a with ranks 0 and 2", sh)
	}
	for _, g := range env["gpus"].([]any) {
		if _, ok := g.(map[string]any)["rank"]; ok {
			t.Errorf("a gpu entry keeps one rank's own field: %v", g)
		}
	}
	env = map[string]any{}
	Merge(env, []device.Info{gpu("GPU-a", 0, 0, "1"), gpu("GPU-b", 1, 1, "1")})
	if ds := env["device_sharing"].(map[string]any); ds["mps"] != "on" || len(ds["shared"].([]any)) != 0 {
		t.Errorf("two GPUs under MPS: %v", ds)
	}
	env = map[string]any{}
	raw := gpu("GPU-c", 2, 2, "")
	raw.Attrs = map[string]string{"mps_enabled": "1"} // the attribute alone decides nothing
	Merge(env, []device.Info{gpu("GPU-a", 0, 0, "1"), raw})
	if ds := env["device_sharing"].(map[string]any); ds["mps"] != "mixed" {
		t.Errorf("one GPU under MPS, one unanswered: %v, want mixed", ds)
	}
	env = map[string]any{}
	Merge(env, []device.Info{{Vendor: backends.HostName, Rank: 0}, {Vendor: backends.HostName, Rank: 1}})
	if _, ok := env["device_sharing"]; ok {
		t.Errorf("host backend has no GPU to share: %v", env["device_sharing"])
	}
}

// TestEnvironment: the run's flags, the injector's rules, the P2PAT_*
// variables and the host name join the machine's facts and the ranks';
// a run without rules or variables records neither key.
func TestEnvironment(t *testing.T) {
	infos := [][]device.Info{{{Vendor: backends.HostName, Name: "cpu", Rank: 0}, {Vendor: backends.HostName, Name: "cpu", Rank: 1}}}
	env := Environment(Run{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Seed: 7, Inject: []string{"fail:x"}, FlagsEnv: map[string]any{"P2PAT_RANKS": "2"}}, infos)
	if !reflect.DeepEqual(env["flags"], map[string]any{"backend": backends.HostName, "alloc": "memfd", "ranks": 2, "seed": int64(7)}) {
		t.Errorf("flags = %#v", env["flags"])
	}
	if !reflect.DeepEqual(env["inject"], []string{"fail:x"}) || env["flags_env"].(map[string]any)["P2PAT_RANKS"] != "2" {
		t.Errorf("inject %v, flags_env %v", env["inject"], env["flags_env"])
	}
	if h, _ := os.Hostname(); env["hostname"] != h || env["vendor"] != backends.HostName || len(env["gpus"].([]any)) != 1 {
		t.Errorf("hostname %v, vendor %v, gpus %v", env["hostname"], env["vendor"], env["gpus"])
	}
	plain := Environment(Run{Backend: backends.HostName}, nil)
	if _, ok := plain["inject"]; ok {
		t.Error("inject recorded without rules")
	}
	if _, ok := plain["flags_env"]; ok {
		t.Error("flags_env recorded without variables")
	}
}
