package hip

import (
	"testing"
	"unsafe"
)

// TestWriteWaitsForTheDevice: hipMemcpyHtoD from pageable memory may return
// once the bytes are staged, before the DMA lands (docs/SYNC.md); a Write
// must not reply until the device has done it. The fake stages the copy
// and lands it only at hipDeviceSynchronize, as a driver is allowed to: a
// Write that replies without waiting leaves the bytes unlanded.
func TestWriteWaitsForTheDevice(t *testing.T) {
	dev := make([]byte, 64)
	var staged []byte
	l := fakeLib(t, map[string]any{
		"hipMemcpyHtoD": func(dst uintptr, src unsafe.Pointer, n uint64) uint32 {
			staged = append([]byte(nil), unsafe.Slice((*byte)(src), n)...)
			return errSuccess
		},
		"hipDeviceSynchronize": func() uint32 {
			copy(dev, staged)
			staged = nil
			return errSuccess
		},
	})
	b := &Backend{l: l}
	if err := b.Write(&buffer{va: 0x1000, size: 64}, 0, []byte("landed")); err != nil {
		t.Fatal(err)
	}
	if string(dev[:6]) != "landed" || staged != nil {
		t.Errorf("Write replied with the copy still staged (device holds %q): it must wait for the device", dev[:6])
	}
}
