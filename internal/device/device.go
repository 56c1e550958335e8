// Package device holds what crosses the process line about a device: the
// facts and capabilities a rank reports in its hello reply, and the GPU
// fault a rank dies of. Both sides import it (the rank fills it in, the
// parent reads it), so neither re-spells the other's fields: the parent
// never decodes device facts into untyped maps nor parses vendor attribute
// names to answer a capability question.
package device

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Info describes a rank's device: what the report's environment records and
// what the parent needs to place ranks and skip cases.
type Info struct {
	Vendor string `json:"vendor"`
	Name   string `json:"name"`
	Arch   string `json:"arch"` // sm_90, gfx942, or GOARCH for host
	// UUID identifies the physical device: ranks whose UUIDs are equal share
	// one GPU (the parent's device locks and shared-GPU facts key on it).
	UUID     string `json:"uuid,omitempty"`
	Ordinal  int    `json:"ordinal"`
	Count    int    `json:"count"`  // devices visible to the rank
	MemBytes uint64 `json:"memory"` // total device memory
	Units    int    `json:"units"`  // SMs / CUs / CPUs: sizes grids
	Driver   string `json:"driver,omitempty"`
	Runtime  string `json:"runtime,omitempty"`
	// Attrs are raw vendor facts recorded for the report's reader (fault-
	// relevant settings, per-peer attribute values). The parent decides
	// nothing on them: what it needs is in Caps and Ceilings (a test in
	// this package fails on a parent package that reads Attrs).
	Attrs map[string]string `json:"attrs,omitempty"`
	Caps  Caps              `json:"caps"`
	// Ceilings are the physical bandwidth ceilings of the device's paths,
	// as the rank read them; zero where it read none (the host backend,
	// AMD), and omitted from results.json then.
	Ceilings Ceilings `json:"ceilings,omitzero"`
	// Rank is the rank that opened the device (set by the rank server,
	// not the backend).
	Rank int `json:"rank"`
	// Devices are every device the backend sees, in ordinal order, with
	// their architectures: the parent places ranks only on those with a
	// code object (Place). Empty where the backend has one device to offer
	// (host): ranks then go on device r mod Count.
	Devices []Visible `json:"devices,omitempty"`
	// LeftOut names the visible devices no rank went on, each with why
	// (set by the parent from Place, so results.json says it).
	LeftOut []string `json:"left_out,omitempty"`
}

// Caps are the backend's answers to the questions a case asks before it
// runs, the same shape for every vendor. Each answer carries its reason, so
// a skip names the attribute (and value) that decided it.
type Caps struct {
	// HostAtomics: GPU system-scope atomics on host memory are atomic with
	// the CPU's (CPU and GPU may add to one word).
	HostAtomics Cap `json:"host_atomics"`
	// MPS: this rank's context is a client of a running CUDA MPS server,
	// so kernels of ranks sharing the GPU are resident together (the suite
	// never starts or stops MPS). Zero (no reason) where the backend has no
	// such question to answer or could not read it: not known, never a no.
	MPS Cap `json:"mps,omitzero"`
	// Peers answers, per other device ordinal, whether this device can reach
	// that device's memory, and with system-scope atomics.
	Peers []Peer `json:"peers,omitempty"`
}

// Cap is one yes/no answer and why.
type Cap struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// Yes and No build answers.
func Yes(format string, a ...any) Cap { return Cap{true, fmt.Sprintf(format, a...)} }
func No(format string, a ...any) Cap  { return Cap{false, fmt.Sprintf(format, a...)} }

// Known reports whether the backend answered: Yes and No always carry a
// reason, so the zero Cap is a question nobody answered.
func (c Cap) Known() bool { return c.OK || c.Reason != "" }

// capNames answers a capability by its results.json name (its json tag):
// the name a case's needs= label gives (report.NeedsPrefix). One row per
// yes/no field of Caps; TestCapsNamedCoversEveryCap fails on a field
// without its row.
var capNames = map[string]func(Caps) Cap{
	CapHostAtomics: func(c Caps) Cap { return c.HostAtomics },
	CapMPS:         func(c Caps) Cap { return c.MPS },
}

// The names of the capabilities, as Named and needs= labels spell them.
const (
	CapHostAtomics = "host_atomics"
	CapMPS         = "mps"
)

// Named returns the capability called name (a json tag of Caps:
// "host_atomics", "mps"); ok is false for a name Caps has no field for.
func (c Caps) Named(name string) (cap Cap, ok bool) {
	f, ok := capNames[name]
	if !ok {
		return Cap{}, false
	}
	return f(c), true
}

// CapNames lists the names Named answers, sorted.
func CapNames() []string {
	var ns []string
	for n := range capNames {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Ceilings are a device's bandwidth capacities, the bound no copy across
// the resource can beat (harness CopyCeiling takes the smallest capacity /
// load over a copy's path). Each carries how it was read, so a metric's
// ceiling names its basis.
type Ceilings struct {
	// HBM is all the device memory's traffic, read plus write.
	HBM Bandwidth `json:"hbm,omitzero"`
	// NVLink is per direction, over every active link; zero with no
	// active link (the route between two GPUs is then PCIe).
	NVLink Bandwidth `json:"nvlink,omitzero"`
	// PCIe is per direction, the device's link at its maximum.
	PCIe Bandwidth `json:"pcie,omitzero"`
}

// Bandwidth is one capacity in GB/s (10^9 bytes/s) and how it was read;
// GBps 0 is not known.
type Bandwidth struct {
	GBps  float64 `json:"gbps"`
	Basis string  `json:"basis,omitempty"`
}

// Peer is what this device can do with the memory of device Ordinal.
type Peer struct {
	Ordinal int `json:"ordinal"`
	Access  Cap `json:"access"`
	Atomics Cap `json:"atomics"` // system-scope atomics over the link
}

// Peer returns the answer for device ordinal q. A device always reaches
// itself; a device the backend said nothing about is unreachable, with a
// reason that says so (a backend bug, never a silent pass).
func (c Caps) Peer(self, q int) Peer {
	if q == self {
		return Peer{Ordinal: q, Access: Yes("same device"), Atomics: Yes("same device")}
	}
	for _, p := range c.Peers {
		if p.Ordinal == q {
			return p
		}
	}
	no := No("device %d reported nothing about device %d", self, q)
	return Peer{Ordinal: q, Access: no, Atomics: no}
}

// AllPeers answers every ordinal in [0, count) other than self with the
// same answer: backends whose reach does not depend on the pair (host, one
// address space; AMD, whose pools decide access at allocation).
func AllPeers(self, count int, access, atomics Cap) []Peer {
	var ps []Peer
	for q := 0; q < count; q++ {
		if q != self {
			ps = append(ps, Peer{Ordinal: q, Access: access, Atomics: atomics})
		}
	}
	return ps
}

// Fault is a GPU fault or sticky device error: what a backend returns when
// the device context is no longer usable, what the rank's reply and stderr
// carry, and what the report records for the case's crash. One type from
// the backend to results.json.
type Fault struct {
	Vendor  string `json:"vendor"`
	Kind    string `json:"kind"` // "gpu"
	Code    int64  `json:"code"`
	Name    string `json:"name"`
	Node    string `json:"node,omitempty"`
	Address string `json:"address,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func (f *Fault) Error() string {
	s := fmt.Sprintf("%s gpu fault %s (%d)", f.Vendor, f.Name, f.Code)
	if f.Address != "" {
		s += " at " + f.Address
	}
	if f.Reason != "" {
		s += ": " + f.Reason
	}
	return s
}

// FaultPrefix starts the stderr line a rank prints before it exits on a
// fault, so the parent learns of the fault even when the reply is lost.
const FaultPrefix = "p2patomics: gpu fault: "

// Line formats f as the one stderr line ParseLine reads back: the prefix
// and the fault as JSON, which escapes newlines and quotes in a vendor's
// reason text, so the line is always one line and always parses.
func (f *Fault) Line() string {
	b, _ := json.Marshal(f) // strings and ints only: cannot fail
	return FaultPrefix + string(b)
}

// ParseLine finds the last fault line in text (a rank's stderr) and
// returns its fault; nil when there is none or it does not parse.
func ParseLine(text string) *Fault {
	i := strings.LastIndex(text, FaultPrefix)
	if i < 0 {
		return nil
	}
	rest := text[i+len(FaultPrefix):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	var f Fault
	if err := json.Unmarshal([]byte(rest), &f); err != nil {
		return nil
	}
	return &f
}
