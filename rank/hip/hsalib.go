package hip

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/binding"
	"p2patomics/internal/hsaabi"
	"p2patomics/rank/backend"
	"p2patomics/trace"
)

// hsaLib is this backend's binding of libhsa-runtime64, for the hsa-fine
// kind alone (hsavmem.go): agent and pool discovery and the hsa_amd_vmem_*
// calls, nothing else. It is a second table over the library rank/hsa also
// binds, through the same choke point (internal/binding: every call traced,
// injectable, returning a Status); the two backends are siblings and share
// the ABI facts (internal/hsaabi), not a package. No struct passes by
// value: HSA handles are one-uint64 structs, declared as uint64.
type hsaLib struct {
	path    string   // the file CLR mapped, bound here
	missing []string // required entry points dlsym did not find, sorted
	probing atomic.Int32

	init_         func() hstatus
	statusString  func(st uint32, out *uintptr) uint32
	systemGetInfo func(attr uint32, value unsafe.Pointer) hstatus
	iterateAgents func(cb uintptr, data uintptr) hstatus
	agentGetInfo  func(agent uint64, attr uint32, value unsafe.Pointer) hstatus
	iteratePools  func(agent uint64, cb uintptr, data uintptr) hstatus
	poolGetInfo   func(pool uint64, attr uint32, value unsafe.Pointer) hstatus

	vmemAddressReserve func(va *uintptr, size uint64, addr uint64, flags uint64) hstatus
	vmemAddressFree    func(va uintptr, size uint64) hstatus
	vmemHandleCreate   func(pool uint64, size uint64, typ uint32, flags uint64, out *uint64) hstatus
	vmemHandleRelease  func(h uint64) hstatus
	vmemMap            func(va uintptr, size uint64, offset uint64, h uint64, flags uint64) hstatus
	vmemUnmap          func(va uintptr, size uint64) hstatus
	vmemSetAccess      func(va uintptr, size uint64, desc *hsaabi.AccessDesc, n uint64) hstatus
	vmemExport         func(fd *int32, h uint64, flags uint64) hstatus
	vmemImport         func(fd int32, out *uint64) hstatus
}

// hstatus is an HSA entry point's result: the hsa_status_t and the symbol.
type hstatus = binding.Status[uint32]

// hsaMinVmemROCm is the first ROCm whose ROCr exports hsa_amd_vmem_*.
const hsaMinVmemROCm = "6.0"

// hsaSymbols lists every name the table binds; TestHSASymbols checks them
// against the real 6.4.3 and 7.2.4 libhsa-runtime64 exports. The vmem ones
// are absent before ROCm 6.0 (bookworm's 5.2): a skip naming the first.
var hsaSymbols = []string{
	"hsa_init", "hsa_status_string", "hsa_system_get_info", "hsa_iterate_agents", "hsa_agent_get_info",
	"hsa_amd_agent_iterate_memory_pools", "hsa_amd_memory_pool_get_info",
	"hsa_amd_vmem_address_reserve", "hsa_amd_vmem_address_free", "hsa_amd_vmem_handle_create",
	"hsa_amd_vmem_handle_release", "hsa_amd_vmem_map", "hsa_amd_vmem_unmap", "hsa_amd_vmem_set_access",
	"hsa_amd_vmem_export_shareable_handle", "hsa_amd_vmem_import_shareable_handle",
}

func (h *hsaLib) symbols() []binding.Symbol {
	return []binding.Symbol{
		binding.Sym0(&h.init_, h.end, "hsa_init"),
		binding.Untraced(&h.statusString, "hsa_status_string"),
		binding.Sym2(&h.systemGetInfo, h.end, "attribute:x value:x", "hsa_system_get_info"),
		binding.Sym2(&h.iterateAgents, h.end, "callback:x data:x", "hsa_iterate_agents"),
		binding.Sym3(&h.agentGetInfo, h.end, "agent:x attribute:x value:x", "hsa_agent_get_info"),
		binding.Sym3(&h.iteratePools, h.end, "agent:x callback:x data:x", "hsa_amd_agent_iterate_memory_pools"),
		binding.Sym3(&h.poolGetInfo, h.end, "memory_pool:x attribute:x value:x", "hsa_amd_memory_pool_get_info"),
		binding.Sym4(&h.vmemAddressReserve, h.end, ">va:x size address:x flags:x", "hsa_amd_vmem_address_reserve"),
		binding.Sym2(&h.vmemAddressFree, h.end, "va:x size", "hsa_amd_vmem_address_free"),
		binding.Sym5(&h.vmemHandleCreate, h.end, "pool:x size type flags:x >memory_handle:x", "hsa_amd_vmem_handle_create"),
		binding.Sym1(&h.vmemHandleRelease, h.end, "memory_handle:x", "hsa_amd_vmem_handle_release"),
		binding.Sym5(&h.vmemMap, h.end, "va:x size in_offset:x memory_handle:x flags:x", "hsa_amd_vmem_map"),
		binding.Sym2(&h.vmemUnmap, h.end, "va:x size", "hsa_amd_vmem_unmap"),
		binding.Sym4(&h.vmemSetAccess, h.end, "va:x size desc desc_cnt", "hsa_amd_vmem_set_access"),
		binding.Sym3(&h.vmemExport, h.end, ">dmabuf_fd handle:x flags:x", "hsa_amd_vmem_export_shareable_handle"),
		binding.Sym2(&h.vmemImport, h.end, "dmabuf_fd >handle:x", "hsa_amd_vmem_import_shareable_handle"),
	}
}

// end closes a traced HSA call as rank/hsa's does: INFO_BREAK is no failure,
// nor is a failure inside a probe.
func (h *hsaLib) end(sp trace.Span, st uint32, out func() string) {
	if sp == (trace.Span{}) {
		return
	}
	ok := st == hsaabi.StatusSuccess || st == hsaabi.StatusInfoBreak
	if !ok {
		out = nil
	}
	sp.EndStatus(int64(st), hsaabi.StatusName(st), !ok && h.probing.Load() == 0, out)
}

// HSAError is a failed HSA call: the status and hsa_status_string's text.
type HSAError struct {
	Call   string
	Status uint32
	Text   string
}

func (e *HSAError) Error() string {
	return fmt.Sprintf("%s: hsa status 0x%x (%s)", e.Call, e.Status, e.Text)
}

func (h *hsaLib) check(st hstatus) error {
	if st.Code == hsaabi.StatusSuccess || st.Code == hsaabi.StatusInfoBreak {
		return nil
	}
	text := hsaabi.StatusName(st.Code)
	var p uintptr
	if h.statusString != nil && h.statusString(st.Code, &p) == hsaabi.StatusSuccess && p != 0 {
		text = cString(p)
	}
	return &HSAError{Call: st.Call, Status: st.Code, Text: text}
}

// mappedHSA is the libhsa-runtime64 file this process has mapped
// (/proc/self/maps); the tests replace it.
var mappedHSA = func() string { return binding.Loaded("libhsa-runtime64.so") }

var (
	hsaOnce   sync.Once
	hsaLoaded *hsaLib
	hsaErr    error
)

// loadHSA binds the libhsa-runtime64 that CLR itself loaded, by the path
// the process mapped, never by a library search: dlopen of a file already
// mapped returns that same instance, so HIP and this table share one ROCr.
// A search could find another install (a distro 5.x beside /opt/rocm) and
// start a second runtime on /dev/kfd beside CLR's. Called after hipInit
// has run (Open's hipGetDeviceCount), once per process.
func loadHSA() (*hsaLib, error) {
	hsaOnce.Do(func() { hsaLoaded, hsaErr = openHSA(mappedHSA()) })
	return hsaLoaded, hsaErr
}

// openHSA binds path; every way it cannot is a skip naming what is missing.
func openHSA(path string) (*hsaLib, error) {
	if path == "" {
		return nil, backend.NotSupportedf("no libhsa-runtime64 is mapped in this HIP process (CLR loads ROCr at hipInit; a HIP runtime without ROCr has no HSA vmem): the hsa-fine kind needs the ROCm HSA runtime CLR uses")
	}
	hnd, err := binding.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL, "RTLD_NOW|RTLD_LOCAL", true)
	if err != nil {
		return nil, backend.NotSupportedf("the HSA runtime CLR loaded (%s) cannot be opened again: %v", path, err)
	}
	h := &hsaLib{path: path}
	_, h.missing = binding.Bind(hnd, h.symbols())
	return h, h.needAll()
}

// needAll is a skip naming what is missing: a missing vmem entry point
// (hsa_amd_vmem_handle_create first) is an older ROCm; any other is a
// broken or foreign install.
func (h *hsaLib) needAll() error {
	var vmem, other []string
	for _, n := range h.missing {
		if strings.HasPrefix(n, "hsa_amd_vmem_") {
			vmem = append(vmem, n)
		} else {
			other = append(other, n)
		}
	}
	switch {
	case len(other) > 0:
		return backend.NotSupportedf("%s lacks %v: not a usable HSA runtime for the hsa-fine kind", h.path, h.missing)
	case len(vmem) == 0:
		return nil
	}
	first := vmem[0]
	if slices.Contains(vmem, "hsa_amd_vmem_handle_create") {
		first = "hsa_amd_vmem_handle_create"
	}
	return backend.NotSupportedf("%s has no %s (an older ROCm, e.g. 5.x): the hsa-fine kind needs HSA virtual memory, ROCm >= %s", h.path, first, hsaMinVmemROCm)
}

// Iteration state for the HSA callbacks: created once (purego trampolines
// are never freed); calls that iterate hold hsaIterMu.
var (
	hsaIterMu   sync.Mutex
	hsaIterList []uint64
	hsaCBOnce   sync.Once
	hsaListCB   uintptr
)

// hsaList runs an iterate call whose callback appends each handle.
func hsaList(h *hsaLib, iterate func(cb uintptr) hstatus) ([]uint64, error) {
	hsaCBOnce.Do(func() {
		hsaListCB = purego.NewCallback(func(x uint64, _ uintptr) uintptr {
			hsaIterList = append(hsaIterList, x)
			return hsaabi.StatusSuccess
		})
	})
	hsaIterMu.Lock()
	defer hsaIterMu.Unlock()
	hsaIterList = nil
	if err := h.check(iterate(hsaListCB)); err != nil {
		return nil, err
	}
	return append([]uint64(nil), hsaIterList...), nil
}
