package harness

import (
	"strings"
	"testing"
)

func TestNeedPeer(t *testing.T) {
	info := func(peer string, atomic string) map[string]any {
		return map[string]any{"vendor": "nvidia", "attrs": map[string]any{
			"peer." + peer + ".can_access": "1", "peer." + peer + ".access_supported": "1", "peer." + peer + ".native_atomic": atomic}}
	}
	mk := func(i0, i1 map[string]any, d0, d1 int) *Ctx {
		return &Ctx{W: &World{Infos: []map[string]any{i0, i1}, Procs: []*Proc{{Device: d0}, {Device: d1}}}}
	}
	if err := mk(info("1", "1"), info("0", "1"), 0, 1).NeedPeer(true); err != nil {
		t.Fatalf("all attributes 1: %v", err)
	}
	err := mk(info("1", "0"), info("0", "1"), 0, 1).NeedPeer(true)
	if se, ok := err.(*SkipError); !ok || !strings.Contains(se.Reason, "CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED") {
		t.Fatalf("native atomics 0 must skip naming the attribute, got %v", err)
	}
	if err := mk(info("1", "0"), info("0", "1"), 0, 1).NeedPeer(false); err != nil {
		t.Fatalf("no atomics needed: %v", err)
	}
	noPeer := map[string]any{"vendor": "nvidia", "attrs": map[string]any{}}
	if err := mk(noPeer, noPeer, 0, 1).NeedPeer(false); err == nil || !strings.Contains(err.Error(), "cuDeviceCanAccessPeer") {
		t.Fatalf("missing peer access must skip naming cuDeviceCanAccessPeer, got %v", err)
	}
	if err := mk(noPeer, noPeer, 0, 0).NeedPeer(true); err != nil {
		t.Fatalf("ranks on one device need nothing: %v", err)
	}
	host := map[string]any{"vendor": "host"}
	if err := mk(host, host, 0, 1).NeedPeer(true); err != nil {
		t.Fatalf("host: %v", err)
	}
}
