package hsa

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// AQL kernel dispatch packets (hsa_kernel_dispatch_packet_t in ROCR's
// inc/hsa.h; the HSA runtime spec's AQL chapter). The
// encoder is pure Go so it is unit-tested byte for byte without a GPU.

// dispatchHeader is the 16-bit header of a kernel dispatch packet with
// system-scope acquire and release fences (0x1402; 0x1502 with barrier).
func dispatchHeader(barrier bool) uint16 {
	h := uint16(packetTypeKernelDispatch) << packetHeaderType
	if barrier {
		h |= 1 << packetHeaderBarrier
	}
	h |= fenceScopeSystem << packetHeaderAcquireScope
	h |= fenceScopeSystem << packetHeaderReleaseScope
	return h
}

// newDispatch builds a 1-D packet. grid is the number of workgroups and
// block the workgroup size; AQL grid sizes are in WORK-ITEMS (grid*block).
func newDispatch(grid, block uint32, kernelObject, kernarg, completion uint64, private, group uint32) (dispatchPacket, error) {
	if block == 0 || block > 1024 || grid == 0 {
		return dispatchPacket{}, fmt.Errorf("bad launch shape grid=%d block=%d", grid, block)
	}
	items := uint64(grid) * uint64(block)
	if items > 0xffffffff {
		return dispatchPacket{}, fmt.Errorf("grid %d x block %d = %d work-items exceeds AQL's 32-bit grid size", grid, block, items)
	}
	return dispatchPacket{
		Header:             dispatchHeader(false),
		Setup:              1 << dispatchSetupDimensions, // 1 dimension
		WorkgroupSizeX:     uint16(block),
		WorkgroupSizeY:     1,
		WorkgroupSizeZ:     1,
		GridSizeX:          uint32(items),
		GridSizeY:          1,
		GridSizeZ:          1,
		PrivateSegmentSize: private,
		GroupSegmentSize:   group,
		KernelObject:       kernelObject,
		KernargAddress:     kernarg,
		CompletionSignal:   completion,
	}, nil
}

// bytes is the packet's little-endian wire image.
func (p dispatchPacket) bytes() [64]byte {
	var b [64]byte
	le := binary.LittleEndian
	le.PutUint16(b[0:], p.Header)
	le.PutUint16(b[2:], p.Setup)
	le.PutUint16(b[4:], p.WorkgroupSizeX)
	le.PutUint16(b[6:], p.WorkgroupSizeY)
	le.PutUint16(b[8:], p.WorkgroupSizeZ)
	le.PutUint16(b[10:], p.Reserved0)
	le.PutUint32(b[12:], p.GridSizeX)
	le.PutUint32(b[16:], p.GridSizeY)
	le.PutUint32(b[20:], p.GridSizeZ)
	le.PutUint32(b[24:], p.PrivateSegmentSize)
	le.PutUint32(b[28:], p.GroupSegmentSize)
	le.PutUint64(b[32:], p.KernelObject)
	le.PutUint64(b[40:], p.KernargAddress)
	le.PutUint64(b[48:], p.Reserved2)
	le.PutUint64(b[56:], p.CompletionSignal)
	return b
}

// publish writes p into the ring slot at slot (64 bytes, 64-byte aligned):
// bytes 4..63 first, then header|setup<<16 with one atomic release store,
// so the packet processor never sees a valid header over a stale body. The
// slot's first word holds an INVALID header until then.
func publish(slot unsafe.Pointer, p dispatchPacket) {
	img := p.bytes()
	dst := unsafe.Slice((*byte)(slot), 64)
	copy(dst[4:], img[4:])
	atomic.StoreUint32((*uint32)(slot), uint32(p.Header)|uint32(p.Setup)<<16)
}

// encodeKernargs lays the explicit arguments out as consecutive 64-bit
// little-endian words (every manifest argument is a 64-bit word, so each is
// naturally aligned) and zero-fills the rest of the segment: code object v5
// hidden arguments follow the explicit ones and harness kernels read none of
// them (kernels/manifest.go), so zeros are what they must see.
func encodeKernargs(seg []byte, args []uint64) error {
	if len(args)*8 > len(seg) {
		return fmt.Errorf("%d arguments need %d kernarg bytes, the kernel's segment has %d", len(args), len(args)*8, len(seg))
	}
	clear(seg)
	for i, a := range args {
		binary.LittleEndian.PutUint64(seg[i*8:], a)
	}
	return nil
}
