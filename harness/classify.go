package harness

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"p2patomics/harness/backends"
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
)

// ParseFault finds a GPU fault signature in a rank's stderr: the rank's own
// line (device.Fault.Line) first, else a line its backend's runtime printed
// (each backend's FaultParsers, harness/backends).
func ParseFault(stderr string) *report.Fault {
	if f := device.ParseLine(stderr); f != nil {
		return f
	}
	return backends.ParseFault(stderr)
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
