package harness

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// Death is how a rank ended, read from its wait status and stderr.
type Death struct {
	ExitCode   *int
	Signal     string // signal that killed it, e.g. SIGABRT
	GoDump     bool   // the Go runtime printed a crash or SIGQUIT dump
	DumpSignal string // the signal named on the dump's first line, e.g. SIGSEGV
	Panic      string // the panic message for a Go panic
	Fault      *report.Fault
	Summary    string
}

var (
	reDumpSig = regexp.MustCompile(`(?m)^(SIG[A-Z]+): (.*)$`)
	rePanic   = regexp.MustCompile(`(?m)^panic: (.*)$`)
	reFatal   = regexp.MustCompile(`(?m)^fatal error: (.*)$`)
	// ROCr's default VM-fault handler (ROCR runtime.cpp), before abort():
	// "… node-%u (Agent handle: %p) on address %p%s. Reason: %s." where %s
	// is "(may not be exact address)" for an imprecise fault, glibc prints
	// a NULL %p as "(nil)", and older ROCr omits the agent handle.
	reAMDFault = regexp.MustCompile(`Memory access fault by GPU node-(\d+)(?: \(Agent handle: (0x[0-9a-fA-F]+|\(nil\))\))? on address (0x[0-9a-fA-F]+|\(nil\))( ?\(may not be exact address\))?\. Reason: ([^\n]*?)\.?\s*$`)
	// ROCr's other abort lines (core/runtime/runtime.cpp): a HW exception
	// with no handler that returned SUCCESS, and a memory error event.
	reAMDHWException = regexp.MustCompile(`HW Exception by GPU node-(\d+)(?: \(Agent handle: (?:0x[0-9a-fA-F]+|\(nil\))\))? reason ?: ?([^\n]*?)\s*$`)
	reAMDMemCritical = regexp.MustCompile(`Memory critical error by agent node-(\d+)(?: \(Agent handle: (?:0x[0-9a-fA-F]+|\(nil\))\))?(?: on address (0x[0-9a-fA-F]+|\(nil\)))?\. Reason: ([^\n]*?)\.?\s*$`)
	// CLR's queue error callback (rocclr/device/rocm/rocvirtual.cpp and
	// rocdevice.cpp): every aperture violation, illegal instruction and
	// queue exception a HIP rank meets. CLR prints no node; the queue is
	// kept in the reason.
	reCLRQueue = regexp.MustCompile(`Callback: Queue (0x[0-9a-fA-F]+|\(nil\)) aborting with error : (HSA_STATUS_[A-Z_]+): ?([^\n]*?)\s*code: 0x([0-9a-fA-F]+)`)
	// CUDA sticky errors as a Go error string names them.
	reCUDASticky = regexp.MustCompile(`CUDA_ERROR_(ILLEGAL_ADDRESS|LAUNCH_FAILED|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE|INVALID_PC|HARDWARE_STACK_ERROR)\b(?:\D*\((\d+)\))?`)
)

// ParseFault finds a GPU fault signature in a rank's stderr.
func ParseFault(stderr string) *report.Fault {
	if f := device.ParseLine(stderr); f != nil {
		return f // the rank's own line (device.Fault.Line)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if m := reAMDFault.FindStringSubmatch(line); m != nil {
			reason := m[5]
			if m[4] != "" {
				reason += " (may not be exact address)"
			}
			return &report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-access-fault", Node: m[1], Address: m[3], Reason: reason}
		}
		if m := reAMDHWException.FindStringSubmatch(line); m != nil {
			return &report.Fault{Vendor: "amd", Kind: "gpu", Name: "hw-exception", Node: m[1], Reason: m[2]}
		}
		if m := reAMDMemCritical.FindStringSubmatch(line); m != nil {
			return &report.Fault{Vendor: "amd", Kind: "gpu", Name: "memory-critical-error", Node: m[1], Address: m[2], Reason: m[3]}
		}
		if m := reCLRQueue.FindStringSubmatch(line); m != nil {
			code, _ := strconv.ParseInt(m[4], 16, 64)
			return &report.Fault{Vendor: "amd", Kind: "gpu", Code: code, Name: m[2], Reason: strings.TrimSuffix(m[3], ".") + " (queue " + m[1] + ")"}
		}
	}
	if m := reCUDASticky.FindStringSubmatch(stderr); m != nil {
		code, _ := strconv.ParseInt(m[2], 10, 64)
		return &report.Fault{Vendor: "nvidia", Kind: "gpu", Code: code, Name: "CUDA_ERROR_" + m[1]}
	}
	return nil
}

// Classify reads a reaped rank's ending.
func Classify(p *Proc) Death {
	var d Death
	stderr := p.Stderr.String()
	st := p.State()
	if st != nil {
		ws := st.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			d.Signal = SignalName(ws.Signal())
		case ws.Exited():
			c := ws.ExitStatus()
			d.ExitCode = &c
		}
	}
	if m := reDumpSig.FindStringSubmatch(stderr); m != nil {
		d.GoDump, d.DumpSignal = true, m[1]
	}
	if m := rePanic.FindStringSubmatch(stderr); m != nil {
		d.GoDump, d.Panic = true, m[1]
	}
	if strings.Contains(stderr, "goroutine ") && (strings.Contains(stderr, "[running]") || strings.Contains(stderr, "gp=")) {
		d.GoDump = true
	}
	d.Fault = ParseFault(stderr)
	var parts []string
	switch {
	case st == nil:
		parts = append(parts, fmt.Sprintf("rank %d (pid %d) still running", p.Rank, p.Pid))
	case d.Signal != "":
		parts = append(parts, fmt.Sprintf("rank %d (pid %d) killed by %s", p.Rank, p.Pid, d.Signal))
	case d.ExitCode != nil:
		parts = append(parts, fmt.Sprintf("rank %d (pid %d) exited with status %d", p.Rank, p.Pid, *d.ExitCode))
	}
	switch {
	case d.Panic != "":
		parts = append(parts, "Go panic: "+d.Panic)
	case d.DumpSignal != "":
		line := reDumpSig.FindStringSubmatch(stderr)
		parts = append(parts, fmt.Sprintf("Go fault dump: %s: %s", line[1], line[2]))
		if strings.Contains(stderr, "signal arrived during cgo execution") || strings.Contains(stderr, "signal arrived during external code execution") {
			parts = append(parts, "in C code called through purego")
		}
	}
	if m := reFatal.FindStringSubmatch(stderr); m != nil {
		parts = append(parts, "fatal error: "+m[1])
	}
	if d.Fault != nil {
		parts = append(parts, fmt.Sprintf("GPU fault %s/%s %s", d.Fault.Vendor, d.Fault.Name, d.Fault.Address))
	}
	d.Summary = strings.Join(parts, "; ")
	return d
}

// SignalName names any signal the way the kernel headers do (SIGHUP,
// not "signal 1"); a number only for one without a name.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
