// Command p2pcensus reads the results.json of many runs of one suite on one
// machine (a device census, scripts/device-census.sh) and says, per case,
// how often it did not meet its expected outcome. A healthy machine passes
// every time (issue 35): one miss anywhere is exit 1, and the miss is
// listed with its detail so it can be root-caused, never retried away.
//
//	p2pcensus [--kmsg=FILE [--kmsg-before=FILE]] [--out=census.txt] results.json...
//
// A miss is a case whose verdict gates, a tolerated or known flake, a
// first attempt the gate had to rerun, or (--kmsg) a GPU fault line of the
// machine's kernel log that names a rank pid of a case that does not
// expect a crash, or a pid no case of the census ran (a fault nobody owns).
// Lines already in --kmsg-before (the log read before the first run) are
// not the census's: the machine's log outlives a run.
// Exit 0: every run of every case met its expectation; 1: a miss; 2: usage
// or an unreadable file.
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

	"p2patomics/harness/report"
	"p2patomics/internal/cli"
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
}

type pidOwner struct {
	id       string
	expected report.Outcome
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p2pcensus", flag.ContinueOnError)
	kmsgPath := fs.String("kmsg", "", "the machine's kernel log over the census (dmesg output)")
	beforePath := fs.String("kmsg-before", "", "the kernel log read before the census (its lines are not the census's)")
	outPath := fs.String("out", "", "also write the table here")
	// internal/cli: --help on stdout, exit 0; a bad flag one line, exit 2.
	const usage = "usage: p2pcensus [--kmsg=FILE] [--kmsg-before=FILE] [--out=FILE] results.json..."
	files, code, done := cli.Parse(fs, args, usage, stdout, stderr)
	if done {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "p2pcensus: no results.json given (%s)\n", usage)
		return 2
	}
	c := &census{cases: map[string]*tally{}, pids: map[int]pidOwner{}, verdict: map[string]int{}, owned: map[string]int{}}
	for _, p := range files {
		r, err := report.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %v\n", err)
			return 2
		}
		c.add(r)
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
		if err := os.WriteFile(*outPath, []byte(text), 0o644); err != nil {
			fmt.Fprintf(stderr, "p2pcensus: %v\n", err)
			return 2
		}
	}
	if c.missed() > 0 || len(kmsgMisses) > 0 {
		return 1
	}
	return 0
}

// add counts one run.
func (c *census) add(r *report.Report) {
	c.runs++
	if r.Summary != nil {
		c.verdict[r.Summary.Verdict]++
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
}

// miss says why a result did not meet its expectation, or "".
func miss(res report.Result) string {
	switch {
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
	n := 0
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
	fmt.Fprintf(&b, "# census: %d runs, %d cases, run verdicts %v\n", c.runs, len(ids), c.verdict)
	if len(c.walls) > 0 {
		fmt.Fprintf(&b, "# suite wall: min %.1f s, median %.1f s, max %.1f s\n", c.walls[0], c.walls[len(c.walls)/2], c.walls[len(c.walls)-1])
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
	fmt.Fprintf(&b, "p2pcensus: %d runs × %d cases, %d misses, %d unowned or misplaced GPU fault lines\n", c.runs, len(ids), c.missed(), len(kmsgMisses))
	return b.String()
}
