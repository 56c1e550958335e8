package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// Plant names a case the catalogue builds only for a check of the suite
// itself, which plants it in a child suite through its environment
// variable: never in a user's run, never a flag (docs/FLAGS.md, "Internal
// switches"). The catalogue builds the case (its id, labels and body, like
// its own: Planter); the suite decides when it is planned and, for the
// SIGTERM canary, which id the child runs, so neither side spells the
// other's id or variable.
type Plant int

const (
	// PlantSleep is a case still running when its suite is terminated:
	// the SIGTERM canary's child runs it, scripts/check-gate.sh kills a
	// rank or the suite in it.
	PlantSleep Plant = iota
	// PlantFlaky fails on its first run in a suite process and passes on
	// the rerun: scripts/check-gate.sh's planted flake.
	PlantFlaky
	// PlantPanic is a case whose body panics in the suite process:
	// scripts/check-cli.sh's proof that Ginkgo's report of the panic
	// reaches the results (Run.HeardSpec), a fail naming it.
	PlantPanic
	plants
)

// plantEnv is each plant's variable ("1" plants it), spelt here only.
var plantEnv = [plants]string{PlantSleep: "P2PAT_INTERNAL_SLEEP_CASE", PlantFlaky: "P2PAT_INTERNAL_FLAKY", PlantPanic: "P2PAT_INTERNAL_PANIC"}

// PlantFunc builds a planted case for one backend and kind.
type PlantFunc func(o *Options, backend, kind string) *harness.Case

var planters [plants]PlantFunc

// Planter registers the catalogue's builder of p (package specs, at init).
func Planter(p Plant, f PlantFunc) { planters[p] = f }

// planted is the planted cases this process's environment asks for, for
// one backend and kind.
func planted(o *Options, backend, kind string) []*harness.Case {
	var cs []*harness.Case
	for p := range plants {
		if os.Getenv(plantEnv[p]) == "1" && planters[p] != nil {
			cs = append(cs, planters[p](o, backend, kind))
		}
	}
	return cs
}

// suiteGroup is the group of the suite's own cases.
const suiteGroup = "host.suite"

// selfChecks are the cases that test the suite process itself: SIGTERM to
// a running suite, and no fd or child-process leaks across the run. They
// read the run's worlds (the leak check closes them) and the suite's fd
// count at its first case (noteStart).
type selfChecks struct {
	opts     *Options
	worlds   *worlds
	once     sync.Once
	startFds int
}

// noteStart counts the suite's fds at its first case, once Ginkgo has
// opened what it keeps.
func (s *selfChecks) noteStart() { s.once.Do(func() { s.startFds = countFds() }) }

// cases are the suite's own cases.
func (s *selfChecks) cases() []*harness.Case {
	return []*harness.Case{{
		ID: "host.suite.canary.sigterm", Case: report.Case{Backend: backends.HostName, Kind: "suite", Spec: "canary", Variant: "sigterm", Ranks: 2},
		Labels: []string{backends.HostName, "suite", "canary"}, Expected: report.Pass, Timeout: 60 * time.Second,
		Repro:      ReproBinary() + " --backend=host --case=host.suite.canary.sigterm",
		Standalone: s.sigtermCanary,
	}, {
		ID: "host.suite.leaks.fds_children", Case: report.Case{Backend: backends.HostName, Kind: "suite", Spec: "leaks", Variant: "fds_children", Ranks: 2},
		Labels: []string{backends.HostName, "suite", "leaks"}, Expected: report.Pass, Timeout: 30 * time.Second,
		Repro:      ReproBinary() + " --backend=host",
		Standalone: s.leakCheck,
	}}
}

// sigtermCanary runs a second suite on the planted sleep case, sends it
// SIGTERM mid-case, and checks it wrote results.json with that case
// incomplete.
func (s *selfChecks) sigtermCanary() (report.Outcome, string) {
	// The child's --out is a folder of this run's own --out (kept as
	// evidence): a temporary folder elsewhere was left behind whenever this
	// suite was itself signalled during the canary.
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("p2pat-sigterm-%d", os.Getpid()))
	if prepared != nil {
		dir = filepath.Join(prepared.Path, "suite", "sigterm")
	} else {
		defer os.RemoveAll(dir)
	}
	return canaryWithRoom(dir, s.sigtermChild, freeBytes)
}

// sigtermChild runs the canary's child suite with its --out at dir: the
// outcome, why, and the child's stderr (its last 4 KiB).
func (s *selfChecks) sigtermChild(dir string) (report.Outcome, string, string) {
	cmd, err := s.sleepChild(dir)
	if err != nil {
		return report.Error, err.Error(), ""
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return report.Error, "start child suite: " + err.Error(), ""
	}
	if !terminateMidCase(cmd) {
		return report.Fail, "the suite did not exit within 20 s of SIGTERM", stderr.String()
	}
	if out, why := checkTerminated(cmd, dir); out != report.Pass {
		return out, why, stderr.String()
	}
	if err := keepCanaryRecord(dir); err != nil {
		return report.Error, err.Error(), ""
	}
	return report.Pass, "child suite got SIGTERM mid-case, exited 4 (INTERRUPTED), wrote results.json with the case incomplete", ""
}

// keepCanaryRecord leaves of the SIGTERM canary's child run in dir only
// its results.json (the case's evidence), beside a note saying whose it
// is. The child's junit.xml is of another run than this one: a CI job
// collecting <out>/**/junit.xml must not take it for a run of its own. Its
// summary.txt, report.html and heatmaps said INTERRUPTED in a green out/
// (issue 49 U15): they go too.
func keepCanaryRecord(dir string) error {
	for _, f := range []string{"junit.xml", "summary.txt", "report.html", "results.csv", "failures.csv", "heatmaps"} {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("remove the child's %s: %w", f, err)
		}
	}
	// The note is a courtesy: a disk too full for it takes nothing from
	// the canary's verdict.
	_ = report.WriteAtomic(filepath.Join(dir, CanaryNote), []byte(canaryNote))
	return nil
}

// CanaryNote is the note beside the SIGTERM canary's child record.
const CanaryNote = "CANARY.txt"

const canaryNote = `This folder is the SIGTERM canary's own (host.suite.canary.sigterm): a child
suite the run started and interrupted on purpose. Its results.json says
INTERRUPTED by design; it is that case's evidence, not the run's verdict,
which is ../../results.json.
`

// canaryWithRoom runs the SIGTERM canary's child (run) with its --out at
// dir. A child that could not write its record for want of space (a disk
// that filled under the run) says nothing about SIGTERM: it is run again
// in a private temporary folder elsewhere, and where there is no room
// there either the outcome is an error that names the full disk, never a
// fail of the canary (issue 49 S5: "host.suite.canary.sigterm pass →
// fail: after SIGTERM (exit 2) no readable results.json" blamed the
// canary for a disk filled 4 s into the run).
func canaryWithRoom(dir string, run func(dir string) (report.Outcome, string, string), free func(string) (uint64, bool)) (report.Outcome, string) {
	out, why, stderr := run(dir)
	if out == report.Pass || !noRoom(dir, stderr, free) {
		return out, why
	}
	full := "--out is full (" + freeText(dir, free) + "): the SIGTERM canary's child suite could not write its record there (" + why + ")"
	tmp, err := os.MkdirTemp("", "p2pat-sigterm-")
	if err != nil {
		return report.Error, full + ", and no folder could be made elsewhere: " + err.Error()
	}
	defer os.RemoveAll(tmp)
	out, why, stderr = run(tmp)
	switch {
	case out == report.Pass:
		return report.Pass, why + "; in " + tmp + ", removed after, since " + full
	case noRoom(tmp, stderr, free):
		return report.Error, full + ", nor in " + tmp + " (" + freeText(tmp, free) + ")"
	}
	return out, why
}

// noRoom reports whether a child suite's failure in dir was the disk's:
// its stderr says so, or dir's file system has under 1 MiB free.
func noRoom(dir, stderr string, free func(string) (uint64, bool)) bool {
	if strings.Contains(stderr, "no space left on device") || strings.Contains(stderr, "disk quota exceeded") ||
		strings.Contains(stderr, "KiB free; the record of") || strings.Contains(stderr, "--out is nearly full") {
		return true
	}
	n, ok := free(dir)
	return ok && n < 1<<20
}

func freeText(dir string, free func(string) (uint64, bool)) string {
	if n, ok := free(dir); ok {
		return fmt.Sprintf("%d KiB free", n>>10)
	}
	return "free space unknown"
}

// freeBytes is the space free to an unprivileged writer on the file
// system of dir, or of its nearest existing folder up.
func freeBytes(dir string) (uint64, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err == nil {
			return st.Bavail * uint64(st.Bsize), true
		}
		if filepath.Dir(d) == d {
			return 0, false
		}
	}
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4<<10 {
		t.b = t.b[len(t.b)-4<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// sleepChild is the child suite of the SIGTERM canary: the host backend,
// this run's rank count, --case naming the sleep case the catalogue plants
// (its id as the catalogue builds it for those options), out at dir.
func (s *selfChecks) sleepChild(dir string) (*exec.Cmd, error) {
	if planters[PlantSleep] == nil {
		return nil, fmt.Errorf("the catalogue registers no sleep case (suite.Planter(suite.PlantSleep, ...))")
	}
	o := *s.opts
	o.Backend, o.Alloc = backends.HostName, ""
	c := planters[PlantSleep](&o, backends.HostName, backends.Host.KindNames()[0])
	cmd := exec.Command("/proc/self/exe", "--backend="+backends.HostName, fmt.Sprintf("--ranks=%d", o.Ranks), "--case="+c.ID, "--out="+dir)
	// The child gets this suite's environment minus every P2PAT_ setting
	// (a user's P2PAT_ALLOC=vmm would make it refuse the host case).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "P2PAT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, plantEnv[PlantSleep]+"=1")
	// The child is this binary, whose own Go tests this run already
	// passed: it skips them (1.2 s of a 2.3 s canary on host; issue 52).
	cmd.Env = append(cmd.Env, OwnTestsPassedEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// OwnTestsPassedEnv, set to a process's pid in its child's environment,
// tells that child (the same binary) that its own Go tests passed in that
// parent: it skips running them again. A value that is not the child's
// parent's pid is ignored (a user's stray setting runs them as ever).
const OwnTestsPassedEnv = "P2PAT_INTERNAL_OWN_TESTS_PASSED"

// terminateMidCase waits until the child's rank exists and the case is
// under way, sends SIGTERM, and waits for the child to exit; false (the
// child SIGKILLed) when it did not within 20 s.
func terminateMidCase(cmd *exec.Cmd) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if hasChildRank(cmd.Process.Pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return false
	}
}

// checkTerminated judges what the terminated child left: results.json with
// its one case incomplete, exit 4 and the INTERRUPTED (SIGTERM) verdict,
// and no rank left alive.
func checkTerminated(cmd *exec.Cmd, dir string) (report.Outcome, string) {
	code := cmd.ProcessState.ExitCode()
	rep, err := report.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		return report.Fail, fmt.Sprintf("after SIGTERM (exit %d) no readable results.json: %v", code, err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Outcome != report.Incomplete {
		b, _ := json.Marshal(rep.Results)
		return report.Fail, fmt.Sprintf("after SIGTERM the case should be incomplete; results: %s", b)
	}
	if code != ExitInterrupted {
		return report.Fail, fmt.Sprintf("suite exited %d after SIGTERM, want %d (interrupted)", code, ExitInterrupted)
	}
	if rep.Summary == nil || rep.Summary.Verdict != report.VerdictInterrupted || rep.Summary.Interrupted != "SIGTERM" {
		b, _ := json.Marshal(rep.Summary)
		return report.Fail, fmt.Sprintf("after SIGTERM the verdict should be INTERRUPTED (SIGTERM); summary: %s", b)
	}
	if hasChildRank(cmd.Process.Pid) {
		return report.Fail, "a rank of the terminated suite is still alive"
	}
	return report.Pass, ""
}

// hasChildRank reports whether pid has a living child named like a rank.
// Ranks are forked by the suite's spawner thread, so every task's children
// list is read, not only the main thread's.
func hasChildRank(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(b)) {
			if cmdline, err := os.ReadFile("/proc/" + c + "/cmdline"); err == nil && strings.HasPrefix(string(cmdline), harness.RankArgv0) {
				return true
			}
		}
	}
	return false
}

// leakCheck closes every world and compares the suite's open fds and child
// processes with what it had at the start.
func (s *selfChecks) leakCheck() (report.Outcome, string) {
	s.worlds.closeAll()
	time.Sleep(50 * time.Millisecond)
	now := countFds()
	kids := children()
	var bad []string
	if now > s.startFds {
		bad = append(bad, fmt.Sprintf("%d open fds, %d at the start (%s)", now, s.startFds, fdList()))
	}
	if len(kids) > 0 {
		bad = append(bad, fmt.Sprintf("child processes left: %s", strings.Join(kids, " ")))
	}
	if len(bad) > 0 {
		return report.Fail, strings.Join(bad, "; ")
	}
	return report.Pass, fmt.Sprintf("%d fds before and after, no child processes", now)
}

func children() []string {
	var out []string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err == nil {
			out = append(out, strings.Fields(string(b))...)
		}
	}
	return out
}

func fdList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var s []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		s = append(s, e.Name()+"="+l)
	}
	return strings.Join(s, " ")
}
