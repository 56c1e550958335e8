package hsa

import (
	"os"
	"strings"
	"testing"
	"unsafe"
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
// runtime would call and checks the recorded fault and the stderr line.
func TestEventHandler(t *testing.T) {
	r, w, _ := os.Pipe()
	old := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = old }()
	nodeMu.Lock()
	nodeOf[0xabc] = 6
	nodeMu.Unlock()
	faultSlot.Store(nil)
	defer faultSlot.Store(nil)

	ev := event{EventType: eventMemoryFault, Agent: 0xabc, Address: 0x7f1234560000, ReasonMask: faultReadOnly}
	if st := onSystemEvent(uintptr(unsafe.Pointer(&ev)), 0); st != statusSuccess {
		t.Fatalf("status %#x", st)
	}
	w.Close()
	buf := make([]byte, 512)
	n, _ := r.Read(buf)
	line := string(buf[:n])
	want := "p2patomics: gpu fault: vendor=amd node=6 address=0x7f1234560000 reason=Write access to a read-only page\n"
	if line != want {
		t.Fatalf("stderr %q\nwant   %q", line, want)
	}
	f := takeFault()
	if f == nil || f.Vendor != "amd" || f.Kind != "gpu" || f.Node != "6" || f.Address != "0x7f1234560000" || f.Code != faultReadOnly {
		t.Fatalf("fault %+v", f)
	}
	// Non-fault events are left alone.
	faultSlot.Store(nil)
	ev.EventType = eventHWException
	onSystemEvent(uintptr(unsafe.Pointer(&ev)), 0)
	if takeFault() != nil {
		t.Fatal("hw exception recorded as memory fault")
	}
}
