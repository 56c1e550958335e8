package perf

import "testing"

// A copy's family follows where its memory is (the kind's row in
// harness/backends, KindSpec.HostMemory), never the kind's name: CUDA's
// vmm-host copies are host-memory copies, its device kinds' and every
// AMD kind's are not; both-direction copies and atomics keep their own
// families whatever the memory.
func TestClassifyHostMemoryCopies(t *testing.T) {
	for _, c := range []struct {
		id, metric string
		want       Family
	}{
		{"cuda.vmm-host.perf.copy_ce_read.r0r1", "bw_ce_read_gbps", CopyHost},
		{"cuda.vmm-host.perf.copy_kernel_write.r1r0", "bw_kernel_write_gbps", CopyHost},
		{"cuda.vmm.perf.copy_ce_read.r0r1", "bw_ce_read_gbps", CopyOneWay},
		{"cuda.ipc.perf.copy_kernel_read.r0r1", "bw_kernel_read_gbps", CopyOneWay},
		{"hip.pinned.perf.copy_ce_read.r0r1", "bw_ce_read_gbps", CopyOneWay},
		{"cuda.vmm-host.perf.copy_ce_bidir.r0r1", "bw_ce_bidir_gbps", CopyBoth},
		{"cuda.vmm-host.perf.atomic_contended_all_sys", "atomic_rate", AtomicHost},
		{"nosuch.vmm-host.perf.copy_ce_read.r0r1", "bw_ce_read_gbps", CopyOneWay},
		{"cuda", "bw_ce_read_gbps", CopyOneWay},
	} {
		if got := Classify(c.id, c.metric); got != c.want {
			t.Errorf("Classify(%s, %s) = %q, want %q", c.id, c.metric, got.Name, c.want.Name)
		}
	}
	// The stored gate widens for the machine's shift; a paired A/B, whose
	// A and B see the shift alike, keeps the device copies' floor.
	if CopyHost.Floor <= CopyOneWay.Floor || CopyHost.PairedFloor() != CopyOneWay.Floor || CopyOneWay.PairedFloor() != CopyOneWay.Floor {
		t.Errorf("floors: host %v (paired %v), device %v (paired %v)", CopyHost.Floor, CopyHost.PairedFloor(), CopyOneWay.Floor, CopyOneWay.PairedFloor())
	}
	// ÷1.2 stays visible: the floor leaves room for a band's own width.
	if 1-CopyHost.Floor <= 1/1.2 {
		t.Errorf("host-memory copy floor %v cannot see copy-engine ÷1.2", CopyHost.Floor)
	}
	if familyReason(CopyHost.Name) == CopyHost.Name {
		t.Errorf("perf.txt gives no reason for %q", CopyHost.Name)
	}
}
