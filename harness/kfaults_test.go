package harness_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/wire"
)

// plantedLog gives a host runner a kernel log the test writes: plant
// appends one /dev/kmsg record, as the driver would log it.
func plantedLog(t *testing.T) (*harness.Runner, func(text string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
	t.Cleanup(func() { r.Close() })
	if err := harness.SetKernelLog(r, path); err != nil {
		t.Fatal(err)
	}
	seq := 0
	return r, func(text string) {
		seq++
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "3,%d,%d,-;%s\n", seq, 5000000000+seq, text)
	}
}

func xid31(pid int) string {
	return fmt.Sprintf("NVRM: Xid (PCI:0000:18:00): 31, pid=%d, name=specs.test, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_b6000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE", pid)
}

// plantCase is a 2-rank host case whose body plants line(rank 0's pid).
func plantCase(id string, ranks int, gpu bool, plant func(string), line func(pid int) string) *harness.Case {
	return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName, Kind: "memfd", Ranks: ranks}, Expected: report.Pass, GPU: gpu,
		Timeout: 10 * time.Second, Run: func(c *harness.Ctx) error {
			if line != nil {
				plant(line(c.W.Procs[0].Pid))
			}
			return nil
		}}
}

// Issue 35 item 3 (a): a GPU fault the kernel logs naming a rank's pid
// while its case runs makes that case a crash carrying the fault, whatever
// the body returned; one that only warns (Xid 45) does not.
func TestKernelFaultOfARankIsItsCase(t *testing.T) {
	r, plant := plantedLog(t)
	warn := r.Run(plantCase("xid45", 2, true, plant, func(pid int) string {
		return fmt.Sprintf("NVRM: Xid (PCI:0000:18:00): 45, pid=%d, name=p2patomics-rank, Ch 00000010", pid)
	}))
	if warn.Outcome != report.Pass || len(warn.KernelLog) != 1 {
		t.Errorf("Xid 45 (preemptive cleanup) failed its case or was not attached: %s %s %v", warn.Outcome, warn.Detail, warn.KernelLog)
	}
	res := r.Run(plantCase("xid31", 2, false, plant, xid31))
	if res.Outcome != report.Crash || res.Fault == nil || res.Fault.Code != 31 || res.Fault.Address != "0x7f2eb6000000" {
		t.Fatalf("a rank's Xid 31: %s %+v %s, want a crash carrying Xid 31", res.Outcome, res.Fault, res.Detail)
	}
	if !strings.Contains(res.Detail, "rank 0 (pid") || len(res.KernelLog) != 1 || strings.HasPrefix(res.KernelLog[0], "[by time window]") {
		t.Errorf("detail %q, kernel log %q: want rank 0 named and the line attached by its pid", res.Detail, res.KernelLog)
	}
	if len(harness.RunFaults(r)) != 0 {
		t.Errorf("the case's own fault is also a run failure: %v", harness.RunFaults(r))
	}
}

// (b): a fault naming a pid that is none of the run's ranks fails the
// run's health (Failures, which the verdict reads) and is not the case's.
func TestForeignKernelFaultFailsTheRun(t *testing.T) {
	r, plant := plantedLog(t)
	res := r.Run(plantCase("foreign", 2, true, plant, func(int) string { return xid31(os.Getpid()) }))
	if res.Outcome != report.Pass || len(res.KernelLog) != 0 {
		t.Errorf("another process's fault was charged to the case: %s %s %v", res.Outcome, res.Detail, res.KernelLog)
	}
	if len(harness.RunFaults(r)) != 1 || !strings.Contains(harness.RunFaults(r)[0], fmt.Sprintf("foreign GPU fault: pid %d", os.Getpid())) || !strings.Contains(harness.RunFaults(r)[0], "Xid 31") {
		t.Fatalf("run failures %q, want the one foreign Xid 31", harness.RunFaults(r))
	}
}

// (b'): a fault naming a rank of another world is that world's last
// case's: logged while a case of another world runs, or between cases.
func TestKernelFaultOfAnotherWorldNamesItsLastCase(t *testing.T) {
	r, plant := plantedLog(t)
	var three int
	r.Run(plantCase("three", 3, true, plant, func(pid int) string { three = pid; return "p2patomics-test: marker" }))
	r.Run(plantCase("two", 2, true, plant, func(int) string { return xid31(three) }))
	plant(xid31(three)) // between cases
	r.Run(plantCase("two.again", 2, true, plant, nil))
	if len(harness.RunFaults(r)) != 2 || !strings.HasPrefix(harness.RunFaults(r)[0], "three ended pass") || !strings.Contains(harness.RunFaults(r)[0], "while two ran") ||
		!strings.HasPrefix(harness.RunFaults(r)[1], "three ended pass") || !strings.Contains(harness.RunFaults(r)[1], "between cases") {
		t.Fatalf("run failures %q, want two naming case three", harness.RunFaults(r))
	}
}

// (c): a line naming no process is attached by time window, and says so.
func TestKernelLineWithoutPidIsAttachedByTimeWindow(t *testing.T) {
	r, plant := plantedLog(t)
	host := r.Run(plantCase("nopid", 2, false, plant, func(int) string {
		return "NVRM: Xid (PCI:0000:06:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU"
	}))
	if host.Outcome != report.Pass || len(host.KernelLog) != 1 || !strings.HasPrefix(host.KernelLog[0], "[by time window] [") {
		t.Errorf("a host case with a pid-less line: %s %q", host.Outcome, host.KernelLog)
	}
	gpu := r.Run(plantCase("nopid.gpu", 2, true, plant, func(int) string {
		return "amdgpu 0000:03:00.0: amdgpu: [mmhub0] no-retry page fault (src_id:0 ring:0 vmid:1 pasid:32770, for process  pid 0 thread  pid 0)"
	}))
	if gpu.Outcome != report.Crash || gpu.Fault == nil || !strings.Contains(gpu.Detail, "time window") {
		t.Errorf("a GPU case with a pid-less GPU fault: %s %+v %s", gpu.Outcome, gpu.Fault, gpu.Detail)
	}
}

// Issue 35 item 3, part 4: a sticky error a case leaves is found by the
// probe at the case's end (ping's MemInfo, which every case gets, a NoLeak
// one's too) and is the case's crash.
func TestStickyErrorIsTheCasesCrash(t *testing.T) {
	for _, noLeak := range []bool{false, true} {
		r := harness.NewRunner(backends.HostName, wire.DefaultSettings, 1)
		c := deathCase(fmt.Sprintf("sticky.noleak_%t", noLeak), noLeak, func(c *harness.Ctx) error { return c.Canary(1, "sticky_fault") })
		res := r.Run(c)
		if res.Outcome != report.Crash || res.Fault == nil || res.Fault.Name != "STICKY_FAULT_CANARY" {
			t.Errorf("noleak=%t: %s %+v %s, want the sticky fault as the case's crash", noLeak, res.Outcome, res.Fault, res.Detail)
		}
		// The probe's own reply names it: without the probe's judgement
		// the rank's exit after the reply is a race with the judgement
		// (a death when it wins, a pass when it loses).
		if !strings.Contains(res.Detail, "meminfo: canary gpu fault") {
			t.Errorf("noleak=%t: detail %q, want the probe's reply (meminfo) naming the fault", noLeak, res.Detail)
		}
		if next := r.Run(deathCase("next", noLeak, func(*harness.Ctx) error { return nil })); next.Outcome != report.Pass {
			t.Errorf("noleak=%t: the case after: %s %s", noLeak, next.Outcome, next.Detail)
		}
		r.Close()
		if len(harness.RunFaults(r)) != 0 {
			t.Errorf("noleak=%t: the case's own sticky error also failed the run: %v", noLeak, harness.RunFaults(r))
		}
	}
}
