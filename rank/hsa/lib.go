package hsa

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/internal/binding"
	"p2patomics/internal/hsaabi"
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
	// The explicit SDMA engine (AMD extension 1.2). Absent: Copy passes the
	// owner agents to hsa_amd_memory_async_copy and ROCr picks the engine.
	"hsa_amd_memory_async_copy_on_engine": "6.0",
	"hsa_amd_memory_copy_engine_status":   "6.0",
	// The KFD-recommended engine per peer (AMD extension 1.8): absent in
	// 6.4.3, present in 7.2.4. Absent, Copy takes the lowest free engine.
	"hsa_amd_memory_get_preferred_copy_engine": "7.0",
}

// lib is the one choke point into libhsa-runtime64: every call goes through
// these function values (registered with purego from Dlsym'd addresses; no
// struct passes by value: every HSA handle is a one-uint64 struct and is
// declared as uint64, which the SysV ABI passes identically). HSA itself has
// no per-thread state (unlike HIP's current device), so which OS thread calls
// does not matter; the rank server still calls from one locked thread.
type lib struct {
	handle  uintptr
	path    string            // the file the process mapped (/proc/self/maps)
	missing map[string]string // optional symbol -> ROCm version that adds it
	others  []string          // other runtimes on disk (binding.OtherOnDisk)
	probing atomic.Int32      // > 0 inside beginProbe/endProbe

	init_                func() status
	shutDown             func() status
	statusString         func(st uint32, out *uintptr) uint32
	systemGetInfo        func(attr uint32, value unsafe.Pointer) status
	iterateAgents        func(cb uintptr, data uintptr) status
	agentGetInfo         func(agent uint64, attr uint32, value unsafe.Pointer) status
	agentIterateISAs     func(agent uint64, cb uintptr, data uintptr) status
	isaGetInfoAlt        func(isa uint64, attr uint32, value unsafe.Pointer) status
	iteratePools         func(agent uint64, cb uintptr, data uintptr) status
	poolGetInfo          func(pool uint64, attr uint32, value unsafe.Pointer) status
	agentPoolGetInfo     func(agent, pool uint64, attr uint32, value unsafe.Pointer) status
	poolAllocate         func(pool uint64, size uint64, flags uint32, ptr *uintptr) status
	poolFree             func(ptr uintptr) status
	agentsAllowAccess    func(n uint32, agents *uint64, flags uintptr, ptr uintptr) status
	asyncCopy            func(dst uintptr, dstAgent uint64, src uintptr, srcAgent uint64, size uint64, ndeps uint32, deps uintptr, completion uint64) status
	copyOnEngine         func(dst uintptr, dstAgent uint64, src uintptr, srcAgent uint64, size uint64, ndeps uint32, deps uintptr, completion uint64, engine uint32, forceSDMA bool) status
	copyEngineStatus     func(dstAgent, srcAgent uint64, mask *uint32) status
	preferredEngine      func(dstAgent, srcAgent uint64, mask *uint32) status
	signalCreate         func(initial int64, nconsumers uint32, consumers uintptr, out *uint64) status
	signalDestroy        func(sig uint64) status
	signalStoreScrel     func(sig uint64, v int64)
	signalStoreRelaxed   func(sig uint64, v int64)
	signalWaitScacq      func(sig uint64, cond uint32, cmp int64, timeout uint64, state uint32) int64
	signalLoadRelaxed    func(sig uint64) int64
	queueCreate          func(agent uint64, size uint32, typ uint32, cb uintptr, data uintptr, private, group uint32, out *uintptr) status
	queueDestroy         func(q uintptr) status
	queueAddWriteIndex   func(q uintptr, delta uint64) uint64
	queueLoadReadIndex   func(q uintptr) uint64
	readerCreate         func(code uintptr, size uint64, out *uint64) status
	readerDestroy        func(r uint64) status
	executableCreateAlt  func(profile, rounding uint32, options uintptr, out *uint64) status
	executableLoadAgent  func(exe, agent, reader uint64, options uintptr, out uintptr) status
	executableFreeze     func(exe uint64, options uintptr) status
	executableSymbol     func(exe uint64, name *byte, agent *uint64, out *uint64) status
	symbolGetInfo        func(sym uint64, attr uint32, value unsafe.Pointer) status
	executableDestroy    func(exe uint64) status
	registerEventHandler func(cb uintptr, data uintptr) status

	vmemAddressReserve func(va *uintptr, size uint64, addr uint64, flags uint64) status
	vmemAddressFree    func(va uintptr, size uint64) status
	vmemHandleCreate   func(pool uint64, size uint64, typ uint32, flags uint64, out *uint64) status
	vmemHandleRelease  func(h uint64) status
	vmemMap            func(va uintptr, size uint64, offset uint64, h uint64, flags uint64) status
	vmemUnmap          func(va uintptr, size uint64) status
	vmemSetAccess      func(va uintptr, size uint64, desc *accessDesc, n uint64) status
	vmemExport         func(fd *int32, h uint64, flags uint64) status
	vmemImport         func(fd int32, out *uint64) status
}

var (
	loadOnce sync.Once
	loaded   *lib
	loadErr  error
)

// shadowed names the other runtimes on disk, for a too-old loaded one's
// skip ("" when there are none).
func (l *lib) shadowed() string { return binding.Shadowed(l.others) }

// load opens the library once per process: the soname through the loader's
// search, then in binding.ROCmLibDirs.
func load() (*lib, error) {
	loadOnce.Do(func() {
		cands := binding.Candidates([]string{libName}, binding.ROCmPathDir(), binding.ROCmLibDirs())
		var errs []string
		for i, c := range cands {
			l, err := open(c, i == len(cands)-1)
			if err == nil {
				l.others = binding.OtherOnDisk(cands, l.path)
				loaded, loadErr = l, nil
				return
			}
			if !errors.Is(err, backend.ErrNotSupported) {
				loadErr = err // it loaded but is broken: say so, do not look further
				return
			}
			errs = append(errs, err.Error())
		}
		loadErr = backend.NotSupportedf("%s not loadable (no ROCm HSA runtime installed? searched the loader path, $ROCM_PATH/lib and /opt/rocm/lib): %s",
			libName, strings.Join(errs, "; "))
	})
	return loaded, loadErr
}

// status is what a bound entry point returns: the hsa_status_t and the name
// of the symbol that returned it, so call sites name a symbol only in the
// table.
type status = binding.Status[uint32]

// symbols is the binding table. The string before the name is the argSpec:
// what the trace records of each argument (trace.ArgSpec).
func (l *lib) symbols() []binding.Symbol {
	return []binding.Symbol{
		binding.Sym0(&l.init_, l.end, "hsa_init"),
		binding.Sym0(&l.shutDown, l.end, "hsa_shut_down"),
		binding.Untraced(&l.statusString, "hsa_status_string"),
		binding.Sym2(&l.systemGetInfo, l.end, "attribute:x value:x", "hsa_system_get_info"),
		binding.Sym2(&l.iterateAgents, l.end, "callback:x data:x", "hsa_iterate_agents"),
		binding.Sym3(&l.agentGetInfo, l.end, "agent:x attribute:x value:x", "hsa_agent_get_info"),
		binding.Sym3(&l.agentIterateISAs, l.end, "agent:x callback:x data:x", "hsa_agent_iterate_isas"),
		binding.Sym3(&l.isaGetInfoAlt, l.end, "isa:x attribute:x value:x", "hsa_isa_get_info_alt"),
		binding.Sym3(&l.iteratePools, l.end, "agent:x callback:x data:x", "hsa_amd_agent_iterate_memory_pools"),
		binding.Sym3(&l.poolGetInfo, l.end, "memory_pool:x attribute:x value:x", "hsa_amd_memory_pool_get_info"),
		binding.Sym4(&l.agentPoolGetInfo, l.end, "agent:x memory_pool:x attribute:x value:x", "hsa_amd_agent_memory_pool_get_info"),
		binding.Sym4(&l.poolAllocate, l.end, "memory_pool:x size flags:x >ptr:x", "hsa_amd_memory_pool_allocate"),
		binding.Sym1(&l.poolFree, l.end, "ptr:x", "hsa_amd_memory_pool_free"),
		binding.Sym4(&l.agentsAllowAccess, l.end, "num_agents agents:x flags:x ptr:x", "hsa_amd_agents_allow_access"),
		binding.Sym8(&l.asyncCopy, l.end, "dst:x dst_agent:x src:x src_agent:x size num_dep_signals dep_signals:x completion_signal:x", "hsa_amd_memory_async_copy"),
		binding.Sym10(&l.copyOnEngine, l.end, "dst:x dst_agent:x src:x src_agent:x size num_dep_signals dep_signals:x completion_signal:x engine_id:x force_copy_on_sdma", "hsa_amd_memory_async_copy_on_engine"),
		binding.Sym3(&l.copyEngineStatus, l.end, "dst_agent:x src_agent:x >engine_ids_mask:x", "hsa_amd_memory_copy_engine_status"),
		binding.Sym3(&l.preferredEngine, l.end, "dst_agent:x src_agent:x >recommended_ids_mask:x", "hsa_amd_memory_get_preferred_copy_engine"),
		binding.Sym4(&l.signalCreate, l.end, "initial_value num_consumers consumers:x >signal:x", "hsa_signal_create"),
		binding.Sym1(&l.signalDestroy, l.end, "signal:x", "hsa_signal_destroy"),
		binding.Void2(&l.signalStoreScrel, "signal:x value", "hsa_signal_store_screlease"),
		binding.Void2(&l.signalStoreRelaxed, "signal:x value", "hsa_signal_store_relaxed"),
		binding.Value5(&l.signalWaitScacq, "signal:x condition compare_value timeout_hint wait_state_hint", "hsa_signal_wait_scacquire"),
		binding.Value1(&l.signalLoadRelaxed, "signal:x", "hsa_signal_load_relaxed"),
		binding.Sym8(&l.queueCreate, l.end, "agent:x size type callback:x data:x private_segment_size group_segment_size >queue:x", "hsa_queue_create"),
		binding.Sym1(&l.queueDestroy, l.end, "queue:x", "hsa_queue_destroy"),
		binding.Value2(&l.queueAddWriteIndex, "queue:x value", "hsa_queue_add_write_index_scacq_screl"),
		binding.Value1(&l.queueLoadReadIndex, "queue:x", "hsa_queue_load_read_index_scacquire"),
		binding.Sym3(&l.readerCreate, l.end, "code_object:x size >code_object_reader:x", "hsa_code_object_reader_create_from_memory"),
		binding.Sym1(&l.readerDestroy, l.end, "code_object_reader:x", "hsa_code_object_reader_destroy"),
		binding.Sym4(&l.executableCreateAlt, l.end, "profile default_float_rounding_mode options:x >executable:x", "hsa_executable_create_alt"),
		binding.Sym5(&l.executableLoadAgent, l.end, "executable:x agent:x code_object_reader:x options:x loaded_code_object:x", "hsa_executable_load_agent_code_object"),
		binding.Sym2(&l.executableFreeze, l.end, "executable:x options:x", "hsa_executable_freeze"),
		binding.Sym4(&l.executableSymbol, l.end, "executable:x symbol_name:s agent:x >symbol:x", "hsa_executable_get_symbol_by_name"),
		binding.Sym3(&l.symbolGetInfo, l.end, "executable_symbol:x attribute:x value:x", "hsa_executable_symbol_get_info"),
		binding.Sym1(&l.executableDestroy, l.end, "executable:x", "hsa_executable_destroy"),
		binding.Sym2(&l.registerEventHandler, l.end, "callback:x data:x", "hsa_amd_register_system_event_handler"),
		binding.Sym4(&l.vmemAddressReserve, l.end, ">va:x size address:x flags:x", "hsa_amd_vmem_address_reserve"),
		binding.Sym2(&l.vmemAddressFree, l.end, "va:x size", "hsa_amd_vmem_address_free"),
		binding.Sym5(&l.vmemHandleCreate, l.end, "pool:x size type flags:x >memory_handle:x", "hsa_amd_vmem_handle_create"),
		binding.Sym1(&l.vmemHandleRelease, l.end, "memory_handle:x", "hsa_amd_vmem_handle_release"),
		binding.Sym5(&l.vmemMap, l.end, "va:x size in_offset:x memory_handle:x flags:x", "hsa_amd_vmem_map"),
		binding.Sym2(&l.vmemUnmap, l.end, "va:x size", "hsa_amd_vmem_unmap"),
		binding.Sym4(&l.vmemSetAccess, l.end, "va:x size desc desc_cnt", "hsa_amd_vmem_set_access"),
		binding.Sym3(&l.vmemExport, l.end, ">dmabuf_fd handle:x flags:x", "hsa_amd_vmem_export_shareable_handle"),
		binding.Sym2(&l.vmemImport, l.end, "dmabuf_fd >handle:x", "hsa_amd_vmem_import_shareable_handle"),
	}
}

// open loads one candidate; lastTry says whether a dlopen failure ends the
// search (earlier candidates are probes: their failure is not marked).
func open(name string, lastTry bool) (*lib, error) {
	h, err := binding.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL, "RTLD_NOW|RTLD_LOCAL", lastTry)
	if err != nil {
		return nil, backend.NotSupportedf("%v", err)
	}
	l := &lib{handle: h, path: binding.Loaded("libhsa-runtime64.so"), missing: map[string]string{}}
	if l.path == "" {
		l.path = name
	}
	_, absent := binding.Bind(h, l.symbols())
	var bad []string
	for _, n := range absent {
		if v, ok := optionalSymbols[n]; ok {
			l.missing[n] = v // an absent optional symbol stays nil
		} else {
			bad = append(bad, n)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s lacks required symbols %v: broken or foreign ROCr install", name, bad)
	}
	return l, nil
}

// needVmem reports the first missing vmem symbol as ErrNotSupported.
func (l *lib) needVmem() error {
	names := make([]string, 0, len(l.missing))
	for n := range l.missing {
		if strings.HasPrefix(n, "hsa_amd_vmem_") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil // only the optional copy-engine entry points are absent
	}
	sort.Strings(names)
	if _, ok := l.missing["hsa_amd_vmem_handle_create"]; ok {
		names[0] = "hsa_amd_vmem_handle_create"
	}
	return backend.NotSupportedf("%s (%s) has no %s (an older ROCm, e.g. 5.x): HSA virtual memory needs ROCm >= %s%s",
		libName, l.path, names[0], l.missing[names[0]], l.shadowed())
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
func (l *lib) check(st status) error {
	if st.Code == statusSuccess || st.Code == statusInfoBreak {
		return nil
	}
	return &StatusError{Call: st.Call, Status: st.Code, Text: l.text(st.Code)}
}

// checkFor is check with what the call was about after its name, e.g.
// hsa_amd_memory_pool_allocate(kernarg); the name is built only on failure.
func (l *lib) checkFor(what string, st status) error {
	if st.Code == statusSuccess || st.Code == statusInfoBreak {
		return nil
	}
	st.Call += "(" + what + ")"
	return l.check(st)
}

func (l *lib) text(st uint32) string {
	var p uintptr
	if l.statusString != nil && l.statusString(st, &p) == statusSuccess && p != 0 {
		return cString(p, 512)
	}
	return statusName(st)
}

// statusName is the hsa_status_t enumerator's name, for errors and the
// trace (one table for both AMD bindings: internal/hsaabi).
func statusName(st uint32) string { return hsaabi.StatusName(st) }

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
		if st.Code == statusSuccess {
			return
		}
		err := l.check(st)
		if st.Code == statusErrorOutOfResources {
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
