package device

import (
	"strings"
	"testing"
)

// TestFaultLineRoundTrip: whatever a backend puts in a fault (quotes,
// newlines, equals signs, empty fields) comes back from its stderr line
// unchanged, the line is one line, and the last line wins.
func TestFaultLineRoundTrip(t *testing.T) {
	faults := []Fault{
		{Vendor: "nvidia", Kind: "gpu", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Reason: "cuStreamSynchronize: an illegal memory access"},
		{Vendor: "amd", Kind: "gpu", Code: 2, Name: "HSA_AMD_GPU_MEMORY_FAULT_EVENT", Node: "6", Address: "0x7f1234560000", Reason: "Write access to a read-only page"},
		{Vendor: "x", Kind: "gpu", Code: -1, Name: "has space", Address: "a=b", Reason: "quote \" backslash \\ newline\nand tab\t"},
		{},
	}
	for _, f := range faults {
		line := f.Line()
		if strings.Contains(line, "\n") || !strings.HasPrefix(line, FaultPrefix) {
			t.Fatalf("%+v: line %q is not one prefixed line", f, line)
		}
		stderr := "earlier noise\n" + line + "\nSIGABRT: abort\n"
		got := ParseLine(stderr)
		if got == nil || *got != f {
			t.Errorf("ParseLine(Line(%+v)) = %+v", f, got)
		}
	}
	two := faults[0].Line() + "\n" + faults[1].Line() + "\n"
	if got := ParseLine(two); got == nil || *got != faults[1] {
		t.Errorf("two lines: want the last, got %+v", got)
	}
	for _, bad := range []string{"", "no fault here", FaultPrefix + "vendor=nvidia", FaultPrefix + `{"code":"x"}`} {
		if got := ParseLine(bad); got != nil {
			t.Errorf("ParseLine(%q) = %+v, want nil", bad, got)
		}
	}
}

// TestCapsPeer: self is reachable, an unnamed peer is not (with a reason),
// a named one answers as reported.
func TestCapsPeer(t *testing.T) {
	c := Caps{Peers: AllPeers(1, 3, Yes("a"), No("b"))}
	if len(c.Peers) != 2 || c.Peers[0].Ordinal != 0 || c.Peers[1].Ordinal != 2 {
		t.Fatalf("AllPeers(1, 3) = %+v", c.Peers)
	}
	if p := c.Peer(1, 2); !p.Access.OK || p.Atomics.OK || p.Atomics.Reason != "b" {
		t.Errorf("peer 2: %+v", p)
	}
	if p := c.Peer(1, 1); !p.Access.OK || !p.Atomics.OK {
		t.Errorf("self: %+v", p)
	}
	if p := c.Peer(1, 5); p.Access.OK || !strings.Contains(p.Access.Reason, "device 1 reported nothing about device 5") {
		t.Errorf("unknown peer: %+v", p)
	}
}
