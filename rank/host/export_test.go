package host

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"p2patomics/kernels"
)

var scratch [1 << 16]byte

func fakePtrs(k kernels.Kernel) map[string]unsafe.Pointer {
	m := map[string]unsafe.Pointer{}
	for _, a := range k.Args {
		if a.Ptr {
			m[a.Name] = unsafe.Pointer(&scratch[0])
		}
	}
	return m
}

func closeFd(fd int) error {
	if fd < 0 {
		return nil
	}
	return unix.Close(fd)
}

func le(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

const goarch = runtime.GOARCH

var x86 = goarch == "amd64" || goarch == "386"
