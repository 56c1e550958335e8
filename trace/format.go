package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Failing returns the index of the call to blame in recs, or -1 when recs
// is empty: the last call still in flight (it never returned: the rank
// crashed or hung inside it), else the first binding call that failed (a
// request record only when none of its calls did), else the
// last call.
func Failing(recs []Record) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].InFlight {
			return i
		}
	}
	// A request record comes before the calls it made, and fails with
	// them: the call that failed (cuStreamSynchronize = 700) says more than
	// the request that carried it.
	for i, r := range recs {
		if r.Err && !strings.HasPrefix(r.Name, "request.") {
			return i
		}
	}
	for i, r := range recs {
		if r.Err {
			return i
		}
	}
	return len(recs) - 1
}

// Line formats one record as Format does, with t the seconds since the
// first record of the listing and without the failure mark.
func Line(r Record, t float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6d +%.6f %s(%s) = ", r.Seq, t, r.Name, oneLine(r.Args))
	if r.InFlight {
		fmt.Fprintf(&b, "<no return> (in flight) %s", r.Dur)
		return b.String()
	}
	name := r.CodeName
	if name == "" {
		if r.Err {
			name = "ERROR"
		} else {
			name = "OK"
		}
	}
	if r.Code >= 0x100 || r.Code < 0 {
		fmt.Fprintf(&b, "%s (%d %#x) %s", name, r.Code, uint64(r.Code), r.Dur)
	} else {
		fmt.Fprintf(&b, "%s (%d) %s", name, r.Code, r.Dur)
	}
	return b.String()
}

// Format writes one line per call,
//
//	seq +t.tttttt name(args) = CODE_NAME (code) dur
//
// with t in seconds since the first listed call, a "... N calls not kept"
// line where the ring overwrote records, and, when mark is set, the call
// chosen by Failing marked with "<-- FAILED".
func Format(w io.Writer, recs []Record, mark bool) error {
	bw := bufio.NewWriter(w)
	fail := -1
	if mark {
		fail = Failing(recs)
	}
	for i, r := range recs {
		if i > 0 && r.Seq > recs[i-1].Seq+1 {
			fmt.Fprintf(bw, "%6s ... %d calls not kept\n", "", r.Seq-recs[i-1].Seq-1)
		}
		t := r.Start.Sub(recs[0].Start).Seconds()
		bw.WriteString(Line(r, t))
		if i == fail {
			bw.WriteString("  <-- FAILED")
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

func errCode(err error) (int64, string) {
	if err == nil {
		return 0, "OK"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return int64(errno), n
		}
		return int64(errno), "errno " + strconv.Itoa(int(errno))
	}
	return -1, err.Error()
}

// Hex formats an integer (handle, pointer, flag word) as 0x...
func Hex[T ~int | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](v T) string {
	return "0x" + strconv.FormatUint(uint64(v), 16)
}

// KV formats alternating keys and values as "k=v, k=v". Strings and the
// results of Hex are written as they are, other values with %v. Use it
// inside the args closures, where it runs only when tracing is on.
func KV(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v=%v", kv[i], kv[i+1])
	}
	if len(kv)%2 == 1 {
		if len(kv) > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v", kv[len(kv)-1])
	}
	return b.String()
}
