package hsa

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
)

// libName is the HSA runtime's soname (SOVERSION 1 on every ROCm release).
const libName = "libhsa-runtime64.so.1"

// minVmemROCm is the first ROCm release whose ROCr exports hsa_amd_vmem_*.
const minVmemROCm = "6.0"

// requiredSymbols exist in every ROCr this backend can meet (bookworm's
// ROCm 5.2 included); a library without one of them is broken, not old.
var requiredSymbols = []string{
	"hsa_init", "hsa_shut_down", "hsa_status_string", "hsa_system_get_info",
	"hsa_iterate_agents", "hsa_agent_get_info", "hsa_agent_iterate_isas", "hsa_isa_get_info_alt",
	"hsa_amd_agent_iterate_memory_pools", "hsa_amd_memory_pool_get_info", "hsa_amd_agent_memory_pool_get_info",
	"hsa_amd_memory_pool_allocate", "hsa_amd_memory_pool_free", "hsa_amd_agents_allow_access",
	"hsa_amd_memory_async_copy",
	"hsa_signal_create", "hsa_signal_destroy", "hsa_signal_store_screlease", "hsa_signal_store_relaxed",
	"hsa_signal_wait_scacquire", "hsa_signal_load_relaxed",
	"hsa_queue_create", "hsa_queue_destroy", "hsa_queue_add_write_index_scacq_screl",
	"hsa_queue_load_read_index_scacquire",
	"hsa_code_object_reader_create_from_memory", "hsa_code_object_reader_destroy",
	"hsa_executable_create_alt", "hsa_executable_load_agent_code_object", "hsa_executable_freeze",
	"hsa_executable_get_symbol_by_name", "hsa_executable_symbol_get_info", "hsa_executable_destroy",
	"hsa_amd_register_system_event_handler",
}

// optionalSymbols maps each symbol that older runtimes lack to the ROCm
// release that added it. Absent → the feature is ErrNotSupported, naming it.
var optionalSymbols = map[string]string{
	"hsa_amd_vmem_address_reserve":         minVmemROCm,
	"hsa_amd_vmem_address_free":            minVmemROCm,
	"hsa_amd_vmem_handle_create":           minVmemROCm,
	"hsa_amd_vmem_handle_release":          minVmemROCm,
	"hsa_amd_vmem_map":                     minVmemROCm,
	"hsa_amd_vmem_unmap":                   minVmemROCm,
	"hsa_amd_vmem_set_access":              minVmemROCm,
	"hsa_amd_vmem_export_shareable_handle": minVmemROCm,
	"hsa_amd_vmem_import_shareable_handle": minVmemROCm,
}

// lib is the one choke point into libhsa-runtime64: every call goes through
// these function values (registered with purego from Dlsym'd addresses; no
// struct passes by value: every HSA handle is a one-uint64 struct and is
// declared as uint64, which the SysV ABI passes identically). HSA itself has
// no per-thread state (unlike HIP's current device), so which OS thread calls
// does not matter; the rank server still calls from one locked thread.
type lib struct {
	handle  uintptr
	missing map[string]string // optional symbol -> ROCm version that adds it

	init_                func() uint32
	shutDown             func() uint32
	statusString         func(st uint32, out *uintptr) uint32
	systemGetInfo        func(attr uint32, value unsafe.Pointer) uint32
	iterateAgents        func(cb uintptr, data uintptr) uint32
	agentGetInfo         func(agent uint64, attr uint32, value unsafe.Pointer) uint32
	agentIterateISAs     func(agent uint64, cb uintptr, data uintptr) uint32
	isaGetInfoAlt        func(isa uint64, attr uint32, value unsafe.Pointer) uint32
	iteratePools         func(agent uint64, cb uintptr, data uintptr) uint32
	poolGetInfo          func(pool uint64, attr uint32, value unsafe.Pointer) uint32
	agentPoolGetInfo     func(agent, pool uint64, attr uint32, value unsafe.Pointer) uint32
	poolAllocate         func(pool uint64, size uint64, flags uint32, ptr *uintptr) uint32
	poolFree             func(ptr uintptr) uint32
	agentsAllowAccess    func(n uint32, agents *uint64, flags uintptr, ptr uintptr) uint32
	asyncCopy            func(dst uintptr, dstAgent uint64, src uintptr, srcAgent uint64, size uint64, ndeps uint32, deps uintptr, completion uint64) uint32
	signalCreate         func(initial int64, nconsumers uint32, consumers uintptr, out *uint64) uint32
	signalDestroy        func(sig uint64) uint32
	signalStoreScrel     func(sig uint64, v int64)
	signalStoreRelaxed   func(sig uint64, v int64)
	signalWaitScacq      func(sig uint64, cond uint32, cmp int64, timeout uint64, state uint32) int64
	signalLoadRelaxed    func(sig uint64) int64
	queueCreate          func(agent uint64, size uint32, typ uint32, cb uintptr, data uintptr, private, group uint32, out *uintptr) uint32
	queueDestroy         func(q uintptr) uint32
	queueAddWriteIndex   func(q uintptr, delta uint64) uint64
	queueLoadReadIndex   func(q uintptr) uint64
	readerCreate         func(code uintptr, size uint64, out *uint64) uint32
	readerDestroy        func(r uint64) uint32
	executableCreateAlt  func(profile, rounding uint32, options uintptr, out *uint64) uint32
	executableLoadAgent  func(exe, agent, reader uint64, options uintptr, out uintptr) uint32
	executableFreeze     func(exe uint64, options uintptr) uint32
	executableSymbol     func(exe uint64, name *byte, agent *uint64, out *uint64) uint32
	symbolGetInfo        func(sym uint64, attr uint32, value unsafe.Pointer) uint32
	executableDestroy    func(exe uint64) uint32
	registerEventHandler func(cb uintptr, data uintptr) uint32

	vmemAddressReserve func(va *uintptr, size uint64, addr uint64, flags uint64) uint32
	vmemAddressFree    func(va uintptr, size uint64) uint32
	vmemHandleCreate   func(pool uint64, size uint64, typ uint32, flags uint64, out *uint64) uint32
	vmemHandleRelease  func(h uint64) uint32
	vmemMap            func(va uintptr, size uint64, offset uint64, h uint64, flags uint64) uint32
	vmemUnmap          func(va uintptr, size uint64) uint32
	vmemSetAccess      func(va uintptr, size uint64, desc *accessDesc, n uint64) uint32
	vmemExport         func(fd *int32, h uint64, flags uint64) uint32
	vmemImport         func(fd int32, out *uint64) uint32
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// load opens the library once per process.
func load() (*lib, error) {
	loadOnce.Do(func() { loaded, loadErr = open(libName) })
	return loaded, loadErr
}

func open(name string) (*lib, error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, backend.NotSupportedf("%s not loadable (no ROCm HSA runtime installed?): %v", name, err)
	}
	l := &lib{handle: h, missing: map[string]string{}}
	var bad []string
	reg := func(fptr any, sym string) {
		addr, err := purego.Dlsym(h, sym)
		if err != nil || addr == 0 {
			if v, ok := optionalSymbols[sym]; ok {
				l.missing[sym] = v
			} else {
				bad = append(bad, sym)
			}
			return
		}
		purego.RegisterFunc(fptr, addr)
	}
	reg(&l.init_, "hsa_init")
	reg(&l.shutDown, "hsa_shut_down")
	reg(&l.statusString, "hsa_status_string")
	reg(&l.systemGetInfo, "hsa_system_get_info")
	reg(&l.iterateAgents, "hsa_iterate_agents")
	reg(&l.agentGetInfo, "hsa_agent_get_info")
	reg(&l.agentIterateISAs, "hsa_agent_iterate_isas")
	reg(&l.isaGetInfoAlt, "hsa_isa_get_info_alt")
	reg(&l.iteratePools, "hsa_amd_agent_iterate_memory_pools")
	reg(&l.poolGetInfo, "hsa_amd_memory_pool_get_info")
	reg(&l.agentPoolGetInfo, "hsa_amd_agent_memory_pool_get_info")
	reg(&l.poolAllocate, "hsa_amd_memory_pool_allocate")
	reg(&l.poolFree, "hsa_amd_memory_pool_free")
	reg(&l.agentsAllowAccess, "hsa_amd_agents_allow_access")
	reg(&l.asyncCopy, "hsa_amd_memory_async_copy")
	reg(&l.signalCreate, "hsa_signal_create")
	reg(&l.signalDestroy, "hsa_signal_destroy")
	reg(&l.signalStoreScrel, "hsa_signal_store_screlease")
	reg(&l.signalStoreRelaxed, "hsa_signal_store_relaxed")
	reg(&l.signalWaitScacq, "hsa_signal_wait_scacquire")
	reg(&l.signalLoadRelaxed, "hsa_signal_load_relaxed")
	reg(&l.queueCreate, "hsa_queue_create")
	reg(&l.queueDestroy, "hsa_queue_destroy")
	reg(&l.queueAddWriteIndex, "hsa_queue_add_write_index_scacq_screl")
	reg(&l.queueLoadReadIndex, "hsa_queue_load_read_index_scacquire")
	reg(&l.readerCreate, "hsa_code_object_reader_create_from_memory")
	reg(&l.readerDestroy, "hsa_code_object_reader_destroy")
	reg(&l.executableCreateAlt, "hsa_executable_create_alt")
	reg(&l.executableLoadAgent, "hsa_executable_load_agent_code_object")
	reg(&l.executableFreeze, "hsa_executable_freeze")
	reg(&l.executableSymbol, "hsa_executable_get_symbol_by_name")
	reg(&l.symbolGetInfo, "hsa_executable_symbol_get_info")
	reg(&l.executableDestroy, "hsa_executable_destroy")
	reg(&l.registerEventHandler, "hsa_amd_register_system_event_handler")
	reg(&l.vmemAddressReserve, "hsa_amd_vmem_address_reserve")
	reg(&l.vmemAddressFree, "hsa_amd_vmem_address_free")
	reg(&l.vmemHandleCreate, "hsa_amd_vmem_handle_create")
	reg(&l.vmemHandleRelease, "hsa_amd_vmem_handle_release")
	reg(&l.vmemMap, "hsa_amd_vmem_map")
	reg(&l.vmemUnmap, "hsa_amd_vmem_unmap")
	reg(&l.vmemSetAccess, "hsa_amd_vmem_set_access")
	reg(&l.vmemExport, "hsa_amd_vmem_export_shareable_handle")
	reg(&l.vmemImport, "hsa_amd_vmem_import_shareable_handle")
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%s lacks required symbols %v: broken or foreign ROCr install", name, bad)
	}
	return l, nil
}

// needVmem reports the first missing vmem symbol as ErrNotSupported.
func (l *lib) needVmem() error {
	if len(l.missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(l.missing))
	for n := range l.missing {
		names = append(names, n)
	}
	sort.Strings(names)
	if _, ok := l.missing["hsa_amd_vmem_handle_create"]; ok {
		names[0] = "hsa_amd_vmem_handle_create"
	}
	return backend.NotSupportedf("%s has no %s (an older ROCm, e.g. 5.x): HSA virtual memory needs ROCm >= %s",
		libName, names[0], l.missing[names[0]])
}

// StatusError is a failed HSA call: the status and hsa_status_string's text.
type StatusError struct {
	Call   string
	Status uint32
	Text   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: hsa status 0x%x (%s)", e.Call, e.Status, e.Text)
}

// Is lets errors.Is(err, backend.ErrNotSupported) hold for statuses that
// mean "this machine cannot", never for programming errors.
func (e *StatusError) Is(target error) bool { return false }

// check turns a status into an error (nil for SUCCESS and INFO_BREAK).
func (l *lib) check(call string, st uint32) error {
	if st == statusSuccess || st == statusInfoBreak {
		return nil
	}
	return &StatusError{Call: call, Status: st, Text: l.text(st)}
}

func (l *lib) text(st uint32) string {
	var p uintptr
	if l.statusString != nil && l.statusString(st, &p) == statusSuccess && p != 0 {
		return cString(p, 512)
	}
	return statusName(st)
}

func statusName(st uint32) string {
	switch st {
	case statusErrorInvalidArgument:
		return "HSA_STATUS_ERROR_INVALID_ARGUMENT"
	case statusErrorOutOfResources:
		return "HSA_STATUS_ERROR_OUT_OF_RESOURCES"
	case statusErrorNotInitialized:
		return "HSA_STATUS_ERROR_NOT_INITIALIZED"
	case statusErrorIncompatibleArguments:
		return "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS"
	case statusErrorInvalidCodeObject:
		return "HSA_STATUS_ERROR_INVALID_CODE_OBJECT"
	case statusErrorException:
		return "HSA_STATUS_ERROR_EXCEPTION"
	}
	return fmt.Sprintf("hsa status 0x%x", st)
}

// cString copies a NUL-terminated C string of at most max bytes.
func cString(p uintptr, max int) string {
	if p == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(ptr(p)), max)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// goString trims a fixed char array at its first NUL.
func goString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

var (
	initOnce sync.Once
	initErr  error
)

// hsaInit calls hsa_init exactly once per process: init/shut_down/init in
// one process fails with OUT_OF_RESOURCES on ROCr (IRIS-FIX test comment),
// so the runtime stays up until the rank exits.
func hsaInit(l *lib) error {
	initOnce.Do(func() {
		st := l.init_()
		if st == statusSuccess {
			return
		}
		err := l.check("hsa_init", st)
		if st == statusErrorOutOfResources {
			if _, e := os.Stat("/dev/kfd"); errors.Is(e, os.ErrNotExist) {
				initErr = backend.NotSupportedf("no /dev/kfd (no AMD GPU): %v", err)
				return
			}
			initErr = backend.NotSupportedf("hsa_init failed; /dev/kfd exists but may not be openable (user not in the render/video group?): %v", err)
			return
		}
		initErr = err
	})
	return initErr
}

// ptr turns an address owned by C (the runtime, mmap) into an unsafe.Pointer
// without the uintptr->Pointer conversion vet rightly flags for Go memory.
func ptr(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
