package report_test

import (
	"encoding/json"
	"slices"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// TestEnvironmentReaders: the typed readers answer alike for the host
// golden as read from its file and for an environment the suite holds in
// memory (typed device facts, not maps), and say nothing where a record
// lacks the key.
func TestEnvironmentReaders(t *testing.T) {
	var rep report.Report
	if err := json.Unmarshal(readGolden(t), &rep); err != nil {
		t.Fatal(err)
	}
	env := rep.Environment
	if env.Vendor() != backends.HostName || env.Hostname() != "vm" || env.Started() != "2026-12-01T23:43:34Z" || env.Driver() != "" {
		t.Errorf("vendor %q hostname %q started %q driver %q", env.Vendor(), env.Hostname(), env.Started(), env.Driver())
	}
	if gs := env.GPUs(); len(gs) != 1 || gs[0].Name != "cpu" || gs[0].Units != 2 || !gs[0].Caps.HostAtomics.OK {
		t.Errorf("GPUs = %+v", gs)
	}
	if env.Section("os")["release"] != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("os = %v", env.Section("os"))
	}
	live := report.Environment{
		"vendor": "nvidia",
		"nvidia": map[string]any{"driver": "580.159.04"},
		"gpus":   []device.Info{{Name: "NVIDIA H200", Arch: "sm_90"}, {Name: "NVIDIA H200", Arch: "sm_90"}},
	}
	if live.Driver() != "580.159.04" || !slices.Equal(live.GPUList(), []string{"2 x NVIDIA H200 (sm_90)"}) {
		t.Errorf("driver %q, GPUs %v", live.Driver(), live.GPUList())
	}
	if env.Inject() != nil || !slices.Equal(report.Environment{"inject": []any{"fail:cuMemMap"}}.Inject(), []string{"fail:cuMemMap"}) {
		t.Error("inject rules misread")
	}
	var none report.Environment
	if none.Hostname() != "unknown" || none.GPUs() != nil || none.Section("os") != nil || none.Vendor() != "" {
		t.Error("an empty environment answers")
	}
}
