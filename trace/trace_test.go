package trace

import (
	"bytes"
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// traced stands for a binding's wrapper: inputs at Begin, outputs at End.
func traced(size uint64, flags int, h *uint64) int64 {
	sp := Begin("cuMemCreate", func() string { return KV("size", Hex(size), "flags", flags) })
	*h = 0xabc0 + size
	var code int64
	if size == 0 {
		code = 1
	}
	sp.End(code, "CUDA_SUCCESS", func() string { return "handle=" + Hex(*h) })
	return code
}

func setup(t testing.TB, on bool) {
	t.Helper()
	Reset()
	if on {
		On()
	} else {
		Off()
	}
	t.Cleanup(func() { Off(); Reset() })
}

func TestDisabledZeroAllocs(t *testing.T) {
	setup(t, false)
	var h uint64
	n := testing.AllocsPerRun(1000, func() { traced(4096, 3, &h) })
	if n != 0 {
		t.Fatalf("disabled trace allocates %v per call, want 0", n)
	}
	e := fmt.Errorf("x")
	n = testing.AllocsPerRun(1000, func() {
		sp := Begin("mmap", func() string { return KV("len", h) })
		sp.EndErr(e, nil)
	})
	if n != 0 {
		t.Fatalf("disabled EndErr allocates %v per call, want 0", n)
	}
	if got := Snapshot(); len(got) != 0 {
		t.Fatalf("disabled trace recorded %d records", len(got))
	}
}

func TestRecordsAndFormat(t *testing.T) {
	setup(t, true)
	var h uint64
	traced(0x4000000, 0, &h)
	sp := Begin("cuMemMap", func() string { return KV("ptr", Hex(uintptr(0x7f0000000000)), "size", 4096) })
	sp.End(700, "CUDA_ERROR_ILLEGAL_ADDRESS", nil)
	Begin("close", func() string { return "fd=9" }).EndErr(syscall.EBADF, nil)
	Begin("hsa_iterate_agents", nil).EndStatus(0x1, "HSA_STATUS_INFO_BREAK", false, nil)

	recs := Snapshot()
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4", len(recs))
	}
	r := recs[0]
	if r.Name != "cuMemCreate" || r.Args != "size=0x4000000, flags=0; handle=0x400abc0" || r.Code != 0 || r.Err || r.InFlight {
		t.Fatalf("record 0 = %+v", r)
	}
	if !recs[1].Err || recs[1].Code != 700 || recs[2].CodeName != "EBADF" || recs[2].Code != 9 || recs[3].Err {
		t.Fatalf("records = %+v", recs)
	}
	if recs[0].Dur < 0 || recs[0].Start.IsZero() || recs[1].Seq != recs[0].Seq+1 {
		t.Fatalf("bad timing/seq: %+v", recs[:2])
	}
	var b bytes.Buffer
	if err := Format(&b, recs, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %q", out)
	}
	if !strings.Contains(lines[0], " +0.000000 cuMemCreate(size=0x4000000, flags=0; handle=0x400abc0) = CUDA_SUCCESS (0) ") {
		t.Errorf("line 0: %q", lines[0])
	}
	if !strings.Contains(lines[1], "cuMemMap(ptr=0x7f0000000000, size=4096) = CUDA_ERROR_ILLEGAL_ADDRESS (700 0x2bc)") || !strings.HasSuffix(lines[1], "<-- FAILED") {
		t.Errorf("line 1 not marked: %q", lines[1])
	}
	if !strings.Contains(lines[2], "close(fd=9) = EBADF (9)") || strings.Contains(lines[2], "FAILED") {
		t.Errorf("line 2: %q", lines[2])
	}
}

func TestFailingChoice(t *testing.T) {
	ok := Record{Seq: 1}
	bad := Record{Seq: 2, Err: true}
	fly := Record{Seq: 3, InFlight: true}
	cases := []struct {
		recs []Record
		want int
	}{
		{nil, -1},
		{[]Record{ok, ok}, 1},
		{[]Record{ok, bad, ok, bad}, 1},
		{[]Record{ok, bad, fly, ok}, 2},
		// The failing call inside a failed request is blamed, not the request.
		{[]Record{ok, {Seq: 4, Name: "request.launch", Err: true}, ok, {Seq: 6, Name: "cuStreamSynchronize", Err: true}}, 3},
		{[]Record{ok, {Seq: 4, Name: "request.launch", Err: true}, ok}, 1},
	}
	for i, c := range cases {
		if got := Failing(c.recs); got != c.want {
			t.Errorf("case %d: Failing = %d, want %d", i, got, c.want)
		}
	}
}

func TestInFlightAndWrap(t *testing.T) {
	setup(t, true)
	hung := Begin("cuStreamSynchronize", func() string { return "stream=0x1" })
	time.Sleep(2 * time.Millisecond)
	recs := Snapshot()
	if len(recs) != 1 || !recs[0].InFlight || recs[0].Dur < 2*time.Millisecond {
		t.Fatalf("in-flight record = %+v", recs)
	}
	var b bytes.Buffer
	Format(&b, recs, true)
	if !strings.Contains(b.String(), "cuStreamSynchronize(stream=0x1) = <no return> (in flight)") || !strings.Contains(b.String(), "<-- FAILED") {
		t.Fatalf("in-flight line: %q", b.String())
	}
	// Overwrite the whole ring while the call is in flight.
	for i := 0; i < Slots+10; i++ {
		Begin("x", nil).End(0, "", nil)
	}
	hung.End(0, "CUDA_SUCCESS", nil)
	recs = Snapshot()
	if len(recs) != Slots {
		t.Fatalf("kept %d, want %d", len(recs), Slots)
	}
	last := recs[len(recs)-1]
	if last.Name != "cuStreamSynchronize" || last.Args != fmt.Sprintf("begun as #%d", hung.seq) || last.InFlight || last.Dur < 2*time.Millisecond {
		t.Fatalf("wrapped in-flight call = %+v", last)
	}
	if recs[0].Seq != last.Seq-Slots+1 {
		t.Fatalf("oldest kept seq %d, last %d", recs[0].Seq, last.Seq)
	}
	// Since and Reset.
	s := Seq()
	Begin("after", nil).End(0, "", nil)
	if got := Since(s); len(got) != 1 || got[0].Name != "after" {
		t.Fatalf("Since = %+v", got)
	}
	open := Begin("open-at-reset", nil)
	Reset()
	open.End(0, "", nil)
	if got := Snapshot(); len(got) != 0 {
		t.Fatalf("after Reset: %+v", got)
	}
}

func TestTruncationAndNewlines(t *testing.T) {
	setup(t, true)
	long := strings.Repeat("a", 1000)
	Begin(strings.Repeat("n", 100), func() string { return long }).End(1, strings.Repeat("C", 100), func() string { return "line1\nline2" })
	Begin("f", func() string { return "x=1" }).End(0, "", func() string { return "y\n2" })
	recs := Snapshot()
	r := recs[0]
	if len(r.Name) != nameMax || !strings.HasSuffix(r.Name, "~") || len(r.CodeName) != codeMax || len(r.Args) != argsMax || !strings.HasSuffix(r.Args, "~") {
		t.Fatalf("truncation: name %d code %d args %d", len(r.Name), len(r.CodeName), len(r.Args))
	}
	var b bytes.Buffer
	Format(&b, recs, false)
	if strings.Count(b.String(), "\n") != 2 || !strings.Contains(b.String(), `f(x=1; y\n2) = OK (0)`) {
		t.Fatalf("format: %q", b.String())
	}
}

func TestConcurrent(t *testing.T) {
	setup(t, true)
	var wg sync.WaitGroup
	const G, N = 8, 1000
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < N; i++ {
				Begin("c", func() string { return KV("g", g, "i", i) }).End(0, "", nil)
				if i%100 == 0 {
					Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	recs := Snapshot()
	if len(recs) != Slots || recs[len(recs)-1].Seq-recs[0].Seq != Slots-1 {
		t.Fatalf("kept %d records, seq %d..%d", len(recs), recs[0].Seq, recs[len(recs)-1].Seq)
	}
	for _, r := range recs {
		if r.InFlight || r.Name != "c" {
			t.Fatalf("bad record %+v", r)
		}
	}
}

// TestSharedSurvivesKill runs a child that traces into a shared ring and
// kills itself with SIGKILL inside a call; the parent still reads the call,
// in flight, with its arguments.
func TestSharedSurvivesKill(t *testing.T) {
	if os.Getenv("P2PAT_TRACE_CHILD") == "1" {
		On()
		if err := AttachShared(3); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		Begin("memfd_create", func() string { return "name=buf" }).End(7, "OK", nil)
		Begin("sendmsg", func() string { return "fd=7, peer=1" }).EndErr(syscall.EPIPE, nil)
		Begin("launch", func() string { return KV("kernel", "add_u64_relaxed_sys", "grid", 132) })
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	f, err := CreateShared("test")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s, err := SharedSeq(f); err != nil || s != 0 {
		t.Fatalf("SharedSeq of a fresh ring = %d, %v", s, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedSurvivesKill$")
	cmd.Env = append(os.Environ(), "P2PAT_TRACE_CHILD=1")
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	recs, err := ReadShared(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("read %d records: %+v", len(recs), recs)
	}
	if recs[1].CodeName != "EPIPE" || !recs[1].Err {
		t.Errorf("sendmsg record %+v", recs[1])
	}
	if r := recs[2]; !r.InFlight || r.Name != "launch" || r.Args != "kernel=add_u64_relaxed_sys, grid=132" {
		t.Errorf("in-flight record %+v", r)
	}
	if s, _ := SharedSeq(f); s != 3 {
		t.Errorf("SharedSeq = %d, want 3", s)
	}
	if got, _ := ReadShared(f, 2); len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("ReadShared since 2 = %+v", got)
	}
	var b bytes.Buffer
	Format(&b, recs, true)
	t.Logf("\n%s", b.String())
	if !strings.Contains(strings.Split(b.String(), "\n")[2], "launch(kernel=add_u64_relaxed_sys, grid=132) = <no return> (in flight)") || !strings.HasSuffix(strings.TrimSpace(b.String()), "<-- FAILED") {
		t.Errorf("format: %s", b.String())
	}
	if _, _, err := Decode(make([]byte, SharedSize), 0); err == nil {
		t.Error("Decode accepted an image without magic")
	}
}

var sink int64

// untraced is traced without the trace calls: the baseline for Disabled.
//
//go:noinline
func untraced(size uint64, flags int, h *uint64) int64 {
	*h = 0xabc0 + size + uint64(flags)
	if size == 0 {
		return 1
	}
	return 0
}

func BenchmarkBaseline(b *testing.B) {
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		sink += untraced(4096, 3, &h)
	}
}

func BenchmarkDisabled(b *testing.B) {
	setup(b, false)
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		sink += traced(4096, 3, &h)
	}
}

func BenchmarkEnabled(b *testing.B) {
	setup(b, true)
	var h uint64
	b.ReportAllocs()
	for b.Loop() {
		sink += traced(4096, 3, &h)
	}
}

// BenchmarkEnabledNoArgs is the ring's own cost: no argument formatting.
func BenchmarkEnabledNoArgs(b *testing.B) {
	setup(b, true)
	b.ReportAllocs()
	for b.Loop() {
		Begin("cuLaunchKernel", nil).End(0, "CUDA_SUCCESS", nil)
	}
}

func BenchmarkEnabledParallel(b *testing.B) {
	setup(b, true)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Begin("cuLaunchKernel", nil).End(0, "CUDA_SUCCESS", nil)
		}
	})
}

// Issue 26 item 12: an empty memfd as the ring is refused (at a44624c the
// first read of the mapping killed the rank with SIGBUS).
func TestAttachSharedRefusesAShortFd(t *testing.T) {
	fd, err := unix.MemfdCreate("empty", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(fd)
	if err := AttachShared(fd); err == nil {
		t.Fatal("an empty memfd was attached as the trace ring")
	}
}
