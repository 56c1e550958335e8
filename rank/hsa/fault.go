package hsa

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
)

// GPU memory faults. ROCr's default handler prints "Memory access fault by
// GPU node-N (Agent handle: …) on address 0x…. Reason: …." and calls
// std::abort() from its event thread (shared/reference/amd-rocm.md §2.11).
// A handler registered with hsa_amd_register_system_event_handler runs on
// that same runtime thread first: it records the fault in a package-level
// slot (Launch polls it and returns a *backend.Fault) and writes ONE line to
// stderr, in the form the parent parses, before anything else can happen.
// It returns SUCCESS, which suppresses ROCr's abort; the rank then reports
// the fault and exits (the faulting queue is unusable, so the fault is
// terminal for the rank either way). If the runtime aborts anyway, the line
// is already on stderr.

var (
	faultSlot atomic.Pointer[backend.Fault]
	nodeMu    sync.Mutex
	nodeOf    = map[uint64]uint32{} // agent handle -> KFD node, filled at Open

	eventCB     uintptr
	eventCBOnce sync.Once
)

// eventCallback returns the purego trampoline for the handler, created once
// per process (trampolines are never freed and limited in number).
func eventCallback() uintptr {
	eventCBOnce.Do(func() { eventCB = purego.NewCallback(onSystemEvent) })
	return eventCB
}

// onSystemEvent is hsa_amd_system_event_callback_t:
// hsa_status_t (*)(const hsa_amd_event_t* event, void* data).
func onSystemEvent(ev uintptr, _ uintptr) uintptr {
	if ev == 0 {
		return statusSuccess
	}
	e := (*event)(ptr(ev))
	if e.EventType != eventMemoryFault {
		return statusSuccess // HW exceptions, shutdown: leave to ROCr
	}
	nodeMu.Lock()
	node, ok := nodeOf[e.Agent]
	nodeMu.Unlock()
	nodeText := "?"
	if ok {
		nodeText = fmt.Sprint(node)
	}
	f := faultFromEvent(nodeText, e.Address, e.ReasonMask)
	faultSlot.CompareAndSwap(nil, f)
	os.Stderr.WriteString(faultLine(f))
	return statusSuccess
}

// faultFromEvent builds the Fault the rank reports.
func faultFromEvent(node string, addr uint64, mask uint32) *backend.Fault {
	return &backend.Fault{
		Vendor:  "amd",
		Kind:    "gpu",
		Code:    int64(mask),
		Name:    "HSA_AMD_GPU_MEMORY_FAULT_EVENT",
		Node:    node,
		Address: fmt.Sprintf("0x%x", addr),
		Reason:  reasonText(mask),
	}
}

// faultLine is the one stderr line: p2patomics: gpu fault: vendor=amd node=N
// address=0x... reason=<text>.
func faultLine(f *backend.Fault) string {
	return fmt.Sprintf("p2patomics: gpu fault: vendor=amd node=%s address=%s reason=%s\n", f.Node, f.Address, f.Reason)
}

var reasonBits = []struct {
	bit  uint32
	text string // ROCr's own wording (core/runtime/runtime.cpp)
}{
	{faultPageNotPresent, "Page not present or supervisor privilege"},
	{faultReadOnly, "Write access to a read-only page"},
	{faultNX, "Execute access to a page marked NX"},
	{faultHostOnly, "Host access only"},
	{faultDRAMECC, "DRAM ECC failure"},
	{faultImprecise, "Imprecise (may not be exact address)"},
	{faultSRAMECC, "SRAM ECC failure"},
	{faultHang, "Generic hang recovery"},
}

// reasonText joins the texts of every bit set in mask with "; ".
func reasonText(mask uint32) string {
	var parts []string
	for _, r := range reasonBits {
		if mask&r.bit != 0 {
			parts = append(parts, r.text)
			mask &^= r.bit
		}
	}
	if mask != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("Unknown (mask 0x%x)", mask))
	}
	return strings.Join(parts, "; ")
}

// takeFault returns the recorded fault, if any.
func takeFault() *backend.Fault { return faultSlot.Load() }

var _ = unsafe.Sizeof(event{})
