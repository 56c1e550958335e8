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

// GPU faults. ROCr's default handlers print "Memory access fault by GPU
// node-N (Agent handle: …) on address 0x…. Reason: …." or "HW Exception by
// GPU node-N (Agent handle: …) reason :GPU Hang" and call std::abort() from
// the runtime's event thread, but only when no handler registered with
// hsa_amd_register_system_event_handler returned SUCCESS for the event
// (ROCr core/runtime/runtime.cpp, VMFaultHandler and HwExceptionHandler).
// Returning SUCCESS therefore does not "leave the event to ROCr": it
// silences ROCr. So the handler returns SUCCESS only for the events it
// records (memory faults and HW exceptions: a GPU hang or reset, an ECC
// error) and a non-SUCCESS status for every other one, which ROCr then
// reports and aborts on as it would without us.
//
// A recorded event goes into a package-level slot (Launch and wait poll it
// and return a *backend.Fault) and ONE line goes to stderr, in the form the
// parent parses, before anything else can happen. The faulting queue is
// unusable, so the fault is terminal for the rank either way; if the
// runtime aborts anyway, the line is already on stderr.
//
// Queue errors (an aperture violation, an illegal instruction, an invalid
// packet) arrive through the callback given to hsa_queue_create instead:
// onQueueError records them the same way. Without it ROCr's default queue
// handler prints "Queue at … inactivated due to async error" and aborts.

var (
	faultSlot atomic.Pointer[backend.Fault]
	nodeMu    sync.Mutex
	nodeOf    = map[uint64]uint32{} // agent handle -> KFD node, filled at Open

	eventCB     uintptr
	eventCBOnce sync.Once
	queueCB     uintptr
	queueCBOnce sync.Once
)

// eventCallback returns the purego trampoline for the handler, created once
// per process (trampolines are never freed and limited in number).
func eventCallback() uintptr {
	eventCBOnce.Do(func() { eventCB = purego.NewCallback(onSystemEvent) })
	return eventCB
}

// queueCallback returns the trampoline for onQueueError, created once.
func queueCallback() uintptr {
	queueCBOnce.Do(func() { queueCB = purego.NewCallback(onQueueError) })
	return queueCB
}

// nodeText is the KFD node of an agent handle, "?" if Open did not see it.
func nodeText(agent uint64) string {
	nodeMu.Lock()
	node, ok := nodeOf[agent]
	nodeMu.Unlock()
	if !ok {
		return "?"
	}
	return fmt.Sprint(node)
}

// onSystemEvent is hsa_amd_system_event_callback_t:
// hsa_status_t (*)(const hsa_amd_event_t* event, void* data).
func onSystemEvent(ev uintptr, _ uintptr) uintptr {
	if ev == 0 {
		return statusError
	}
	e := (*event)(ptr(ev))
	var f *backend.Fault
	switch e.EventType {
	case eventMemoryFault:
		f = faultFromEvent(nodeText(e.Agent), e.Address, e.ReasonMask)
	case eventHWException:
		hw := (*hwExceptionEvent)(ptr(ev))
		f = faultFromHWException(nodeText(hw.Agent), hw.ResetType, hw.ResetCause)
	default:
		// A memory error, a shutdown, an event newer than this code: ROCr's
		// own handling (a message, and abort where it aborts) stays.
		return statusError
	}
	record(f)
	return statusSuccess
}

// onQueueError is hsa_queue_create's callback:
// void (*)(hsa_status_t status, hsa_queue_t* source, void* data).
func onQueueError(st uint32, _ uintptr, _ uintptr) {
	record(&backend.Fault{
		Vendor: "amd",
		Kind:   "gpu",
		Code:   int64(st),
		Name:   statusName(st),
		Reason: "queue error: " + queueErrorText(st),
	})
}

// queueErrorText words the statuses ROCr passes to a queue's callback.
func queueErrorText(st uint32) string {
	switch st {
	case statusErrorMemoryApertureViolation:
		return "memory aperture violation"
	case statusErrorIllegalInstruction:
		return "illegal instruction"
	case statusErrorMemoryFault:
		return "memory fault"
	case statusErrorInvalidPacketFormat:
		return "invalid packet format"
	case statusErrorOutOfRegisters:
		return "out of registers"
	}
	return statusName(st)
}

// record keeps the first fault and writes its stderr line.
func record(f *backend.Fault) {
	faultSlot.CompareAndSwap(nil, f)
	os.Stderr.WriteString(faultLine(f))
}

// faultFromEvent builds the Fault the rank reports for a memory fault.
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

// faultFromHWException builds the Fault for a HW exception: the GPU hung
// and was reset, or an ECC error reset it (ROCr's wording: "GPU Hang",
// "ECC").
func faultFromHWException(node string, resetType, cause uint32) *backend.Fault {
	var parts []string
	if cause&hwCauseGPUHang != 0 {
		parts = append(parts, "GPU Hang")
	}
	if cause&hwCauseECC != 0 {
		parts = append(parts, "ECC")
	}
	if rest := cause &^ (hwCauseGPUHang | hwCauseECC); rest != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("Unknown (cause 0x%x)", rest))
	}
	return &backend.Fault{
		Vendor: "amd",
		Kind:   "gpu",
		Code:   int64(cause),
		Name:   "HSA_AMD_GPU_HW_EXCEPTION_EVENT",
		Node:   node,
		Reason: fmt.Sprintf("HW exception, reset type 0x%x: %s", resetType, strings.Join(parts, "; ")),
	}
}

// faultLine is the one stderr line, in the form every rank prints and the
// parent parses (device.Fault.Line).
func faultLine(f *backend.Fault) string { return f.Line() + "\n" }

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
