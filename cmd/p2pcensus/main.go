// Command p2pcensus reads the results.json of many runs of one suite on one
// machine (a device census, scripts/device-census.sh) and says, per case,
// how often it did not meet its expected outcome. A healthy machine passes
// every time (issue 35): one miss anywhere is exit 1, and the miss is
// listed with its detail so it can be root-caused, never retried away.
//
//	p2pcensus [--kmsg=FILE [--kmsg-before=FILE]] [--out=census.txt] results.json...
//
// Every run is judged again first (expect.JudgeReport, the judge every tool
// uses): a recorded verdict that its own outcomes contradict (a crash
// marked expected) is never believed.
//
// A miss is a case whose verdict gates, a tolerated or known flake, a
// first attempt the gate had to rerun, a case that did not run to its end
// (outcome not-run or incomplete), or (--kmsg) a GPU fault line of the
// machine's kernel log that names a rank pid of a case that does not
// expect a crash, or a pid no case of the census ran (a fault nobody owns).
// A run that is not a finished PASS is a miss of its own: a record of no
// run (the no-plan stub, no case), a checkpoint of a run that never
// finished (state running: a killed suite), an interrupted run, and a run
// whose verdict is FAIL for any reason, its run faults (summary.run_faults)
// included.
// Lines already in --kmsg-before (the log read before the first run) are
// not the census's: the machine's log outlives a run.
//
// Exit status: 0 every run of every case met its expectation; 1 a miss
// (a case's, a run's or the kernel log's); 2 usage, an unreadable file or
// an --out that cannot be written safely.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
	"p2patomics/internal/cli"
	"p2patomics/internal/safefile"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// tally is one case over the census.
type tally struct {
	runs, misses int
	details      []string
}

// census is what the files said.
type census struct {
	runs    int
	cases   map[string]*tally
	pids    map[int]pidOwner // every rank pid of every case, to own kernel-log lines
	walls   []float64
	verdict map[string]int // run verdicts (PASS/FAIL) counted
	owned   map[string]int // GPU fault lines per case that expects a crash
	// perRun is each run's case count (what the closing line says: runs
	// of one suite may still differ, an interrupted or narrowed one).
	perRun []int
	// runMisses are the runs that were not a finished PASS, one line each.
	runMisses []string
}

type pidOwner struct {
	id       string
	expected report.Outcome
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pcensus", flag.ContinueOnError)
	kmsgPath := fs.String("kmsg", "", "the machine's kernel log over the census (dmesg output, a `FILE`)")
	beforePath := fs.String("kmsg-before", "", "the kernel log read before the census (a `FILE`; its lines are not the census's)")
	outPath := fs.String("out", "", "also write the table to this `FILE` (never through a link)")
	// internal/cli: --help on stdout, exit 0; a bad flag one line, exit 2.
	const usage = "usage: p2pcensus [--kmsg=FILE] [--kmsg-before=FILE] [--out=FILE] RUN/results.json|RUN/ ..."
	const help = `Reads the results.json of many runs of one suite on one machine (a run's
folder means its results.json) and says, per case, how often it did not
meet its expected outcome. Every run is judged again from its outcomes.
A miss: a gating verdict, a flake, a rerun, a case that did not run to its
end, a GPU fault line (--kmsg); a run that is not a finished PASS
(interrupted, killed, no plan, run faults, FAIL) is a miss of its own.

Exit status: 0 every run of every case met its expectation; 1 a miss;
2 a usage error, an unreadable file or an --out that cannot be written
safely (one line on stderr).`
	files, code, done := cli.ParseHelp(fs, args, usage, help, stdout, stderr)
	if done {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "p2pcensus: no results.json given (%s)\n", usage)
		return 2
	}
	c := &census{cases: map[string]*tally{}, pids: map[int]pidOwner{}, verdict: map[string]int{}, owned: map[string]int{}}
	for _, p := range files {
		p = cli.ResultsPath(p)
		r, err := report.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %v\n", err)
			return 2
		}
		if err := c.add(p, r); err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %s: %v\n", p, err)
			return 2
		}
	}
	var kmsgMisses []string
	if *kmsgPath != "" {
		var err error
		if kmsgMisses, err = c.kernelLog(*kmsgPath, *beforePath); err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %v\n", err)
			return 2
		}
	}
	text := c.table(kmsgMisses)
	fmt.Fprint(stdout, text)
	if *outPath != "" {
		// Never through another user's link (internal/safefile: the
		// suite's --out rule; issue 49 B6 overwrote root's file).
		if err := safefile.WriteFile("--out", *outPath, []byte(text), 0o644); err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %v\n", err)
			return 2
		}
	}
	if c.missed() > 0 || len(kmsgMisses) > 0 {
		return 1
	}
	return 0
}

// add counts one run (read from path): judged again first (the judge every
// tool uses, never the recorded verdicts alone), then every case, and the
// run itself when it is not a finished PASS.
func (c *census) add(path string, r *report.Report) error {
	c.runs++
	c.perRun = append(c.perRun, len(r.Results))
	if err := r.NoPlan(); err != nil {
		c.verdict[report.NoResult]++
		c.runMisses = append(c.runMisses, fmt.Sprintf("run %d (%s): %v", c.runs, path, err))
		return nil
	}
	if err := expect.JudgeReport(r, expect.Rejudge{}); err != nil {
		return err
	}
	c.verdict[r.Summary.Verdict]++
	switch {
	case r.State == report.StateRunning:
		c.runMisses = append(c.runMisses, fmt.Sprintf("run %d (%s): a checkpoint of a run that never finished (state running: the suite was killed); %s", c.runs, path, r.Summary.Line))
	case r.Summary.Verdict != report.VerdictPass:
		c.runMisses = append(c.runMisses, fmt.Sprintf("run %d (%s): %s", c.runs, path, r.Summary.Line))
	}
	if r.Timing != nil {
		c.walls = append(c.walls, r.Timing.SuiteWallS)
	}
	for _, res := range r.Results {
		id := res.ID()
		t := c.cases[id]
		if t == nil {
			t = &tally{}
			c.cases[id] = t
		}
		t.runs++
		if why := miss(res); why != "" {
			t.misses++
			t.details = append(t.details, fmt.Sprintf("run %d: %s", c.runs, why))
		}
		for _, rk := range res.Ranks {
			c.pids[rk.Pid] = pidOwner{id: id, expected: res.Expected}
		}
	}
	return nil
}

// miss says why a result did not meet its expectation, or "".
func miss(res report.Result) string {
	switch {
	case res.Outcome == report.NotRunOutcome, res.Outcome == report.Incomplete, res.Verdict == report.NotRun:
		return fmt.Sprintf("did not run to its end: %s (verdict %s, expected %s): %s", res.Outcome, res.Verdict, res.Expected, res.Detail)
	case res.Verdict.Gating(), res.Verdict == report.Flake, res.Verdict == report.KnownFlake:
		return fmt.Sprintf("%s: %s (expected %s): %s", res.Verdict, res.Outcome, res.Expected, res.Detail)
	case res.Rerun != nil:
		return fmt.Sprintf("first attempt %s, rerun %s: %s", res.Outcome, res.Rerun.Outcome, res.Detail)
	case res.Expected != report.Crash && xidLine(res.KernelLog) != "":
		return fmt.Sprintf("GPU fault in the kernel log of a case that expects %s: %s", res.Expected, xidLine(res.KernelLog))
	}
	return ""
}

var reXid = regexp.MustCompile(`NVRM: Xid|amdgpu.*(?:page fault|Memory access fault)`)

// xidLine is the first GPU fault line of a case's kernel log, or "".
func xidLine(lines []string) string {
	for _, l := range lines {
		if reXid.MatchString(l) {
			return l
		}
	}
	return ""
}

var rePid = regexp.MustCompile(`\bpid[= ](\d+)`)

// kernelLog checks every GPU fault line of the machine's kernel log: it must
// name the pid of a rank of a case that expects a crash.
func (c *census) kernelLog(path, beforePath string) ([]string, error) {
	old := map[string]bool{}
	if beforePath != "" {
		b, err := os.ReadFile(beforePath)
		if err != nil {
			return nil, fmt.Errorf("--kmsg-before: %w", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			old[l] = true
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--kmsg: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if old[l] || !reXid.MatchString(l) {
			continue
		}
		m := rePid.FindStringSubmatch(l)
		if m == nil {
			out = append(out, "kernel log: a GPU fault naming no pid: "+l)
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		o, ok := c.pids[pid]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("kernel log: a GPU fault from pid %d, no rank of the census: %s", pid, l))
		case o.expected != report.Crash:
			out = append(out, fmt.Sprintf("kernel log: a GPU fault from pid %d, a rank of %s (expects %s): %s", pid, o.id, o.expected, l))
		default:
			c.owned[o.id]++
		}
	}
	return out, sc.Err()
}

func (c *census) missed() int {
	n := len(c.runMisses)
	for _, t := range c.cases {
		n += t.misses
	}
	return n
}

// table is the census: a header, then every case that missed, then the
// kernel log's findings and a closing line.
func (c *census) table(kmsgMisses []string) string {
	var b strings.Builder
	ids := make([]string, 0, len(c.cases))
	for id := range c.cases {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	sort.Float64s(c.walls)
	fmt.Fprintf(&b, "# census: %d runs, %d distinct cases, run verdicts: %s\n", c.runs, len(ids), counts(c.verdict))
	if len(c.walls) > 0 {
		fmt.Fprintf(&b, "# suite wall: min %.1f s, median %.1f s, max %.1f s\n", c.walls[0], c.walls[len(c.walls)/2], c.walls[len(c.walls)-1])
	}
	for _, m := range c.runMisses {
		fmt.Fprintf(&b, "# run not a finished PASS: %s\n", m)
	}
	fmt.Fprintf(&b, "# case  runs  misses\n")
	for _, id := range ids {
		t := c.cases[id]
		fmt.Fprintf(&b, "%s %d %d\n", id, t.runs, t.misses)
		for _, d := range t.details {
			fmt.Fprintf(&b, "#   %s\n", d)
		}
	}
	for id, n := range c.owned {
		fmt.Fprintf(&b, "# kernel log: %d GPU fault lines from ranks of %s, which expects a crash\n", n, id)
	}
	for _, k := range kmsgMisses {
		fmt.Fprintf(&b, "# %s\n", k)
	}
	fmt.Fprintf(&b, "p2pcensus: %s, %d misses (%d of them whole runs), %d unowned or misplaced GPU fault lines\n", c.shape(), c.missed(), len(c.runMisses), len(kmsgMisses))
	return b.String()
}

// shape is "3 runs × 134 cases", or each run's own count where they
// differ ("3 runs (134, 134 and 84 cases)"): a run that stopped early is
// never counted as a whole one.
func (c *census) shape() string {
	same := true
	for _, n := range c.perRun {
		same = same && n == c.perRun[0]
	}
	if same && len(c.perRun) > 0 {
		return fmt.Sprintf("%d runs × %d cases", c.runs, c.perRun[0])
	}
	ns := make([]string, len(c.perRun))
	for i, n := range c.perRun {
		ns[i] = strconv.Itoa(n)
	}
	last := len(ns) - 1
	return fmt.Sprintf("%d runs (%s and %s cases)", c.runs, strings.Join(ns[:last], ", "), ns[last])
}

// counts renders verdict counts in plain words, most common first:
// "2 PASS, 1 FAIL" (never Go's map syntax).
func counts(m map[string]int) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if m[ks[i]] != m[ks[j]] {
			return m[ks[i]] > m[ks[j]]
		}
		return ks[i] < ks[j]
	})
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
