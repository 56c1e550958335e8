package kmsg

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Records as /dev/kmsg returns them (one per read); texts follow what the
// drivers print (NVIDIA Xid catalogue, amdgpu gmc_v9_0_process_interrupt,
// AMD-Vi and Intel DMAR fault reporting).
var samples = []struct {
	rec  string
	kind string
	xid  int
	pci  string
}{
	{"3,1001,5123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=2412, name=specs.test, GPU has fallen off the bus.\n", KindXid, 79, "0000:3b:00"},
	{"4,1002,5123456800,-;NVRM: Xid (PCI:0000:18:00): 31, pid=3321, name=p2patomics-rank, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_b6000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n", KindXid, 31, "0000:18:00"},
	{"4,1003,5123456900,-;NVRM: Xid (PCI:0000:18:00): 43, pid=3321, name=p2patomics-rank, Ch 00000010\n", KindXid, 43, "0000:18:00"},
	{"4,1004,5123457000,-;NVRM: Xid (PCI:0000:01:00): 13, pid=901, name=p2patomics-rank, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address\n", KindXid, 13, "0000:01:00"},
	{"3,1005,5123457100,-;NVRM: Xid (PCI:0000:06:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n", KindXid, 48, "0000:06:00"},
	{"3,1006,5123457200,-;NVRM: Xid (PCI:0000:4e:00): 94, pid=5512, name=p2patomics-rank, Contained: SM (0x1). RST: No, D-RST: No\n", KindXid, 94, "0000:4e:00"},
	{"3,1007,5123457300,-;NVRM: Xid (PCI:0000:4e:00): 95, pid='<unknown>', name=<unknown>, Uncontained: FBHUB. RST: Yes, D-RST: No\n", KindXid, 95, "0000:4e:00"},
	{"3,1008,5123457400,-;NVRM: Xid (PCI:0000:3b:00 GPU-I:00): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n", KindXid, 119, "0000:3b:00"},
	{"3,1009,5123457500,-;NVRM: GPU at PCI:0000:3b:00: GPU-8c5e2c2e-4bd6-0c3e-94a6-1c5c2e2e2e2e\n", KindNVRM, 0, "0000:3b:00"},
	{"6,1010,5123457600,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  7 12:00:00 UTC 2025\n", "", 0, ""},
	{"3,2001,6000000000,-;amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32769)\n SUBSYSTEM=pci\n DEVICE=+pci:0000:c3:00.0\n", KindAMDFault, 0, "0000:c3:00"},
	{"3,2002,6000000001,-;amdgpu 0000:c3:00.0: amdgpu:  Process p2patomics-rank pid 4242 thread p2patomics-rank pid 4242)\n", "", 0, ""},
	{"3,2003,6000000002,-;amdgpu 0000:c3:00.0: amdgpu:   in page starting at address 0x00007f5a2c000000 from client 10\n", "", 0, ""},
	{"3,2004,6000000003,-;amdgpu 0000:c3:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00800932\n", KindAMDFault, 0, "0000:c3:00"},
	{"3,2005,6000000004,-;amdgpu 0000:c3:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)\n", "", 0, ""},
	{"3,2006,6000000005,-;amdgpu 0000:c3:00.0: amdgpu: \t PERMISSION_FAULTS: 0x3\n", "", 0, ""},
	{"6,2007,6000000006,-;usb 1-1: new high-speed USB device number 2 using xhci_hcd\n", "", 0, ""},
	{"3,2008,6000000100,-;amdgpu 0000:03:00.0: amdgpu: [mmhub0] no-retry page fault (src_id:0 ring:0 vmid:1 pasid:32770, for process  pid 0 thread  pid 0)\n", KindAMDFault, 0, "0000:03:00"},
	{"3,2009,6000000200,-;[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236\n", KindAMDTimeout, 0, ""},
	{"4,2010,6000000300,-;amdgpu 0000:03:00.0: amdgpu: GPU reset begin!\n", KindAMDReset, 0, "0000:03:00"},
	{"4,2011,6000000400,-;amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!\n", KindAMDReset, 0, "0000:03:00"},
	{"3,2012,6000000500,-;amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000e address=0x7f12340000 flags=0x0020]\n", KindIOMMUFault, 0, "0000:03:00"},
	{"3,2013,6000000600,-;AMD-Vi: Event logged [IO_PAGE_FAULT device=03:00.0 domain=0x000e address=0x7f12340000 flags=0x0020]\n", KindIOMMUFault, 0, ""},
	{"3,2014,6000000700,-;DMAR: DRHD: handling fault status reg 2\n", KindIOMMUFault, 0, ""},
	{"3,2015,6000000701,-;DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x7f000000 [fault reason 0x06] PTE Read access is not set\n", KindIOMMUFault, 0, ""},
	{"4,2016,6000000800,-;kfd kfd: amdgpu: Allocated 3969056 bytes on gart\n", KindKFD, 0, ""},
	{"6,2017,6000000900,-;p2patomics: case cuda.vmm.counter.add_u64_relaxed_sys begin\n", "", 0, ""},
}

func TestParseAndClassify(t *testing.T) {
	for _, s := range samples {
		l, err := ParseRecord([]byte(s.rec))
		if err != nil {
			t.Fatalf("ParseRecord(%q): %v", s.rec, err)
		}
		if strings.Contains(l.Text, "\n") || strings.Contains(l.Text, "SUBSYSTEM=") {
			t.Errorf("continuation lines leaked into %q", l.Text)
		}
		kind, xid := Classify(l)
		if kind != s.kind || xid != s.xid {
			t.Errorf("Classify(%q) = %q, %d; want %q, %d", l.Text, kind, xid, s.kind, s.xid)
		}
		if s.pci != "" && PCI(l) != s.pci {
			t.Errorf("PCI(%q) = %q, want %q", l.Text, PCI(l), s.pci)
		}
	}
	l, _ := ParseRecord([]byte(samples[0].rec))
	if l.Seq != 1001 || l.Usec != 5123456789 || l.Prio != 3 {
		t.Errorf("header fields: %+v", l)
	}
	if got := l.String(); got != "[ 5123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=2412, name=specs.test, GPU has fallen off the bus." {
		t.Errorf("String = %q", got)
	}
}

func TestParseRecordEdgeCases(t *testing.T) {
	// Facility user (1) level 4 is prio 12; the kernel escapes '\' and
	// control bytes; extra header fields are allowed.
	l, err := ParseRecord([]byte(`12,77,1000001,c,extra;a\x5cb\x09c` + "\n"))
	if err != nil || l.Prio != 4 || l.Seq != 77 || l.Usec != 1000001 || l.Text != `a\b\x09c` {
		t.Fatalf("got %+v, %v", l, err)
	}
	for _, bad := range []string{"", "no semicolon", "x,1,2,-;m", "6,1;m"} {
		if _, err := ParseRecord([]byte(bad)); err == nil {
			t.Errorf("ParseRecord(%q) accepted", bad)
		}
	}
}

func TestFilterKeepsFaultDetail(t *testing.T) {
	var lines []Line
	for _, s := range samples {
		l, _ := ParseRecord([]byte(s.rec))
		lines = append(lines, l)
	}
	got := Filter(lines)
	var seqs []string
	for _, l := range got {
		seqs = append(seqs, fmt.Sprint(l.Seq))
	}
	want := "1001 1002 1003 1004 1005 1006 1007 1008 1009 2001 2002 2003 2004 2005 2006 2008 2009 2010 2011 2012 2013 2014 2015 2016"
	if s := strings.Join(seqs, " "); s != want {
		t.Errorf("Filter kept %s\nwant        %s", s, want)
	}
}

func TestOpenNoAccess(t *testing.T) {
	_, err := OpenPath("/nonexistent/kmsg")
	if !errors.Is(err, ErrNoAccess) {
		t.Fatalf("err = %v, want ErrNoAccess", err)
	}
}

// TestRealKmsg writes a marker into the kernel log and reads it back
// through Since and Filter. Writing needs root; reading needs access.
func TestRealKmsg(t *testing.T) {
	r, write := openRealKmsg(t)
	before := fmt.Sprintf("before-%d-%d", os.Getpid(), time.Now().UnixNano())
	write(before)
	if err := r.Mark(); err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	write(token)
	found := readBack(t, r, before, token)
	if k, x := Classify(*found); k != KindXid || x != 79 || found.Prio != 4 {
		t.Errorf("marker classified %q %d prio %d", k, x, found.Prio)
	}
	// Since is repeatable until the next Mark; Mark forgets.
	again, _ := r.Since()
	if !strings.Contains(fmt.Sprint(again), token) {
		t.Error("second Since lost the marker")
	}
	r.Mark()
	if after, _ := r.Since(); strings.Contains(fmt.Sprint(after), token) {
		t.Error("Mark did not forget the marker")
	}
	t.Logf("read back: %v", found)
}

// openRealKmsg opens the machine's kernel log for reading (required in CI)
// and returns a writer of marker lines shaped as an Xid (skips without root).
func openRealKmsg(t *testing.T) (*Reader, func(token string)) {
	t.Helper()
	r, err := Open()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v", err)
	}
	t.Cleanup(func() { r.Close() })
	w, err := os.OpenFile(Path, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot write the kernel log: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return r, func(token string) {
		t.Helper()
		if _, err := fmt.Fprintf(w, "<4>p2patomics-test: marker %s NVRM: Xid (PCI:0000:00:00): 79, test\n", token); err != nil {
			t.Skipf("cannot write the kernel log: %v", err)
		}
	}
}

// readBack polls Since until the token's line appears (the kernel may take a
// moment to publish it), failing on any line from before the Mark.
func readBack(t *testing.T, r *Reader, before, token string) *Line {
	t.Helper()
	for try := 0; try < 50; try++ {
		lines, err := r.Since()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Filter(lines) {
			if strings.Contains(l.Text, before) {
				t.Fatalf("line from before Mark returned: %v", l)
			}
			if strings.Contains(l.Text, token) {
				return &l
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("marker not read back")
	return nil
}

func BenchmarkClassify(b *testing.B) {
	var lines []Line
	for _, s := range samples {
		l, _ := ParseRecord([]byte(s.rec))
		lines = append(lines, l)
	}
	for b.Loop() {
		Filter(lines)
	}
}

// BenchmarkFilterNoise is the common case: lines that are not GPU-related.
func BenchmarkFilterNoise(b *testing.B) {
	ls := make([]Line, 1000)
	for i := range ls {
		ls[i] = Line{Seq: uint64(i), Text: "usb 1-1: new high-speed USB device number 2 using xhci_hcd"}
	}
	for b.Loop() {
		Filter(ls)
	}
}

// TestPid: each vendor's way of naming the process, on lines shaped as the
// drivers print them (samples above, and the older amdgpu one-line form).
func TestPid(t *testing.T) {
	cases := []struct {
		text string
		pid  int
	}{
		{"NVRM: Xid (PCI:0000:18:00): 31, pid=3321, name=p2patomics-rank, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2e_b6000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE", 3321},
		{"NVRM: Xid (PCI:0000:06:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected", 0},
		{"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", 0},
		{"amdgpu 0000:c3:00.0: amdgpu:  Process p2patomics-rank pid 4242 thread p2patomics-rank pid 4243)", 4242},
		{"amdgpu 0000:03:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32769, for process p2patomics-rank pid 5150 thread p2patomics-rank pid 5151)", 5150},
		{"amdgpu 0000:03:00.0: amdgpu: [mmhub0] no-retry page fault (src_id:0 ring:0 vmid:1 pasid:32770, for process  pid 0 thread  pid 0)", 0},
		{"amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32769)", 0},
		{"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process p2patomics-rank pid 777 thread p2patomics-rank pid 778", 777},
		{"amdgpu: kfd: process pid:6060 (pasid 0x8001) VM fault on address 0x7f0000000000", 6060},
	}
	for _, c := range cases {
		if got := Pid(Line{Text: c.text}); got != c.pid {
			t.Errorf("Pid(%q) = %d, want %d", c.text, got, c.pid)
		}
	}
}

// TestEventsTakeTheDetailLinesPid: newer amdgpu names the process only on
// the line after the fault; the event carries it.
func TestEventsTakeTheDetailLinesPid(t *testing.T) {
	var lines []Line
	for _, s := range samples {
		l, _ := ParseRecord([]byte(s.rec))
		lines = append(lines, l)
	}
	var got []string
	for _, e := range Events(lines) {
		got = append(got, fmt.Sprintf("%d:%s/%d/%d", e.Lines[0].Seq, e.Kind, len(e.Lines), e.Pid))
	}
	want := "1001:xid/1/2412 1002:xid/1/3321 1003:xid/1/3321 1004:xid/1/901 1005:xid/1/0 1006:xid/1/5512 1007:xid/1/0 1008:xid/1/1 1009:nvrm/1/0 " +
		"2001:amdgpu-fault/6/4242 2008:amdgpu-fault/1/0 2009:amdgpu-timeout/1/0 2010:amdgpu-reset/1/0 2011:amdgpu-reset/1/0 2012:iommu-fault/1/0 2013:iommu-fault/1/0 2014:iommu-fault/1/0 2015:iommu-fault/1/0 2016:kfd/1/0"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("Events:\n got %s\nwant %s", s, want)
	}
}

// TestOpenPathReadsAFileOfRecords: a regular file of /dev/kmsg records
// (what tests plant lines in) is read record by record, from the end at
// Open, a record cut by a read kept until it is whole.
func TestOpenPathReadsAFileOfRecords(t *testing.T) {
	path := t.TempDir() + "/kmsg"
	if err := os.WriteFile(path, []byte(samples[0].rec), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	rec := samples[1].rec + samples[10].rec // an Xid, then an amdgpu fault with dictionary lines
	f.WriteString(rec[:40])
	if got, _ := r.Since(); len(got) != 0 {
		t.Fatalf("a record before Open, or half a record, read: %v", got)
	}
	f.WriteString(rec[40:])
	got, _ := r.Since()
	if len(got) != 2 || got[0].Seq != 1002 || got[1].Seq != 2001 {
		t.Fatalf("read %v, want records 1002 and 2001", got)
	}
}
