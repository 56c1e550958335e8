package report_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// TestEnvironmentReaders: the typed parts and readers answer alike for
// the host golden as read from its file and for an environment the suite
// holds in memory, and say nothing where a record lacks the key.
func TestEnvironmentReaders(t *testing.T) {
	var rep report.Report
	if err := json.Unmarshal(readGolden(t), &rep); err != nil {
		t.Fatal(err)
	}
	env := rep.Environment
	if env.Vendor != backends.HostName || env.NodeName() != "vm" || env.Started != "2026-12-01T23:43:34Z" || env.Driver() != "" || env.GOARCH != "amd64" {
		t.Errorf("vendor %q hostname %q started %q driver %q", env.Vendor, env.NodeName(), env.Started, env.Driver())
	}
	if gs := env.GPUs; len(gs) != 1 || gs[0].Name != "cpu" || gs[0].Units != 2 || !gs[0].Caps.HostAtomics.OK || !slices.Equal(gs[0].Ranks, []int{0, 1, 2}) {
		t.Errorf("GPUs = %+v", gs)
	}
	if env.Flags == nil || *env.Flags != (report.Flags{Backend: backends.HostName, Ranks: 2, Seed: 1}) || env.WorldsStarted == nil || *env.WorldsStarted != 11 {
		t.Errorf("flags %+v worlds %v", env.Flags, env.WorldsStarted)
	}
	if ps := env.Probes(); len(ps) != 1 || ps[0].Backend != backends.HostName || !ps[0].Used {
		t.Errorf("probes %+v", ps)
	}
	if env.OS == nil || env.OS.Release != "Debian GNU/Linux 12 (bookworm)" || env.Kernel() != "6.18.44-fc-v1045" || env.Harness == nil || env.Harness.Module != "p2patomics" {
		t.Errorf("os = %+v, harness %+v", env.OS, env.Harness)
	}
	if env.IOMMU == nil || env.IOMMU.Groups == nil || *env.IOMMU.Groups != 0 || env.Settings != nil || env.Sharing != nil {
		t.Errorf("iommu %+v settings %v sharing %+v", env.IOMMU, env.Settings, env.Sharing)
	}
	later := report.EnvironmentOf(map[string]any{"os": map[string]any{"kernel": "7.0", "arch_level": "v4"}, "settings": map[string]any{"HSA_XNACK": 1}})
	if later.OS != nil || later.Kernel() != "7.0" || later.Section("os")["arch_level"] != "v4" || later.Settings != nil || later.Section("settings")["HSA_XNACK"] != 1.0 {
		t.Errorf("an os object with a later key: OS %+v, kernel %q, section %v", later.OS, later.Kernel(), later.Section("os"))
	}
	if st := env.Stack(); st["vendor"] != backends.HostName || st["arch"] != "amd64" {
		t.Errorf("stack %v", st)
	}
	live := report.Environment{
		Vendor:   "nvidia",
		Sections: map[string]any{"nvidia": map[string]any{"driver": "580.159.04"}},
		GPUs:     []report.GPU{{Info: device.Info{Name: "NVIDIA H200", Arch: "sm_90"}}, {Info: device.Info{Name: "NVIDIA H200", Arch: "sm_90"}}},
	}
	if live.Driver() != "580.159.04" || !slices.Equal(live.GPUList(), []string{"2 x NVIDIA H200 (sm_90)"}) {
		t.Errorf("driver %q, GPUs %v", live.Driver(), live.GPUList())
	}
	amd := report.EnvironmentOf(map[string]any{"amdgpu": map[string]any{"version": "6.8.5"}})
	if amd.Driver() != "6.8.5" {
		t.Errorf("amdgpu driver %q", amd.Driver())
	}
	if env.Inject != nil || !slices.Equal(report.EnvironmentOf(map[string]any{"inject": []any{"fail:cuMemMap"}}).Inject, []string{"fail:cuMemMap"}) {
		t.Error("inject rules misread")
	}
	var none report.Environment
	if none.NodeName() != "unknown" || none.GPUs != nil || none.OS != nil || none.Kernel() != "" || none.Vendor != "" || none.Probes() != nil {
		t.Error("an empty environment answers")
	}
}

// TestEnvironmentJSONIsTheObject: the struct writes the bytes the open
// map wrote (keys sorted, each typed part under its old key, nested GPU
// keys sorted too), for the host golden and for a record holding every
// key a writer sets, one no reader knows, a zero worlds_started, a null
// backends and a GPU from before caps were recorded. It failed with
// Environment's default struct encoding (field names as keys, "rank" in
// each GPU), and without GPU.read (the old GPU gained "caps").
func TestEnvironmentJSONIsTheObject(t *testing.T) {
	var doc struct {
		Environment json.RawMessage `json:"environment"`
	}
	if err := json.Unmarshal(readGolden(t), &doc); err != nil {
		t.Fatal(err)
	}
	every := []byte(`{"amdgpu":{"nodes":[{"gfx":"gfx942","node":1}],"version":"6.8.5"},"backends":null,"device_sharing":{"mps":"off","shared":[{"ordinal":0,"ranks":[0,1],"uuid":"GPU-1"}]},` +
		`"flags":{"alloc":"fine","backend":"hsa","ranks":2,"seed":7},"flags_env":{"P2PAT_SEED":"7"},"future_key":[1,"x"],"harness":{"commit":"abc","go":"go1.26","module":"p2patomics","version":"0.1"},"os":{"kernel":"6.8","later":1,"release":"Ubuntu"},"goarch":"amd64","goos":"linux",` +
		`"gpus":[{"arch":"gfx942","caps":{"host_atomics":{"ok":false,"reason":"coarse"}},"count":8,"memory":1,"name":"MI300X","ordinal":0,"ranks":[0,1],"units":304,"vendor":"amd"},` +
		`{"arch":"gfx942","count":8,"memory":1,"name":"MI300X","ordinal":1,"units":304,"vendor":"amd"}],` +
		`"hostname":"n1","inject":["fail:hsa_init"],"iommu":{"cmdline":["iommu=pt"],"groups":0},"settings":{"HSA_XNACK":"1"},"started":"2026-12-01T00:00:00Z","trimmed":"cut","vendor":"amd","worlds_started":0}`)
	for name, in := range map[string][]byte{"golden": doc.Environment, "every key": every} {
		var plain map[string]any
		var typed report.Environment
		if err := json.Unmarshal(in, &plain); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(in, &typed); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(plain)
		got, err := json.Marshal(typed)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v\n got %s\nwant %s", name, err, got, want)
		}
	}
	var bad report.Environment
	if err := json.Unmarshal([]byte(`{"flags":"cuda"}`), &bad); err == nil {
		t.Error("a flags string read as flags")
	}
}

// TestEveryCommittedEnvironmentReadsBack: the environment of every
// committed GPU run the tests hold (testdata/runs, gzipped from results/,
// which tests never read) reads into the struct and writes back the bytes
// the open map wrote (the first H200 records' GPUs lack caps; none gains
// it). It failed before GPU kept the keys it was read with.
func TestEveryCommittedEnvironmentReadsBack(t *testing.T) {
	one, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "runs", "*", "results.json.gz"))
	two, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "runs", "*", "*", "results.json.gz"))
	files := append(one, two...)
	if len(files) < 10 {
		t.Fatalf("want the 10 recorded GPU runs of testdata/runs, found %d", len(files))
	}
	for _, f := range files {
		b, err := report.ReadRaw(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Environment json.RawMessage `json:"environment"`
		}
		var plain map[string]any
		var typed report.Environment
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(doc.Environment, &plain); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(doc.Environment, &typed); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		want, _ := json.Marshal(plain)
		if got, err := json.Marshal(typed); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the environment changed in a read and write (%v)", f, err)
		}
	}
}

// TestEnvironmentOfKeepsTheError: a value JSON cannot hold (none of
// fingerprint's; a func here) leaves a record that says why under
// "error" instead of losing the run.
func TestEnvironmentOfKeepsTheError(t *testing.T) {
	env := report.EnvironmentOf(map[string]any{"vendor": backends.HostName, "odd": func() {}})
	if msg, _ := env.Sections["error"].(string); !strings.HasPrefix(msg, "environment: json: unsupported type") {
		t.Errorf("sections %v", env.Sections)
	}
	if b, err := json.Marshal(env); err != nil || !bytes.Contains(b, []byte(`"error"`)) {
		t.Errorf("%s %v", b, err)
	}
}
