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
	// nothing on them: what it needs is in Caps.
	Attrs map[string]string `json:"attrs,omitempty"`
	Caps  Caps              `json:"caps"`
	// Rank is the rank that opened the device (set by the rank server,
	// not the backend).
	Rank int `json:"rank"`
}

// Caps are the backend's answers to the questions a case asks before it
// runs, the same shape for every vendor. Each answer carries its reason, so
// a skip names the attribute (and value) that decided it.
type Caps struct {
	// HostAtomics: GPU system-scope atomics on host memory are atomic with
	// the CPU's (CPU and GPU may add to one word).
	HostAtomics Cap `json:"host_atomics"`
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
