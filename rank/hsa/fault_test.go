package hsa

import (
	"strings"
	"testing"
	"unsafe"

	"p2patomics/harness"
)

func TestReasonText(t *testing.T) {
	if r := reasonText(faultReadOnly); r != "Write access to a read-only page" {
		t.Fatal(r)
	}
	if r := reasonText(faultPageNotPresent | faultImprecise); !strings.HasPrefix(r, "Page not present or supervisor privilege; Imprecise") {
		t.Fatal(r)
	}
	if r := reasonText(0); !strings.HasPrefix(r, "Unknown") {
		t.Fatal(r)
	}
}

// TestEventHandler feeds a hand-built hsa_amd_event_t to the handler the
// runtime would call and checks the recorded fault and the stderr line,
// which the parent's parser reads back whole, node included.
func TestEventHandler(t *testing.T) {
	read := quietStderr(t)
	nodeMu.Lock()
	nodeOf[0xabc] = 6
	nodeMu.Unlock()
	faultSlot.Store(nil)
	defer faultSlot.Store(nil)

	ev := event{EventType: eventMemoryFault, Agent: 0xabc, Address: 0x7f1234560000, ReasonMask: faultReadOnly}
	if st := onSystemEvent(uintptr(unsafe.Pointer(&ev)), 0); st != statusSuccess {
		t.Fatalf("status %#x", st)
	}
	line := read()
	f := takeFault()
	if f == nil || f.Vendor != "amd" || f.Kind != "gpu" || f.Node != "6" || f.Address != "0x7f1234560000" || f.Code != faultReadOnly {
		t.Fatalf("fault %+v", f)
	}
	p := harness.ParseFault(line)
	if p == nil || p.Vendor != "amd" || p.Node != "6" || p.Address != f.Address || p.Reason != f.Reason || p.Name != f.Name || p.Code != f.Code {
		t.Fatalf("the parent parses %q as %+v", line, p)
	}
}

// TestHWExceptionIsAFault (issue 17, defect 2): a HW exception (GPU hang,
// ECC reset) is recorded as a fault; an event the handler does not record
// gets a non-SUCCESS status, which leaves ROCr's own report and abort in
// place (SUCCESS would silence them and turn a hang into a timeout).
func TestHWExceptionIsAFault(t *testing.T) {
	read := quietStderr(t)
	nodeMu.Lock()
	nodeOf[0xdef] = 4
	nodeMu.Unlock()
	faultSlot.Store(nil)
	defer faultSlot.Store(nil)

	hw := hwExceptionEvent{EventType: eventHWException, Agent: 0xdef, ResetType: 1, ResetCause: hwCauseGPUHang}
	if st := onSystemEvent(uintptr(unsafe.Pointer(&hw)), 0); st != statusSuccess {
		t.Fatalf("HW exception: status %#x, want SUCCESS (recorded)", st)
	}
	f := takeFault()
	if f == nil || f.Name != "HSA_AMD_GPU_HW_EXCEPTION_EVENT" || f.Node != "4" || f.Code != hwCauseGPUHang || !strings.Contains(f.Reason, "GPU Hang") {
		t.Fatalf("HW exception recorded as %+v", f)
	}
	if p := harness.ParseFault(read()); p == nil || p.Name != f.Name || p.Node != "4" {
		t.Fatalf("HW exception line parsed as %+v", p)
	}
	faultSlot.Store(nil)
	for _, typ := range []uint32{eventMemoryError, 3, 99} {
		e := event{EventType: typ, Agent: 0xdef}
		if st := onSystemEvent(uintptr(unsafe.Pointer(&e)), 0); st == statusSuccess {
			t.Errorf("event type %d: SUCCESS silences ROCr's report and abort", typ)
		}
	}
	if f := takeFault(); f != nil {
		t.Errorf("unhandled events recorded %+v", f)
	}
	if r := faultFromHWException("1", 1, hwCauseECC|hwCauseGPUHang).Reason; r != "HW exception, reset type 0x1: GPU Hang; ECC" {
		t.Error(r)
	}
}
