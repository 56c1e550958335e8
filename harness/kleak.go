package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The leak check's kernel view. A rank's MemInfo reply is its backend's
// own accounting (the host backend's free memory is its total less what
// it believes it mapped), so a driver whose unmap says success and does
// nothing (noop:munmap) leaked under a passing leak check. The kernel's
// view cannot be talked round: the parent reads each rank's
// /proc/<pid>/maps and sums the bytes of shared-memory (memfd) mappings
// before and after the case; more after is a leak. (The fd count the
// rank reports is already the kernel's: /proc/self/fd.)

// memfdBytes is the bytes of pid's mappings backed by a memfd: the host
// backend's allocations and imports, and the harness's own trace ring and
// injector counters (mapped once per rank, so equal before and after).
func memfdBytes(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, fmt.Errorf("leak check: %w", err)
	}
	var sum uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/memfd:") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || z < a {
			return 0, fmt.Errorf("leak check: /proc/%d/maps: unreadable range %q", pid, f[0])
		}
		sum += z - a
	}
	return sum, nil
}

// kernelBaseline is memfdBytes of every rank of w, in rank order.
func kernelBaseline(w *World) ([]uint64, error) {
	out := make([]uint64, len(w.Procs))
	for i, p := range w.Procs {
		n, err := memfdBytes(p.Pid)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// kernelLeaks names each rank whose memfd mappings grew over the case.
func kernelLeaks(w *World, before []uint64) (string, error) {
	after, err := kernelBaseline(w)
	if err != nil {
		return "", err
	}
	var leaks []string
	for i := range before {
		if i < len(after) && after[i] > before[i] {
			leaks = append(leaks, fmt.Sprintf("rank %d maps %d more bytes of shared memory than before the case (/proc/%d/maps)", i, after[i]-before[i], w.Procs[i].Pid))
		}
	}
	return strings.Join(leaks, "; "), nil
}
