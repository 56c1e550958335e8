package rank

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"p2patomics/rank/backend"
	"p2patomics/wire"
)

// Canaries are the ways a rank can die or misbehave that the harness must
// classify on every run. Each is a real fault, not a simulation: a NULL
// dereference inside C code called through purego, one on a thread that C
// created, a libc abort, a Go panic, a hang, an exit in the middle of the
// protocol and a malformed reply.
var canaries = map[string]func(s *server) error{
	"purego_segv": func(*server) error { libc().strlen(0); return nil },
	"cthread_segv": func(*server) error {
		c := libc()
		// The start routine is strlen itself and its argument NULL: the
		// new thread faults in C, on a thread the Go runtime never saw.
		var tid uint64
		if rc := c.pthreadCreate(&tid, 0, c.strlenAddr, 0); rc != 0 {
			return fmt.Errorf("pthread_create: %d", rc)
		}
		time.Sleep(10 * time.Second)
		return errors.New("the C thread did not fault")
	},
	"abort": func(*server) error { libc().abort(); return nil },
	"panic": func(*server) error { panic("p2patomics canary: deliberate panic in a rank") },
	"hang": func(*server) error {
		select {} // blocks this goroutine forever; the parent's deadline must fire
	},
	"exit_mid_protocol": func(*server) error { os.Exit(0); return nil },
	"malformed_reply": func(s *server) error {
		_ = wire.SendRaw(s.sock, []byte("P2PA\x01\x00garbage"))
		// Block so the parent reads the garbage, not a second reply.
		time.Sleep(time.Hour)
		return nil
	},
	"sleep": func(*server) error {
		// The sleeping thread is named p2pat-sleep (/proc/<pid>/task/*/comm)
		// while the case is under way, so a check can kill this rank
		// mid-case without guessing how long the world took to start.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		setThreadName("p2pat-sleep")
		defer setThreadName("p2patomics-ran") // comm holds 15 bytes
		time.Sleep(30 * time.Second)
		return nil
	},
	// slow_reply answers, but late: the parent has given up on the request
	// by then, and the reply must be dropped, not taken for the next one's.
	"slow_reply": func(*server) error { time.Sleep(500 * time.Millisecond); return nil },
	// sticky_fault leaves the rank as a GPU fault in a kernel leaves a CUDA
	// context: the request that caused it returns OK, the next that asks
	// the device (meminfo) returns the sticky fault and the rank exits (the
	// planted bug for the end-of-case probe).
	"sticky_fault": func(s *server) error {
		s.sticky = &backend.Fault{Vendor: "canary", Kind: "gpu", Code: 700, Name: "STICKY_FAULT_CANARY", Reason: "planted by the sticky_fault canary"}
		return nil
	},
	// leak_buffer allocates a buffer behind the suite's back: the leak check
	// must notice it (the planted bug for that verification path).
	"leak_buffer": func(s *server) error {
		if s.be == nil {
			return fmt.Errorf("leak_buffer before hello")
		}
		b, exp, err := s.be.Alloc(s.be.Kinds()[0], 1<<20)
		if err != nil {
			return err
		}
		if exp.Fd >= 0 {
			_ = syscall.Close(exp.Fd)
		}
		s.add(b)
		return nil
	},
}

func canary(s *server, how string) error {
	f, ok := canaries[how]
	if !ok {
		return fmt.Errorf("unknown canary %q", how)
	}
	return f(s)
}

type libcFuncs struct {
	strlen        func(p uintptr) uintptr
	abort         func()
	pthreadCreate func(tid *uint64, attr uintptr, start uintptr, arg uintptr) int32
	strlenAddr    uintptr
}

var (
	libcOnce sync.Once
	libcF    libcFuncs
)

// libc loads the few libc functions the canaries need; only canaries use it.
func libc() *libcFuncs {
	libcOnce.Do(func() {
		h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			panic(fmt.Sprintf("canary: dlopen libc.so.6: %v", err))
		}
		purego.RegisterLibFunc(&libcF.strlen, h, "strlen")
		purego.RegisterLibFunc(&libcF.abort, h, "abort")
		purego.RegisterLibFunc(&libcF.pthreadCreate, h, "pthread_create")
		libcF.strlenAddr, err = purego.Dlsym(h, "strlen")
		if err != nil {
			panic(fmt.Sprintf("canary: dlsym strlen: %v", err))
		}
	})
	return &libcF
}

// setThreadName names the calling OS thread (prctl PR_SET_NAME).
func setThreadName(name string) {
	b := append([]byte(name), 0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0)
	runtime.KeepAlive(b)
}
