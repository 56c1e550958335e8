package hsa

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"
)

// TestDispatchBytes checks the packet image byte for byte against the
// layout of hsa_kernel_dispatch_packet_t (ROCR inc/hsa.h), written out by hand.
func TestDispatchBytes(t *testing.T) {
	p, err := newDispatch(3, 256, 0x1122334455667788, 0x7f00deadbee0, 0xabcdef, 16, 1024)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x02, 0x14, // header 0x1402: KERNEL_DISPATCH, acquire+release system scope
		0x01, 0x00, // setup: 1 dimension
		0x00, 0x01, 0x01, 0x00, 0x01, 0x00, // workgroup 256,1,1
		0x00, 0x00, // reserved0
		0x00, 0x03, 0x00, 0x00, // grid_size_x = 768 work-items (3*256), not 3
		0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // grid y, z
		0x10, 0x00, 0x00, 0x00, // private 16
		0x00, 0x04, 0x00, 0x00, // group 1024
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // kernel_object
		0xe0, 0xbe, 0xad, 0xde, 0x00, 0x7f, 0x00, 0x00, // kernarg_address
		0, 0, 0, 0, 0, 0, 0, 0, // reserved2
		0xef, 0xcd, 0xab, 0, 0, 0, 0, 0, // completion_signal
	}
	got := p.bytes()
	if !bytes.Equal(got[:], want) {
		t.Fatalf("packet\n got %x\nwant %x", got, want)
	}
	// The Go struct's memory image is the same (it is what abi_test checks
	// against the header).
	if img := unsafe.Slice((*byte)(unsafe.Pointer(&p)), 64); !bytes.Equal(img, want) {
		t.Fatalf("struct image differs from wire image")
	}
	if dispatchHeader(true) != 0x1502 {
		t.Fatalf("barrier header %#x", dispatchHeader(true))
	}
}

func TestDispatchShapeErrors(t *testing.T) {
	for _, c := range []struct{ g, b uint32 }{{0, 64}, {1, 0}, {1, 2048}, {1 << 31, 1024}} {
		if _, err := newDispatch(c.g, c.b, 1, 1, 1, 0, 0); err == nil {
			t.Errorf("grid %d block %d: no error", c.g, c.b)
		}
	}
}

// TestPublishOrder writes into a fake ring slot holding an INVALID header
// and checks the body and header land, the header word as one store.
func TestPublishOrder(t *testing.T) {
	var ring [2][64]byte
	binary.LittleEndian.PutUint16(ring[1][:], packetTypeInvalid)
	p, _ := newDispatch(1, 64, 7, 8, 9, 0, 0)
	publish(unsafe.Pointer(&ring[1][0]), p)
	want := p.bytes()
	if ring[1] != want {
		t.Fatalf("slot %x want %x", ring[1], want)
	}
	if ring[0] != [64]byte{} {
		t.Fatal("neighbouring slot touched")
	}
}

// TestKernargs checks the explicit-argument layout (64-bit words in
// manifest order) and that hidden arguments are zero-filled.
func TestKernargs(t *testing.T) {
	seg := bytes.Repeat([]byte{0xff}, 5*8+256) // explicit + code object v5 hidden block
	if err := encodeKernargs(seg, []uint64{0x1000, 0x2000, 4096, 256, 1024}); err != nil {
		t.Fatal(err)
	}
	for i, w := range []uint64{0x1000, 0x2000, 4096, 256, 1024} {
		if g := binary.LittleEndian.Uint64(seg[i*8:]); g != w {
			t.Errorf("arg %d = %#x want %#x", i, g, w)
		}
	}
	if !bytes.Equal(seg[40:], make([]byte, 256)) {
		t.Error("hidden kernargs not zeroed")
	}
	if err := encodeKernargs(make([]byte, 8), []uint64{1, 2}); err == nil {
		t.Error("overflow not reported")
	}
}

func TestTargetArch(t *testing.T) {
	isa := "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
	if target(isa) != "gfx942:sramecc+:xnack-" || arch(isa) != "gfx942" {
		t.Fatalf("%q %q", target(isa), arch(isa))
	}
	if arch("amdgcn-amd-amdhsa--gfx1201") != "gfx1201" {
		t.Fatal(arch("amdgcn-amd-amdhsa--gfx1201"))
	}
}
