package perf

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"p2patomics/harness/report"
)

// FileName is the perf baseline's name in an expectation folder; a single
// file is typed by this ending, like fails.txt.
const FileName = "perf.txt"

// Line is one gated metric of perf.txt:
//
//	case-id metric op limit unit | band lo..hi runs=K tol=T% family=F [insensitive]
//
// op limit unit is what the gate compares; band, runs and tol are the
// evidence the limit came from (lo = hi·… is reproducible from them).
type Line struct {
	ID, Metric string
	Op         string // ">=" (higher is better) or "<=" (lower is better)
	Limit      float64
	Unit       string
	Lo, Hi     float64 // the baseline runs' medians, least and greatest
	Runs       int
	Tol        float64 // a fraction
	Family     string
	Reason     string // the comment block above the line
	At         string // file:line
}

// Better is the direction the line was recorded with (its op): the
// metric's declared one when it was recorded.
func (l Line) Better() report.Direction {
	if l.Op == ">=" {
		return report.Higher
	}
	return report.Lower
}

// Key is the metric's identity, "case-id metric".
func (l Line) Key() string { return l.ID + " " + l.Metric }

// Insensitive: the tolerance is too wide to promise a 15 % change.
func (l Line) Insensitive() bool { return l.Tol > Insensitive }

// File is a parsed perf.txt.
type File struct {
	// Stack is the "# stack:" header's text ("vendor=nvidia arch=sm_90
	// driver=580"); the expectation loader checks it like the others.
	Stack string
	// Scope is "machine GPU-…[,GPU-…]" (bound to those GPU UUIDs) or
	// "sku NAME" (any GPU of that name).
	Scope    string
	Recorded string // "# recorded:" header: what runs it came from
	Lines    []Line
}

var (
	idRe   = regexp.MustCompile(`^[a-z0-9._-]+$`)
	lineRe = regexp.MustCompile(`^(\S+) (\S+) (>=|<=) (\S+) (\S+) \| band (\S+)\.\.(\S+) runs=(\d+) tol=(\S+)% family=(.+?)( insensitive)?$`)
)

// Parse reads perf.txt text; path names it in errors ("path:line: why").
func Parse(path string, b []byte) (*File, error) {
	f := &File{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var reason []string
	inComment, n := false, 0
	seen := map[string]string{}
	for sc.Scan() {
		n++
		at := fmt.Sprintf("%s:%d", path, n)
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
			inComment = false
		case strings.HasPrefix(text, "#"):
			body := strings.TrimSpace(strings.TrimPrefix(text, "#"))
			if f.header(body) {
				continue
			}
			if !inComment {
				reason, inComment = reason[:0], true
			}
			reason = append(reason, body)
		default:
			inComment = false
			l, err := parseLine(at, text)
			if err != nil {
				return nil, err
			}
			if prev, dup := seen[l.Key()]; dup {
				return nil, fmt.Errorf("%s: duplicate metric %s (first at %s)", at, l.Key(), prev)
			}
			seen[l.Key()] = at
			l.Reason = strings.Join(reason, " ")
			f.Lines = append(f.Lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return f, nil
}

// header takes a "# stack:", "# scope:" or "# recorded:" comment.
func (f *File) header(body string) bool {
	for _, h := range []struct {
		key string
		to  *string
	}{{"stack:", &f.Stack}, {"scope:", &f.Scope}, {"recorded:", &f.Recorded}} {
		if len(body) >= len(h.key) && strings.EqualFold(body[:len(h.key)], h.key) {
			*h.to = strings.TrimSpace(body[len(h.key):])
			return true
		}
	}
	return false
}

// parseLine reads one metric line; a unit whose direction disagrees with
// the op is refused (a floor on a latency gates nothing: the cautionary
// tale is a vendor floor table with a unit slip).
func parseLine(at, text string) (Line, error) {
	m := lineRe.FindStringSubmatch(text)
	if m == nil {
		return Line{}, fmt.Errorf("%s: want \"case-id metric >=|<= limit unit | band lo..hi runs=K tol=T%% family=F\", got %q", at, text)
	}
	l := Line{ID: m[1], Metric: m[2], Op: m[3], Unit: m[5], Family: m[10], At: at}
	if !idRe.MatchString(l.ID) {
		return Line{}, fmt.Errorf("%s: bad case id %q (want lowercase [a-z0-9._-])", at, l.ID)
	}
	var nums [4]float64
	for i, s := range []string{m[4], m[6], m[7], m[9]} {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Line{}, fmt.Errorf("%s: %q is not a number ≥ 0", at, s)
		}
		nums[i] = v
	}
	l.Limit, l.Lo, l.Hi, l.Tol = nums[0], nums[1], nums[2], nums[3]/100
	l.Runs, _ = strconv.Atoi(m[8])
	// The op is the metric's declared direction, recorded (Record): the
	// unit says nothing about it, so a line is checked against its own
	// band instead — a limit on the far side of it was written by hand the
	// wrong way round.
	switch {
	case l.Op == ">=" && l.Limit > l.Lo, l.Op == "<=" && l.Limit < l.Hi:
		return Line{}, fmt.Errorf("%s: %s %s %s is on the wrong side of its band %v..%v (%s is better, so the limit lies %s)", at, l.Metric, l.Op, m[4], l.Lo, l.Hi, l.Better().Words(), map[string]string{">=": "below it", "<=": "above it"}[l.Op])
	case l.Lo > l.Hi:
		return Line{}, fmt.Errorf("%s: band %v..%v is upside down", at, l.Lo, l.Hi)
	case l.Runs < MinRuns:
		return Line{}, fmt.Errorf("%s: runs=%d: a perf limit needs at least %d runs in fresh worlds", at, l.Runs, MinRuns)
	}
	return l, nil
}

// Format writes f as perf.txt: headers, then the lines grouped by family
// under a comment that gives the family's reason.
func Format(f *File) []byte {
	var b bytes.Buffer
	if f.Stack != "" {
		fmt.Fprintf(&b, "# stack: %s\n", f.Stack)
	}
	fmt.Fprintf(&b, "# scope: %s\n", f.Scope)
	fmt.Fprintf(&b, "# recorded: %s\n", f.Recorded)
	b.WriteString("# Perf baseline (docs/GATING.md, \"The perf gate\"): a gated run's median worse than the limit is a\n")
	b.WriteString("# perf-regression once confirmed. Format: case-id metric op limit unit | band lo..hi runs=K tol=T% family=F\n")
	b.WriteString("# limit = lo·(1−tol) for rates, hi·(1+tol) for times; tol = min(40%, max(family floor, 4 × between-run CV)).\n")
	family := ""
	for _, l := range f.Lines {
		if l.Family != family {
			family = l.Family
			fmt.Fprintf(&b, "\n# %s\n", familyReason(family))
		}
		ins := ""
		if l.Insensitive() {
			ins = " insensitive"
		}
		fmt.Fprintf(&b, "%s %s %s %s %s | band %s..%s runs=%d tol=%s%% family=%s%s\n", l.ID, l.Metric, l.Op, Num(l.Limit), l.Unit,
			Num(l.Lo), Num(l.Hi), l.Runs, strconv.FormatFloat(l.Tol*100, 'f', -1, 64), l.Family, ins)
	}
	return b.Bytes()
}

// num prints a value with 5 significant digits: enough for a limit, and
// short enough to review in a diff.
// Num is a number as perf.txt and the judge's details write it.
func Num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func familyReason(name string) string {
	for _, f := range families {
		if f.Name == name {
			return fmt.Sprintf("%s: floor %.0f%% (%s)", f.Name, f.Floor*100, floorWhy[f.Name])
		}
	}
	return name
}

// floorWhy is each family's floor's evidence, from the committed runs.
var floorWhy = map[string]string{
	CopyOneWay.Name:       "between-run CV ≤ 1.8% (CE), ≤ 3.8% (kernel; one run read 1698 against 1842-1909)",
	CopyHost.Name:         "pinned host memory over the host link moves with the machine: 10.3% under a 3-run band on an H100 PCIe (issue 48), run medians 46.2-50.6 GB/s over 27 H200 runs",
	CopyBoth.Name:         "within-run CV 4-7%: the window spans two processes' issue skew; cannot see 10%",
	AtomicContended.Name:  "between-run CV ≤ 1.6%",
	AtomicHost.Name:       "between-run CV ≤ 4.1% (range 10%)",
	AtomicSpread.Name:     "placement modes: run medians 252k-346k Mops/s across GPUs (range 33%); vmm-host alternates 2540/3665 within a run",
	RoundTripLaunch.Name:  "placement modes: 0.94 or 1.16 us by run (range 23%)",
	RoundTripProcess.Name: "between-run CV 0.04%; floor for a future scheduler change",
	Other.Name:            "no measured noise: a wide default",
}
