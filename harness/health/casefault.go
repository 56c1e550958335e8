package health

import (
	"fmt"
	"regexp"
	"strings"

	"p2patomics/harness/kmsg"
	"p2patomics/internal/device"
)

// XidRule is how the suite charges one NVIDIA Xid to the case whose rank
// the kernel-log line names (or, for a line naming no process, the GPU case
// that ran when it was logged): Fails makes the case a crash carrying the
// fault; otherwise the line is only shown with the case (a warning).
type XidRule struct {
	Fails bool
	What  string
}

// XidCase is the one table of which Xids fail a case (docs/FAULTS.md,
// "Kernel-log faults: which fail a case", has the same table and why).
// Anchored to NVIDIA's Xid catalogue
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html):
// an Xid whose immediate action there is to restart the application (its
// context is gone) or to reset the GPU, logged for a rank, means the
// rank's work did not complete as the case believes, so the case fails.
// Xids that record bookkeeping or follow another error warn. An Xid not in
// the table warns: it is shown with the case and never fails it alone
// (XidUntrustworthy still stops the run for the ones that need a reset).
var XidCase = map[int]XidRule{
	8:   {true, "GPU stopped processing (channel idle timeout)"},
	13:  {true, "graphics engine exception (illegal address or instruction in a kernel)"},
	31:  {true, "GPU memory page fault (MMU fault)"},
	32:  {true, "invalid or corrupted push buffer stream"},
	43:  {true, "GPU stopped processing: the channel was reset after the application's fault"},
	45:  {false, "preemptive cleanup: logged when a process is killed with work in flight, or after an earlier error, which is the one charged"},
	48:  {true, "uncorrectable ECC (double-bit) error"},
	61:  {false, "internal micro-controller breakpoint/warning (machine health stops the run)"},
	62:  {true, "internal micro-controller halt"},
	63:  {false, "ECC page retirement or row remap recorded (takes effect at the next reset)"},
	64:  {false, "ECC page retirement or row remap failure (machine health stops the run)"},
	69:  {true, "graphics engine class error"},
	74:  {true, "NVLink error"},
	79:  {true, "GPU has fallen off the bus"},
	92:  {false, "high single-bit ECC error rate (corrected)"},
	94:  {true, "contained uncorrectable ECC error: the process that touched the memory was stopped"},
	95:  {true, "uncontained uncorrectable ECC error"},
	109: {true, "context switch timeout"},
	119: {true, "GSP RPC timeout"},
	120: {true, "GSP error"},
	140: {true, "unrecovered ECC error"},
}

var reFaultAddr = regexp.MustCompile(`(?:faulted @ |starting at address |address[= ])(0x[0-9a-fA-F_]+)`)

// CaseFault is the fault a kernel-log event charges to its case, nil when
// the event only warns. Failing: an Xid XidCase says fails, an amdgpu VM
// fault, ring timeout or reset, a kfd line that reports a fault or an
// exception, an IOMMU fault, and NVRM's "fallen off the bus".
func CaseFault(e kmsg.Event) *device.Fault {
	if len(e.Lines) == 0 {
		return nil
	}
	text := e.Lines[0].Text
	f := &device.Fault{Kind: "gpu", Node: kmsg.PCI(e.Lines[0]), Reason: "kernel log: " + text}
	for _, l := range e.Lines {
		if m := reFaultAddr.FindStringSubmatch(l.Text); m != nil && f.Address == "" {
			f.Address = strings.ReplaceAll(m[1], "_", "")
		}
	}
	switch e.Kind {
	case kmsg.KindXid:
		rule, ok := XidCase[e.Xid]
		if !ok || !rule.Fails {
			return nil
		}
		f.Vendor, f.Code, f.Name = "nvidia", int64(e.Xid), fmt.Sprintf("Xid %d", e.Xid)
		f.Reason = rule.What + "; " + f.Reason
	case kmsg.KindNVRM:
		if !strings.Contains(text, "fallen off the bus") {
			return nil
		}
		f.Vendor, f.Name = "nvidia", "GPU fallen off the bus"
	case kmsg.KindAMDFault:
		f.Vendor, f.Name = "amd", "amdgpu VM page fault"
	case kmsg.KindAMDTimeout:
		f.Vendor, f.Name = "amd", "amdgpu ring timeout"
	case kmsg.KindAMDReset:
		f.Vendor, f.Name = "amd", "amdgpu GPU reset"
	case kmsg.KindKFD:
		if t := strings.ToLower(text); !strings.Contains(t, "fault") && !strings.Contains(t, "exception") {
			return nil
		}
		f.Vendor, f.Name = "amd", "kfd fault"
	case kmsg.KindIOMMUFault:
		f.Vendor, f.Name = "iommu", "IOMMU fault"
	default:
		return nil
	}
	return f
}
