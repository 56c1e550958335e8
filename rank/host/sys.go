package host

import (
	"syscall"

	"p2patomics/internal/inject"
	"p2patomics/trace"
)

// Symbols are the host backend's calls that go through its choke point,
// sys: the host's counterpart of internal/binding's table, so the
// driver-fault injector's fail, noop, fail-every and hang rules (internal/inject)
// act on the host backend as on a GPU one. A fail's code is an errno.
//
//	memfd_create  allocate (cuMemCreate, hsa_amd_vmem_handle_create)
//	ftruncate     size the allocation
//	dup           export: fcntl(F_DUPFD_CLOEXEC), the fd the peers receive
//	              (cuMemExportToShareableHandle)
//	fstat         import: check what arrived
//	mmap          map, with no access yet (cuMemMap)
//	mprotect      the access grant (cuMemSetAccess, hsa_amd_vmem_set_access)
//	munmap        unmap
//	memcpy_htod   Write's copy into the mapping (cuMemcpyHtoD, hipMemcpyHtoD)
//	synchronize   a launch's wait for its kernel threads (cuStreamSynchronize)
//
// The list is internal/inject's static one, which the suite checks rules
// against; TestSymbols checks it names exactly the calls sys is given.
var Symbols = inject.HostSymbols

// sys makes one call of the host's choke point under name, traced; args
// describes the call for the trace. Under an injected rule the call is
// not made: a fail returns its errno, a noop nil with nothing done (the
// call's results stay their zero values, as a driver that says success
// and fills nothing in would leave them).
//
// A hang rule wedges the call: its record is begun (in flight, naming the
// call, for the parent to read) and the call never returns.
func sys(name string, args func() string, call func() error) error {
	if r, wedge := inject.Wedge(name); wedge {
		trace.Begin(name, func() string { return "injected " + r.String() + ": never returns" })
		inject.Block()
	}
	if code, skip, r := inject.Call(name); skip {
		sp := trace.Begin(name, func() string { return "injected " + r.String() + ": not called" })
		if code == 0 {
			sp.End(0, "OK", nil)
			return nil
		}
		err := syscall.Errno(code)
		sp.EndErr(err, nil)
		return err
	}
	sp := trace.Begin(name, args)
	err := call()
	sp.EndErr(err, nil)
	return err
}
