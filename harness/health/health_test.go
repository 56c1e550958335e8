package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/kmsg"
	"p2patomics/harness/report"
)

func write(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, root, target, p string) {
	t.Helper()
	full := filepath.Join(root, p)
	os.MkdirAll(filepath.Dir(full), 0o755)
	if err := os.Symlink(filepath.Join(root, target), full); err != nil {
		t.Fatal(err)
	}
}

const nvInfo = `Model: 		 NVIDIA H200
IRQ:   		 145
GPU UUID: 	 GPU-8c5e2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e
Video BIOS: 	 96.00.99.00.01
Bus Type: 	 PCIe
DMA Size: 	 52 bits
DMA Mask: 	 0xfffffffffffff
Bus Location: 	 0000:3b:00.0
Device Minor: 	 0
GPU Excluded:	 No
`

// fakeMachine builds a sysfs/procfs tree with two NVIDIA GPUs and one
// amdgpu card with RAS counters.
func fakeMachine(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "proc/driver/nvidia/gpus/0000:3b:00.0/information", nvInfo)
	write(t, root, "proc/driver/nvidia/gpus/0000:5c:00.0/information", strings.ReplaceAll(nvInfo, "8c5e", "9d6f"))
	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/vendor", "0x1002\n")
	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/ras/umc_err_count", "ue: 0\nce: 2\n")
	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/ras/gfx_err_count", "ue: 0\nce: 0\n")
	write(t, root, "sys/bus/pci/drivers/amdgpu/.keep", "")
	link(t, root, "sys/bus/pci/drivers/amdgpu", "sys/devices/pci0000:00/0000:c3:00.0/driver")
	link(t, root, "sys/devices/pci0000:00/0000:c3:00.0", "sys/class/drm/card1/device")
	write(t, root, "sys/devices/pci0000:00/0000:01:00.0/vendor", "0x1a03\n") // BMC VGA: ignored
	link(t, root, "sys/devices/pci0000:00/0000:01:00.0", "sys/class/drm/card0/device")
	write(t, root, "sys/class/drm/card1-DP-1/status", "disconnected\n")
	return root
}

type fakeSMI struct {
	out   string
	err   error
	calls int
}

func (f *fakeSMI) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.calls++
	return []byte(f.out), f.err
}

func monitor(root string, smi *fakeSMI) *Monitor {
	return &Monitor{Root: root, SMI: "/usr/bin/nvidia-smi", SMIInterval: 0, SMITimeout: time.Second, Run: smi.run}
}

const smiOK = "GPU-8c5e2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e, 0, No, 0x0000000000000000\nGPU-9d6f2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e, 0, No, 0x0000000000000004\n"

func lines(texts ...string) []kmsg.Line {
	var ls []kmsg.Line
	for i, s := range texts {
		ls = append(ls, kmsg.Line{Seq: uint64(i + 1), Usec: uint64(i), Prio: 3, Text: s})
	}
	return ls
}

func TestSnapshotReadsFakeMachine(t *testing.T) {
	root := fakeMachine(t)
	smi := &fakeSMI{out: smiOK}
	s, v := monitor(root, smi).CheckLines(Snapshot{}, nil)
	if v.Untrustworthy || len(v.Notes) != 0 {
		t.Fatalf("verdict %+v", v)
	}
	if len(s.NVIDIA) != 2 || s.NVIDIA[0].Bus != "0000:3b:00.0" || s.NVIDIA[0].Model != "NVIDIA H200" || s.NVIDIA[0].UUID != "GPU-8c5e2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e" || s.NVIDIA[0].Excluded {
		t.Errorf("nvidia %+v", s.NVIDIA)
	}
	if len(s.AMD) != 1 || s.AMD[0].PCI != "0000:c3:00.0" || s.AMD[0].Card != "card1" || s.AMD[0].RAS["umc"] != (RASCount{0, 2}) || len(s.AMD[0].RAS) != 2 {
		t.Errorf("amd %+v", s.AMD)
	}
	if len(s.SMI) != 2 || s.SMI[1].Throttle != 4 || s.SMI[0].ECCUncorrected != 0 || s.SMI[0].RetiredPending != "No" || smi.calls != 1 {
		t.Errorf("smi %+v (calls %d)", s.SMI, smi.calls)
	}
	// Nothing changed: trustworthy, no notes.
	s2, v := monitor(root, smi).CheckLines(s, nil)
	if v.Untrustworthy || len(v.Notes) != 0 || len(s2.AMD) != 1 {
		t.Fatalf("unchanged machine: %+v", v)
	}
}

func TestKernelLogRules(t *testing.T) {
	root := t.TempDir()
	m := &Monitor{Root: root, SMI: "-"}
	cases := []struct {
		text  string
		bad   bool
		words string
	}{
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.", true, "Xid 79 on 0000:3b:00: GPU has fallen off the bus"},
		{"NVRM: Xid (PCI:0000:3b:00): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response from GPU0 GSP!", true, "GSP"},
		{"NVRM: Xid (PCI:0000:3b:00): 120, pid=1, GSP task timeout", true, "GSP error"},
		{"NVRM: Xid (PCI:0000:06:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE)", true, "ECC"},
		{"NVRM: Xid (PCI:0000:4e:00): 94, pid=1, name=x, Contained: SM (0x1). RST: No, D-RST: No", true, "ECC"},
		{"NVRM: Xid (PCI:0000:4e:00): 95, pid=1, name=x, Uncontained: FBHUB. RST: Yes, D-RST: No", true, "ECC"},
		{"NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, Graphics SM Warp Exception", false, "Xid 13"},
		{"NVRM: Xid (PCI:0000:18:00): 31, pid=1, name=x, Ch 00000008, MMU Fault", false, "Xid 31"},
		{"NVRM: Xid (PCI:0000:18:00): 43, pid=1, name=x, Ch 00000010", false, "Xid 43"},
		{"NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.", true, "fallen off the bus"},
		{"amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", true, "amdgpu reset on 0000:03:00"},
		{"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3", true, "ring timeout"},
		{"amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32769)", false, "amdgpu-fault on 0000:c3:00"},
		{"AMD-Vi: Event logged [IO_PAGE_FAULT device=03:00.0 domain=0x000e address=0x7f12340000 flags=0x0020]", false, "iommu-fault"},
		{"p2patomics-test: marker 1-2 NVRM: Xid (PCI:0000:00:00): 79, test", false, ""},
		{"usb 1-1: new high-speed USB device", false, ""},
	}
	for _, c := range cases {
		_, v := m.CheckLines(Snapshot{}, lines(c.text))
		if v.Untrustworthy != c.bad {
			t.Errorf("%q: untrustworthy=%v, want %v (%+v)", c.text, v.Untrustworthy, c.bad, v)
		}
		all := v.Reason + strings.Join(v.Notes, "|")
		if c.words == "" && all != "" || !strings.Contains(all, c.words) {
			t.Errorf("%q: verdict %q, want it to say %q", c.text, all, c.words)
		}
	}
	// Several lines: the first untrustworthy one is the Reason, the rest notes.
	_, v := m.CheckLines(Snapshot{}, lines(
		"NVRM: Xid (PCI:0000:18:00): 31, pid=1, name=x, Ch 00000008",
		"NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.",
		"amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"))
	if !v.Untrustworthy || !strings.HasPrefix(v.Reason, "Xid 79") || len(v.Notes) != 2 {
		t.Errorf("combined verdict %+v", v)
	}
}

func TestCounterRules(t *testing.T) {
	root := fakeMachine(t)
	smi := &fakeSMI{out: smiOK}
	m := monitor(root, smi)
	base, _ := m.CheckLines(Snapshot{}, nil)

	check := func(name string, want bool, words string) {
		t.Helper()
		time.Sleep(time.Millisecond) // SMITaken must differ
		_, v := m.CheckLines(base, nil)
		all := v.Reason + "|" + strings.Join(v.Notes, "|")
		if v.Untrustworthy != want || !strings.Contains(all, words) {
			t.Errorf("%s: verdict %+v, want untrustworthy=%v saying %q", name, v, want, words)
		}
	}

	smi.out = strings.Replace(smiOK, ", 0, No, 0x0000000000000000", ", 2, No, 0x0000000000000000", 1)
	check("ECC rise", true, "uncorrectable ECC errors rose from 0 to 2")
	smi.out = strings.Replace(smiOK, ", 0, No, 0x0000000000000000", ", 0, Yes, 0x0000000000000000", 1)
	check("retired pages pending", true, "retired pages pending")
	smi.out = strings.Replace(smiOK, "0x0000000000000004", "0x0000000000000048", 1)
	check("throttle", false, "HW slowdown, HW thermal slowdown (0x48)")
	smi.out = "[N/A] header\nUnable to determine the device handle for GPU0000:5C:00.0: GPU is lost.  Reboot the system to recover this GPU\n" + strings.SplitAfter(smiOK, "\n")[0]
	smi.err = errors.New("exit status 15")
	check("GPU lost", true, "GPU is lost")
	smi.err = nil
	smi.out = smiOK

	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/ras/umc_err_count", "ue: 1\nce: 2\n")
	check("RAS ue", true, "uncorrectable umc RAS errors rose from 0 to 1")
	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/ras/umc_err_count", "ue: 0\nce: 5\n")
	check("RAS ce", false, "correctable umc RAS errors rose from 2 to 5")
	write(t, root, "sys/devices/pci0000:00/0000:c3:00.0/ras/umc_err_count", "ue: 0\nce: 2\n")

	link(t, root, "sys/devices/pci0000:00/0000:c3:00.0", "sys/class/devcoredump/devcd1/failing_device")
	check("devcoredump", true, "devcoredump (devcd1)")
	os.RemoveAll(filepath.Join(root, "sys/class/devcoredump"))

	os.Remove(filepath.Join(root, "sys/class/drm/card1/device"))
	check("amd card gone", true, "amdgpu 0000:c3:00.0 (card1) is gone")
	link(t, root, "sys/devices/pci0000:00/0000:c3:00.0", "sys/class/drm/card1/device")

	write(t, root, "proc/driver/nvidia/gpus/0000:5c:00.0/information", strings.ReplaceAll(nvInfo, "GPU-8c5e2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e", "GPU-????????-????-????-????-????????????"))
	check("uuid lost", true, "0000:5c:00.0 reports UUID GPU-????")
	os.RemoveAll(filepath.Join(root, "proc/driver/nvidia/gpus/0000:5c:00.0"))
	check("nvidia gone", true, "NVIDIA GPU 0000:5c:00.0 (GPU-9d6f")
}

func TestSMIRateLimitAndFallback(t *testing.T) {
	root := fakeMachine(t)
	calls := 0
	var queries []string
	m := &Monitor{Root: root, SMI: "nvidia-smi", SMIInterval: time.Hour, Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
		calls++
		queries = append(queries, args[0])
		if strings.Contains(args[0], "clocks_throttle_reasons") {
			return []byte(`Field "clocks_throttle_reasons.active" is not a valid field to query.`), errors.New("exit status 2")
		}
		return []byte(smiOK), nil
	}}
	s, v := m.CheckLines(Snapshot{}, nil)
	if calls != 2 || !strings.Contains(queries[1], "clocks_event_reasons.active") || len(s.SMI) != 2 || s.SMIError != "" || v.Untrustworthy {
		t.Fatalf("fallback: calls %d, %q, snapshot %+v, verdict %+v", calls, queries, s, v)
	}
	s2, _ := m.CheckLines(s, nil)
	if calls != 2 || len(s2.SMI) != 2 || !s2.SMITaken.Equal(s.SMITaken) {
		t.Fatalf("within the interval nvidia-smi ran again (calls %d) or lost its reading", calls)
	}
	m.CheckLines(s2, lines("NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x"))
	if calls != 4 {
		t.Fatalf("an Xid line did not force nvidia-smi (calls %d)", calls)
	}
	// Absent nvidia-smi: nothing read, nothing said.
	m = &Monitor{Root: root, SMI: "-"}
	if s, v := m.CheckLines(Snapshot{}, nil); s.SMI != nil || len(v.Notes) != 0 {
		t.Fatalf("SMI off: %+v %+v", s, v)
	}
	// Timeout is a note, not a verdict.
	m = &Monitor{Root: root, SMI: "nvidia-smi", SMITimeout: 10 * time.Millisecond, Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	if _, v := m.CheckLines(Snapshot{}, nil); v.Untrustworthy || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "timed out") {
		t.Fatalf("timeout verdict %+v", v)
	}
}

// TestRealMachine runs the real Monitor on this machine: two checks with
// nothing between them must not call it untrustworthy, and every GPU the
// NVIDIA driver lists must be read. On a machine without GPUs there is
// nothing to read or lose, so it skips; TestRecordedMachine asks the same
// of a recorded H200 machine everywhere.
func TestRealMachine(t *testing.T) {
	dirs, _ := filepath.Glob("/proc/driver/nvidia/gpus/*")
	cards, _ := filepath.Glob("/sys/class/drm/card*/device/ras")
	if len(dirs) == 0 && len(cards) == 0 {
		t.Skip("no NVIDIA GPU listed by the driver and no amdgpu RAS counters: nothing of this machine to check (TestRecordedMachine checks a recorded one)")
	}
	m, err := NewMonitor()
	if err != nil {
		t.Logf("kernel log: %v (the check goes on without it)", err)
	}
	idleTwice(t, m, len(dirs))
}

// idleTwice checks m twice with nothing between: the second check must
// not call the machine untrustworthy (that would abort every case), the
// snapshots are stamped in order, and all nvidia GPUs the driver lists are
// read (a parser that drops one would hide its counters from the next
// comparison). It returns the second snapshot.
func idleTwice(t *testing.T, m *Monitor, nvidia int) Snapshot {
	t.Helper()
	start := time.Now()
	s1, v1 := m.Check(Snapshot{})
	s2, v2 := m.Check(s1)
	t.Logf("two checks in %v: %d NVIDIA, %d amdgpu, smi %d; verdict %+v", time.Since(start), len(s2.NVIDIA), len(s2.AMD), len(s2.SMI), v2)
	if v2.Untrustworthy {
		t.Errorf("second check on an idle machine: untrustworthy (%s); first said %+v", v2.Reason, v1)
	}
	if s2.Taken.IsZero() || s2.Taken.Before(s1.Taken) {
		t.Errorf("snapshots not stamped in order: %v then %v", s1.Taken, s2.Taken)
	}
	if len(s2.NVIDIA) != nvidia {
		t.Errorf("read %d NVIDIA GPUs, the driver lists %d", len(s2.NVIDIA), nvidia)
	}
	return s2
}

// recordedRun is a committed 4xH200 run (testdata/runs: gzipped from
// results/, which tests never read): its environment holds each GPU's
// /proc/driver/nvidia/gpus/<bus>/information as the fingerprint read it.
const recordedRun = "../../testdata/runs/h200x4-580.159.04/results.json.gz"

// driverLabels are the information file's labels for the fingerprint's
// keys (the driver's spelling, as in nvInfo).
var driverLabels = [][2]string{
	{"model", "Model"}, {"irq", "IRQ"}, {"gpu_uuid", "GPU UUID"}, {"video_bios", "Video BIOS"},
	{"bus_type", "Bus Type"}, {"dma_size", "DMA Size"}, {"dma_mask", "DMA Mask"},
	{"bus_location", "Bus Location"}, {"device_minor", "Device Minor"},
	{"gpu_firmware", "GPU Firmware"}, {"gpu_excluded", "GPU Excluded"},
}

// recordedMachine rebuilds the recorded run's NVIDIA procfs under a fresh
// root and returns it with the GPUs it lists.
func recordedMachine(t *testing.T) (string, []map[string]string) {
	t.Helper()
	b, err := report.ReadRaw(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Environment struct {
			NVIDIA struct {
				GPUs []map[string]string `json:"gpus"`
			} `json:"nvidia"`
		} `json:"environment"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", recordedRun, err)
	}
	gpus := rec.Environment.NVIDIA.GPUs
	if len(gpus) != 4 {
		t.Fatalf("%s records %d NVIDIA GPUs, want the 4 of its machine", recordedRun, len(gpus))
	}
	root := t.TempDir()
	for _, g := range gpus {
		var info strings.Builder
		for _, l := range driverLabels {
			fmt.Fprintf(&info, "%s: \t %s\n", l[1], g[l[0]])
		}
		write(t, root, "proc/driver/nvidia/gpus/"+g["bus"]+"/information", info.String())
	}
	return root, gpus
}

// TestRecordedMachine: the real Monitor over a recorded 4xH200 machine's
// driver facts. Idle, it reads all four GPUs as the driver listed them and
// stays trustworthy; with one GPU gone from the driver's list, or its UUID
// lost, the next check is untrustworthy and names that GPU.
func TestRecordedMachine(t *testing.T) {
	root, gpus := recordedMachine(t)
	m := &Monitor{Root: root, SMI: "-"}
	s := idleTwice(t, m, len(gpus))
	for i, g := range s.NVIDIA {
		r := gpus[i]
		if g.Bus != r["bus"] || g.UUID != r["gpu_uuid"] || g.Model != r["model"] || g.Excluded {
			t.Errorf("GPU %d read as %+v, the driver listed %v", i, g, r)
		}
	}
	lost := gpus[2]
	info := filepath.Join(root, "proc/driver/nvidia/gpus", lost["bus"], "information")
	b, _ := os.ReadFile(info)
	write(t, root, "proc/driver/nvidia/gpus/"+lost["bus"]+"/information", strings.ReplaceAll(string(b), lost["gpu_uuid"], "GPU-????????-????-????-????-????????????"))
	if _, v := m.Check(s); !v.Untrustworthy || !strings.Contains(v.Reason, lost["bus"]+" reports UUID GPU-????") {
		t.Errorf("GPU %s lost its UUID: verdict %+v", lost["bus"], v)
	}
	os.RemoveAll(filepath.Dir(info))
	if _, v := m.Check(s); !v.Untrustworthy || !strings.Contains(v.Reason, "NVIDIA GPU "+lost["bus"]+" ("+lost["gpu_uuid"]+") is gone") {
		t.Errorf("GPU %s gone from the driver's list: verdict %+v", lost["bus"], v)
	}
}

// BenchmarkCheckLines is one per-case check on this machine, without
// nvidia-smi.
func BenchmarkCheckLines(b *testing.B) {
	m := &Monitor{Root: "/", SMI: "-"}
	ls := lines("NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x", "usb 1-1: new device")
	s, _ := m.CheckLines(Snapshot{}, ls)
	for b.Loop() {
		m.CheckLines(s, ls)
	}
}
