package fingerprint_test

import (
	"os"
	"path/filepath"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// typedCase is one machine and run the environment is built for: a
// procfs/sysfs tree, the process environment, the ranks' device facts
// and the run's flags.
type typedCase struct {
	name   string
	root   string
	getenv func(string) string
	infos  [][]device.Info
	run    fingerprint.Run
}

func files(t *testing.T, fs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range fs {
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

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// typedCases are a host run, a CUDA-like machine (two H200s, three ranks,
// two sharing one GPU without MPS) and an AMD-like one (KFD topology,
// amdgpu parameters, links, a unique_id past 2^53), each with the run's
// flags, rules and P2PAT_* variables.
func typedCases(t *testing.T) []typedCase {
	nv := func(uuid string, ord, rank int) device.Info {
		return device.Info{Vendor: "nvidia", Name: "NVIDIA H200", Arch: "sm_90", UUID: uuid, Ordinal: ord, Rank: rank, Count: 2,
			MemBytes: 150754820096, Units: 132, Driver: "580.159.04", Runtime: "12.8",
			Attrs: map[string]string{"mps_enabled": "0", "pageable_memory_access": "1"},
			Caps:  device.Caps{MPS: device.No("MPS_ENABLED 0")}}
	}
	amd := func(uuid string, ord, rank int) device.Info {
		return device.Info{Vendor: "amd", Name: "AMD Instinct MI300X", Arch: "gfx942", UUID: uuid, Ordinal: ord, Rank: rank, Count: 8,
			MemBytes: 206141652992, Units: 304, Runtime: "6.2.4", Devices: []device.Visible{{Ordinal: 0, Arch: "gfx942"}, {Ordinal: 1, Arch: "gfx942"}}}
	}
	return []typedCase{
		{
			name: backends.HostName, root: files(t, map[string]string{"proc/sys/kernel/osrelease": "6.8.0-49-generic\n"}), getenv: envOf(nil),
			infos: [][]device.Info{{{Vendor: backends.HostName, Name: "cpu", Arch: "amd64", Count: 1, Units: 2, Rank: 0}, {Vendor: backends.HostName, Name: "cpu", Arch: "amd64", Count: 1, Units: 2, Rank: 1}}},
			run:   fingerprint.Run{Backend: backends.HostName, Alloc: "memfd", Ranks: 2, Seed: 7},
		},
		{
			name: "cuda", getenv: envOf(map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_NVLS_ENABLE": "0"}),
			root:  cudaTree(t),
			infos: [][]device.Info{{nv("GPU-77aa", 1, 1), nv("GPU-3d9a", 0, 0), nv("GPU-3d9a", 0, 2)}},
			run:   fingerprint.Run{Backend: "cuda", Alloc: "vmm", Ranks: 3, Seed: -3, Inject: []string{"fail:cuMemMap@2"}, FlagsEnv: map[string]string{"P2PAT_RANKS": "3", "P2PAT_ALLOC": "vmm"}},
		},
		{
			name: "amd", getenv: envOf(map[string]string{"HSA_XNACK": "1", "ROCR_VISIBLE_DEVICES": "0,1"}),
			root:  amdTree(t),
			infos: [][]device.Info{{amd("GPU-a1", 0, 0), amd("GPU-b2", 1, 1)}, {amd("GPU-a1", 0, 0)}},
			run:   fingerprint.Run{Backend: "hip", Alloc: "ipc", Ranks: 2, Seed: 1 << 40, FlagsEnv: map[string]string{"P2PAT_BACKEND": "hip"}},
		},
		{
			// a GPU machine before any rank has reported (the suite's
			// environment when no backend probe opened a device)
			name: "amd-no-ranks", getenv: envOf(nil),
			root: files(t, map[string]string{"sys/module/amdgpu/x": "", "sys/kernel/iommu_groups/x": ""}),
			run:  fingerprint.Run{Backend: "hsa"},
		},
	}
}

// cudaTree is a two-H200 machine's procfs and sysfs.
func cudaTree(t *testing.T) string {
	return files(t, map[string]string{
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

// amdTree is an MI300X-like machine's: two KFD GPU nodes, their links,
// amdgpu's version and parameters, the IOMMU's command line.
func amdTree(t *testing.T) string {
	return files(t, map[string]string{
		"proc/sys/kernel/osrelease":                                 "6.1.0-28-amd64\n",
		"etc/os-release":                                            "PRETTY_NAME='Debian GNU/Linux 12 (bookworm)'\n",
		"sys/module/amdgpu/version":                                 "6.8.5\n",
		"sys/module/amdgpu/parameters/noretry":                      "1\n",
		"sys/module/amdgpu/parameters/cwsr_enable":                  "1\n",
		"sys/class/kfd/kfd/topology/nodes/0/properties":             "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n",
		"sys/class/kfd/kfd/topology/nodes/1/properties":             "cpu_cores_count 0\nsimd_count 1216\ngfx_target_version 90402\nnum_xcc 8\nunique_id 9007199254740993\nlocation_id 512\nfw_version abc\n",
		"sys/class/kfd/kfd/topology/nodes/1/name":                   "gfx942\n",
		"sys/class/kfd/kfd/topology/nodes/1/io_links/0/properties":  "type 11\nnode_from 1\nnode_to 0\nweight 20\n",
		"sys/class/kfd/kfd/topology/nodes/1/p2p_links/0/properties": "type 11\nnode_from 1\nnode_to 2\nweight 15\nmax_bandwidth 18446744073709551615\n",
		"sys/class/kfd/kfd/topology/nodes/2/properties":             "simd_count 1216\ngfx_target_version 90402\nunique_id 4611686018427387905\n",
		"sys/kernel/iommu_groups/0/x":                               "",
		"proc/cmdline":                                              "amd_iommu=on iommu=pt amdgpu.noretry=1 numa_balancing=disable\n",
	})
}

// pin fixes the parts of an environment that are the test machine's own
// (GOARCH, GOOS, the Go toolchain in harness), so the expected bytes are
// the same on every machine.
func pin(e *report.Environment) {
	e.GOARCH, e.GOOS = "amd64", "linux"
	e.Harness = &report.Harness{Commit: "c0ffee", Go: "go1.x", Module: "p2patomics", Version: "0.1.0-dev"}
}
