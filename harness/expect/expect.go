// Package expect reads and writes expectation folders (the per-stack
// baseline a driver upgrade is gated against) and turns a run's outcomes
// into verdicts, following Mesa deqp-runner's semantics with docs/ARCHITECTURE.md's
// outcome order and verdict names.
//
// A folder expectations/<vendor>-<arch>-<driverline>/ holds:
//
//	fails.txt   case-id,outcome lines grouped under "# reason" comments
//	flakes.txt  one Go regexp per line (matched against the whole id)
//	skips.txt   one Go regexp per line (matched against the whole id)
//	cases.txt   every case id the baseline ran
//	evidence.txt  ids whose baseline pass had strong evidence (a mutant
//	            was killed, docs/LITMUS.md); a pass of one of them with weak
//	            evidence is a regression of the test's power
//
// Any of them may carry a "# stack: vendor=… arch=… driver=…" header. A
// comment block (consecutive "#" lines) is the reason for every entry below
// it up to the next comment block. Blank lines are ignored.
package expect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// File names inside an expectation folder; single files are typed by these
// endings (so "nvidia-sm_90-580-fails.txt" is a fails file).
const (
	FailsFile  = "fails.txt"
	FlakesFile = "flakes.txt"
	SkipsFile  = "skips.txt"
	CasesFile  = "cases.txt"
	// EvidenceFile lists the mutation-scored cases whose baseline pass had
	// strong evidence (report.EvidenceStrong).
	EvidenceFile = "evidence.txt"
)

// idRe is the case id alphabet (docs/ARCHITECTURE.md, Contracts).
var idRe = regexp.MustCompile(`^[a-z0-9._-]+$`)

// Pattern is one line of flakes.txt or skips.txt.
type Pattern struct {
	Re     *regexp.Regexp // anchored: ^(?:line)$
	Text   string         // the line as written
	Reason string         // the comment block above it ("" if none)
	Source string         // file:line
}

// Set is the union of the expectation files loaded.
type Set struct {
	Fails   map[string]report.Outcome // baseline outcome of every case that did not meet its expected
	Reasons map[string]string         // reason comment of each Fails entry
	Flakes  []Pattern
	Skips   []Pattern
	Cases   map[string]bool   // ids the baseline ran
	Strong  map[string]bool   // ids whose baseline pass had strong evidence (evidence.txt)
	Stack   map[string]string // from "# stack:" headers; empty when none
	Sources []string          // files read, in order
	// Perf is the perf baseline the run is judged by, nil when the
	// folders have none; PerfSource is its path. A folder may hold one
	// per card (perf.txt and perf-<card>.txt, PerfFiles): Perf is then
	// perf.txt (else the first loaded) until ChoosePerf picks the one
	// whose scope is the run's GPUs.
	Perf       *perf.File
	PerfSource string
	// PerfFiles is every perf baseline loaded, each of another scope.
	PerfFiles []PerfBaseline
	// Durations is durations.txt: seconds per case id (nil when none).
	Durations map[string]float64
	// AllowNewFlakes is the run's --allow-new-flakes, not a file's: a
	// rerun that meets the baseline is then flake (reported) instead of
	// new-flake (gating).
	AllowNewFlakes bool

	where map[string]string // "fails:"+id / "cases:"+id / "flakes:"+re → file:line of first definition
}

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{
		Fails:   map[string]report.Outcome{},
		Reasons: map[string]string{},
		Cases:   map[string]bool{},
		Strong:  map[string]bool{},
		Stack:   map[string]string{},
		where:   map[string]string{},
	}
}

// Skipped reports whether id matches skips.txt, with that line's reason.
func (s *Set) Skipped(id string) (reason string, ok bool) {
	if s == nil {
		return "", false
	}
	return match(s.Skips, id)
}

// Flaky reports whether id matches flakes.txt, with that line's reason.
func (s *Set) Flaky(id string) (reason string, ok bool) {
	if s == nil {
		return "", false
	}
	return match(s.Flakes, id)
}

func match(ps []Pattern, id string) (string, bool) {
	for _, p := range ps {
		if p.Re.MatchString(id) {
			if p.Reason == "" {
				return p.Text, true
			}
			return p.Reason, true
		}
	}
	return "", false
}

// Baseline is the outcome the baseline recorded for r: its fails.txt entry,
// else the case's own expected outcome.
func (s *Set) Baseline(r report.Result) report.Outcome {
	if s != nil {
		if b, ok := s.Fails[r.ID()]; ok {
			return b
		}
	}
	return r.Expected
}

// FailuresCSV is the suite's failures.csv (deqp-runner's shape, id,outcome
// lines): it reads as a fails.txt, so a run's failures are a baseline.
const FailuresCSV = "failures.csv"

// kindOf types a file by its name's ending (a perf-*.txt by its shape).
func kindOf(name string) string {
	if strings.HasSuffix(name, FailuresCSV) {
		return FailsFile
	}
	if base := filepath.Base(name); strings.HasPrefix(base, "perf-") && strings.HasSuffix(base, ".txt") {
		return PerfFile
	}
	for _, k := range []string{FailsFile, FlakesFile, SkipsFile, CasesFile, EvidenceFile, PerfFile, DurationsFile} {
		if strings.HasSuffix(name, k) {
			return k
		}
	}
	return ""
}

// folderKind types a folder's entry by its exact name: in a folder only
// fails.txt, flakes.txt, skips.txt, cases.txt, evidence.txt, perf.txt,
// perf-<card>.txt (PerfCardFile), durations.txt and failures.csv are read (a single file given by path is
// typed by its ending, kindOf).
func folderKind(name string) string {
	if name == FailuresCSV {
		return FailsFile
	}
	if perfCardRe.MatchString(name) {
		return PerfFile
	}
	if k := kindOf(name); k == name {
		return k
	}
	return ""
}

// checkEntry refuses a folder entry that would be read by a name it only
// ends in, or that is not a regular file (issue 49, the review's notes: a
// stray old-flakes.txt joined the gate, a folder named flakes.txt was
// skipped without a word, and a flakes.txt symlink to /etc/passwd was
// read and passed). The error is one line.
func checkEntry(dir string, e os.DirEntry) error {
	name := e.Name()
	switch {
	case folderKind(name) == "" && kindOf(name) != "":
		return fmt.Errorf("expectations: %s: %s is not an expectation file name (a folder's files are named exactly %s, %s, %s, %s, %s, %s, %s, %s or %s; one that only ends in such a name is never read): rename or move it",
			strconv.Quote(dir), strconv.Quote(name), FailsFile, FlakesFile, SkipsFile, CasesFile, EvidenceFile, PerfFile, PerfCardFile, DurationsFile, FailuresCSV)
	case folderKind(name) != "" && !e.Type().IsRegular():
		what := "not a regular file"
		switch {
		case e.Type()&os.ModeSymlink != 0:
			what = "a symlink (an expectation folder's files are read as they are, never through a link)"
		case e.IsDir():
			what = "a folder"
		}
		return fmt.Errorf("expectations: %s: %s is %s: put the file itself there", strconv.Quote(dir), strconv.Quote(name), what)
	}
	return nil
}

// Load reads expectation folders and single files. A folder contributes
// each of its files named exactly fails.txt, flakes.txt, skips.txt,
// cases.txt, evidence.txt, perf.txt, perf-<card>.txt, durations.txt or failures.csv (at
// least one must exist); an entry that only ends in such a name, or one
// of those names that is not a regular file (a folder, a link), is an
// error. Errors read "file:line: reason".
func Load(paths []string) (*Set, error) {
	s := NewSet()
	if len(paths) == 0 {
		return nil, errors.New("expectations: no path given")
	}
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New("expectations: empty path in list")
		}
		st, err := os.Stat(p)
		if err != nil {
			// The path is the user's: quoted, so a newline or an escape
			// code in it neither splits the line nor drives the terminal.
			var pe *os.PathError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("expectations: %s %s: %w", pe.Op, strconv.Quote(p), pe.Err)
			}
			return nil, fmt.Errorf("expectations: %w", err)
		}
		if !st.IsDir() {
			k := kindOf(filepath.Base(p))
			if k == "" {
				return nil, fmt.Errorf("%s: not an expectation file (name must end in %s, %s, %s, %s or %s)", p, FailsFile, FlakesFile, SkipsFile, CasesFile, EvidenceFile)
			}
			if err := s.loadFile(p, k); err != nil {
				return nil, err
			}
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("expectations: %w", err)
		}
		n := 0
		for _, e := range ents { // ReadDir sorts by name
			if err := checkEntry(p, e); err != nil {
				return nil, err
			}
			k := folderKind(e.Name())
			if k == "" {
				continue
			}
			if err := s.loadFile(filepath.Join(p, e.Name()), k); err != nil {
				return nil, err
			}
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no expectation files (%s, %s, %s, %s) in this folder", p, FailsFile, FlakesFile, SkipsFile, CasesFile)
		}
	}
	return s, nil
}

// LoadList is Load for the flag form "PATH[,PATH]".
func LoadList(list string) (*Set, error) {
	return Load(strings.Split(list, ","))
}

func (s *Set) loadFile(path, kind string) error {
	if kind == PerfFile {
		return s.loadPerf(path)
	}
	if kind == DurationsFile {
		return s.loadDurations(path)
	}
	// A regular file of bounded size only: a FIFO named fails.txt blocked
	// the suite forever.
	b, err := report.ReadRegular(path, 16<<20)
	if err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	s.Sources = append(s.Sources, path)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		reason    []string
		inComment bool
		lineNo    int
	)
	for sc.Scan() {
		lineNo++
		at := fmt.Sprintf("%s:%d", path, lineNo)
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			inComment = false
			continue
		}
		if strings.HasPrefix(line, "#") {
			body := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if rest, ok := cutPrefixFold(body, "stack:"); ok {
				if err := s.addStack(at, rest); err != nil {
					return err
				}
				inComment = false
				continue
			}
			if !inComment {
				reason = reason[:0]
				inComment = true
			}
			if body != "" {
				reason = append(reason, body)
			}
			continue
		}
		inComment = false
		if err := s.addEntry(kind, at, line, strings.Join(reason, " ")); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", path, lineNo+1, err)
	}
	return nil
}

// addEntry adds one entry line of a file of this kind, found at at, under
// the reason comment above it.
func (s *Set) addEntry(kind, at, line, why string) error {
	switch kind {
	case FailsFile:
		return s.addFail(at, line, why)
	case CasesFile, EvidenceFile:
		return s.addID(kind, at, line)
	case FlakesFile, SkipsFile:
		return s.addPattern(kind, at, line, why)
	}
	return nil
}

// addFail adds a fails.txt "case-id,outcome" line.
func (s *Set) addFail(at, line, why string) error {
	id, out, ok := strings.Cut(line, ",")
	if !ok {
		return fmt.Errorf("%s: want \"case-id,outcome\", got %q", at, line)
	}
	id, out = strings.TrimSpace(id), strings.TrimSpace(out)
	if strings.Contains(out, ",") {
		return fmt.Errorf("%s: want \"case-id,outcome\", got %q (too many fields)", at, line)
	}
	if !idRe.MatchString(id) {
		return fmt.Errorf("%s: bad case id %q (want lowercase [a-z0-9._-])", at, id)
	}
	o, err := report.ParseOutcome(out)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if o == report.NotRunOutcome {
		// Judged without running, a case showed nothing a baseline could
		// expect again: record the outcome it was judged from.
		return fmt.Errorf("%s: outcome %s is not a baseline (a case judged without running shows nothing; list the outcome of the case it was judged from)", at, o)
	}
	if prev, dup := s.where["fails:"+id]; dup {
		return fmt.Errorf("%s: duplicate case %s (first at %s)", at, id, prev)
	}
	s.where["fails:"+id] = at
	s.Fails[id] = o
	if why != "" {
		s.Reasons[id] = why
	}
	return nil
}

// addID adds a case id of cases.txt or the strong-evidence file.
func (s *Set) addID(kind, at, id string) error {
	if !idRe.MatchString(id) {
		return fmt.Errorf("%s: bad case id %q (want lowercase [a-z0-9._-])", at, id)
	}
	if prev, dup := s.where[kind+":"+id]; dup {
		return fmt.Errorf("%s: duplicate case %s (first at %s)", at, id, prev)
	}
	s.where[kind+":"+id] = at
	if kind == CasesFile {
		s.Cases[id] = true
	} else {
		s.Strong[id] = true
	}
	return nil
}

// addPattern adds a flakes.txt or skips.txt pattern, anchored to the
// whole id.
func (s *Set) addPattern(kind, at, line, why string) error {
	re, err := regexp.Compile(`^(?:` + line + `)$`)
	if err != nil {
		return fmt.Errorf("%s: bad regexp %q: %v", at, line, unwrapRegexp(err))
	}
	key := kind + ":" + line
	if prev, dup := s.where[key]; dup {
		return fmt.Errorf("%s: duplicate pattern %q (first at %s)", at, line, prev)
	}
	s.where[key] = at
	p := Pattern{Re: re, Text: line, Reason: why, Source: at}
	if kind == FlakesFile {
		s.Flakes = append(s.Flakes, p)
	} else {
		s.Skips = append(s.Skips, p)
	}
	return nil
}

func unwrapRegexp(err error) string {
	var re *syntax.Error
	if errors.As(err, &re) {
		return string(re.Code)
	}
	return err.Error()
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return "", false
}

// ParseStack parses "vendor=nvidia arch=sm_90 driver=580".
func ParseStack(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("stack header: want key=value, got %q", f)
		}
		k = strings.ToLower(k)
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("stack header: %s given twice", k)
		}
		m[k] = v
	}
	if len(m) == 0 {
		return nil, errors.New("stack header: empty")
	}
	return m, nil
}

func (s *Set) addStack(at, text string) error {
	m, err := ParseStack(text)
	if err != nil {
		return fmt.Errorf("%s: %v", at, err)
	}
	for k, v := range m {
		if old, ok := s.Stack[k]; ok && old != v {
			return fmt.Errorf("%s: stack %s=%s disagrees with %s=%s (at %s)", at, k, v, k, old, s.where["stack:"+k])
		}
		s.Stack[k] = v
		if _, ok := s.where["stack:"+k]; !ok {
			s.where["stack:"+k] = at
		}
	}
	return nil
}

// FormatStack renders a stack as the header's key=value list, vendor, arch
// and driver first.
func FormatStack(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case "vendor":
			return 0
		case "arch":
			return 1
		case "driver":
			return 2
		}
		return 3
	}
	sort.Slice(keys, func(i, j int) bool {
		if rank(keys[i]) != rank(keys[j]) {
			return rank(keys[i]) < rank(keys[j])
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}
