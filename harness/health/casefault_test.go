package health

import (
	"strings"
	"testing"

	"p2patomics/harness/kmsg"
)

// TestCaseFault: which kernel-log events fail the case they are charged
// to, and what the fault says, on lines shaped as the drivers print them.
func TestCaseFault(t *testing.T) {
	cases := []struct {
		lines []string
		name  string // "" when the event only warns
		addr  string
	}{
		{[]string{"NVRM: Xid (PCI:0000:18:00): 31, pid=3321, name=specs.test, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_b6000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"}, "Xid 31", "0x7f2eb6000000"},
		{[]string{"NVRM: Xid (PCI:0000:18:00): 43, pid=3321, name=p2patomics-rank, Ch 00000010"}, "Xid 43", ""},
		{[]string{"NVRM: Xid (PCI:0000:18:00): 45, pid=3321, name=p2patomics-rank, Ch 00000010"}, "", ""},
		{[]string{"NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."}, "", ""},
		{[]string{"NVRM: Xid (PCI:0000:4e:00): 94, pid=5512, name=p2patomics-rank, Contained: SM (0x1). RST: No, D-RST: No"}, "Xid 94", ""},
		{[]string{"NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed"}, "", ""},
		{[]string{"amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32769)",
			"amdgpu 0000:c3:00.0: amdgpu:  Process p2patomics-rank pid 4242 thread p2patomics-rank pid 4242)",
			"amdgpu 0000:c3:00.0: amdgpu:   in page starting at address 0x00007f5a2c000000 from client 10"}, "amdgpu VM page fault", "0x00007f5a2c000000"},
		{[]string{"amdgpu: kfd: process pid:6060 (pasid 0x8001) VM fault on address 0x7f0000000000"}, "kfd fault", "0x7f0000000000"},
		{[]string{"kfd kfd: amdgpu: Allocated 3969056 bytes on gart"}, "", ""},
		{[]string{"AMD-Vi: Event logged [IO_PAGE_FAULT device=03:00.0 domain=0x000e address=0x7f12340000 flags=0x0020]"}, "IOMMU fault", "0x7f12340000"},
	}
	for _, c := range cases {
		var ls []kmsg.Line
		for i, s := range c.lines {
			ls = append(ls, kmsg.Line{Seq: uint64(i), Prio: 3, Text: s})
		}
		evs := kmsg.Events(ls)
		if len(evs) != 1 {
			t.Fatalf("%q: %d events, want 1", c.lines[0], len(evs))
		}
		f := CaseFault(evs[0])
		switch {
		case c.name == "" && f != nil:
			t.Errorf("%q fails its case (%v); it should only warn", c.lines[0], f)
		case c.name != "" && f == nil:
			t.Errorf("%q does not fail its case", c.lines[0])
		case f != nil && (f.Name != c.name || f.Address != c.addr || !strings.Contains(f.Reason, c.lines[0])):
			t.Errorf("%q: fault %+v, want name %q address %q and the line in the reason", c.lines[0], *f, c.name, c.addr)
		}
	}
}
