package cuda

import (
	"errors"
	"fmt"
	"strings"

	"p2patomics/rank/backend"
)

// Allocation kinds (spelt again in harness/backends' row: rank must not
// import harness).
const (
	KindVMM     = "vmm"
	KindVMMHost = "vmm-host"
	KindIPC     = "ipc"
	KindDmaBuf  = "dmabuf"
)

// allocKind is one allocation kind of this backend, declared once: Kinds,
// Alloc, Import, vmmProp, allocVMM, CPUWord and free read its row instead
// of each switching on the kind's name (cilium/ebpf's elf_sections.go rows,
// read by one loop; issue 51). A new kind is one row here, its constant,
// and its harness/backends row (the hello and TestMatrixMatchesBackends
// hold the two sides equal).
type allocKind struct {
	name string
	// vmm: cuMemCreate memory mapped with cuMemMap, exported and imported
	// as a POSIX fd, freed by unmap, release and address free.
	vmm bool
	// hostNUMA: the vmm memory lives on the host's NUMA node
	// (CU_MEM_LOCATION_TYPE_HOST_NUMA), so the CPU can map it (CPUWord).
	hostNUMA bool
	alloc    func(b *Backend, kind string, size uint64) (backend.Buffer, backend.Export, error)
	// imp maps a peer's export; fd is the export's fd, or -1.
	imp func(b *Backend, kind string, fd int, exp backend.Export, grant bool) (backend.Buffer, error)
	// free releases one of the kind's buffers, allocated or imported.
	free func(d *driver, buf *buffer) []error
}

// allocKinds are the rows, in the order Kinds lists them. They are set in
// init: the vmm rows' functions read the rows back (hostNUMA), a cycle a
// package-level initialiser may not have.
var allocKinds []allocKind

func init() {
	allocKinds = []allocKind{
		{name: KindVMM, vmm: true, alloc: (*Backend).allocVMM, imp: importVMMFd, free: freeVMM},
		{name: KindVMMHost, vmm: true, hostNUMA: true, alloc: (*Backend).allocVMM, imp: importVMMFd, free: freeVMM},
		{name: KindIPC,
			alloc: func(b *Backend, _ string, size uint64) (backend.Buffer, backend.Export, error) {
				return b.allocIPC(size)
			},
			imp: func(b *Backend, _ string, _ int, exp backend.Export, grant bool) (backend.Buffer, error) {
				return b.importIPC(exp, grant)
			},
			free: func(d *driver, buf *buffer) []error {
				if buf.imported {
					return []error{d.check(d.cuIpcCloseMemHandle(buf.addr))}
				}
				return []error{d.check(d.cuMemFree(buf.addr))}
			}},
		{name: KindDmaBuf,
			alloc: func(b *Backend, _ string, size uint64) (backend.Buffer, backend.Export, error) {
				return b.allocDmaBuf(size)
			},
			imp: func(*Backend, string, int, backend.Export, bool) (backend.Buffer, error) {
				return nil, backend.NotSupportedf("cuda: a dma-buf fd cannot be mapped back into CUDA; checked through fdinfo")
			},
			free: func(d *driver, buf *buffer) []error { return []error{d.check(d.cuMemFree(buf.addr))} }},
	}
}

// kindNames are the rows' names, in order (Kinds).
func kindNames() []string {
	out := make([]string, len(allocKinds))
	for i, k := range allocKinds {
		out[i] = k.name
	}
	return out
}

// kindOf is name's row; a name no row declares is not supported.
func kindOf(name string) (allocKind, error) {
	for _, k := range allocKinds {
		if k.name == name {
			return k, nil
		}
	}
	return allocKind{}, backend.NotSupportedf("cuda: no allocation kind %q (kinds: %s)", name, strings.Join(kindNames(), ", "))
}

// hostNUMA reports whether name's row is host-NUMA memory.
func hostNUMA(name string) bool {
	k, err := kindOf(name)
	return err == nil && k.hostNUMA
}

func importVMMFd(b *Backend, kind string, fd int, exp backend.Export, grant bool) (backend.Buffer, error) {
	if fd < 0 {
		return nil, fmt.Errorf("cuda: %s import without an fd", kind)
	}
	return b.importVMM(kind, fd, exp, grant)
}

func freeVMM(d *driver, buf *buffer) []error {
	errs := []error{d.check(d.cuMemUnmap(buf.addr, buf.size))}
	if !buf.imported {
		errs = append(errs, d.check(d.cuMemRelease(buf.handle)))
	}
	return append(errs, d.check(d.cuMemAddressFree(buf.addr, buf.size)))
}

// freeOf frees buf by its kind's row; a buffer of no row (never made) is
// an error, not a leak passed over.
func freeOf(d *driver, buf *buffer) error {
	k, err := kindOf(buf.kind)
	if err != nil {
		return err
	}
	return errors.Join(k.free(d, buf)...)
}
